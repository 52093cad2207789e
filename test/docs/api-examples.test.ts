/**
 * The examples of docs/api.md, run against a real server so they cannot drift
 * from it. The convention (which examples are checked, how tokens, times and
 * other changing values are matched) is written at the top of docs/api.md,
 * "How the examples are checked"; this file implements exactly that.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { PithosServer, ROOT } from '../helpers/server.js';

const DOC = path.join(ROOT, 'docs', 'api.md');
const PORT = '2668';

// ---------------------------------------------------------------- parsing the page

export interface Example {
  line: number;
  command: string;
  /** The answer as shown (without the `# HTTP` line). */
  shown: string;
  status: number | undefined;
  setup: boolean;
}

export interface Parsed {
  examples: Example[];
  skipped: Array<{ line: number; reason: string }>;
}

/** Splits a shell command line into words: single and double quotes, backslash escapes; `$` expansions are refused. */
export function words(cmd: string): string[] {
  const out: string[] = [];
  let cur = '';
  let inWord = false;
  for (let i = 0; i < cmd.length; i++) {
    const c = cmd[i];
    if (c === "'") {
      const j = cmd.indexOf("'", i + 1);
      if (j < 0) throw new Error(`unterminated ' in: ${cmd}`);
      cur += cmd.slice(i + 1, j);
      i = j;
      inWord = true;
    } else if (c === '"') {
      let j = i + 1;
      for (; j < cmd.length && cmd[j] !== '"'; j++) {
        if (cmd[j] === '$' || cmd[j] === '`') throw new Error(`shell expansion is not supported in checked examples: ${cmd}`);
        if (cmd[j] === '\\') j++;
        cur += cmd[j];
      }
      if (j >= cmd.length) throw new Error(`unterminated " in: ${cmd}`);
      i = j;
      inWord = true;
    } else if (c === '\\') {
      cur += cmd[++i] ?? '';
      inWord = true;
    } else if (c === ' ' || c === '\t') {
      if (inWord) out.push(cur);
      cur = '';
      inWord = false;
    } else {
      if (c === '$' || c === '`' || c === '|' || c === ';' || c === '&' || c === '>' || c === '<') {
        throw new Error(`shell syntax '${c}' is not supported in checked examples: ${cmd}`);
      }
      cur += c;
      inWord = true;
    }
  }
  if (inWord) out.push(cur);
  return out;
}

export function parseDoc(text: string): Parsed {
  const lines = text.split('\n');
  const examples: Example[] = [];
  const skipped: Parsed['skipped'] = [];
  let skipNext: string | undefined;
  for (let i = 0; i < lines.length; i++) {
    const l = lines[i];
    const skip = /^<!-- not checked: (.+?) -->$/.exec(l);
    if (skip !== null) {
      skipNext = skip[1];
      continue;
    }
    if (l.startsWith('<!-- setup:')) {
      // Hidden requests: one `curl …` per line until `-->`.
      for (i++; i < lines.length && lines[i].trim() !== '-->'; i++) {
        const t = lines[i].trim();
        if (t.length > 0) examples.push({ line: i + 1, command: t, shown: '', status: undefined, setup: true });
      }
      continue;
    }
    if (!l.startsWith('```')) continue;
    const lang = l.slice(3).trim();
    const start = i;
    let end = i + 1;
    while (end < lines.length && !lines[end].startsWith('```')) end++;
    const body = lines.slice(start + 1, end);
    i = end;
    if (lang !== 'console') {
      skipNext = undefined;
      continue;
    }
    if (skipNext !== undefined) {
      skipped.push({ line: start + 1, reason: skipNext });
      skipNext = undefined;
      continue;
    }
    for (let k = 0; k < body.length; k++) {
      if (!body[k].startsWith('$ ')) continue;
      const command = body[k].slice(2);
      const out: string[] = [];
      let j = k + 1;
      for (; j < body.length && !body[j].startsWith('$ '); j++) out.push(body[j]);
      while (out.length > 0 && out[out.length - 1] === '') out.pop();
      let status: number | undefined;
      const last = out[out.length - 1];
      const m = last === undefined ? null : /^# HTTP (\d{3})$/.exec(last);
      if (m !== null) {
        status = Number(m[1]);
        out.pop();
      }
      examples.push({ line: start + 2 + k, command, shown: out.join('\n'), status, setup: false });
      k = j - 1;
    }
  }
  return { examples, skipped };
}

interface Curl {
  method: string;
  path: string;
  port: string;
  headers: Array<[string, string]>;
  data: string | undefined;
  include: boolean;
}

export function parseCurl(cmd: string): Curl {
  const w = words(cmd);
  if (w[0] !== 'curl') throw new Error(`not a curl command: ${cmd}`);
  const c: Curl = { method: '', path: '', port: '', headers: [], data: undefined, include: false };
  for (let i = 1; i < w.length; i++) {
    const a = w[i];
    if (a === '-s') continue;
    if (a === '-i' || a === '-si') {
      c.include = true;
    } else if (a === '--path-as-is') {
      // node:http sends the path as given anyway
    } else if (a === '-X') {
      c.method = w[++i];
    } else if (a === '-H') {
      const h = w[++i];
      const colon = h.indexOf(':');
      c.headers.push([h.slice(0, colon), h.slice(colon + 1).trim()]);
    } else if (a === '-d') {
      c.data = w[++i];
    } else if (/^(http:\/\/)?localhost:\d+/.test(a)) {
      const m = /^(?:http:\/\/)?localhost:(\d+)(\/.*)?$/.exec(a)!;
      c.port = m[1];
      c.path = m[2] ?? '/';
    } else {
      throw new Error(`curl option '${a}' is not supported by the example checker: ${cmd}`);
    }
  }
  if (c.port === '') throw new Error(`no localhost URL in: ${cmd}`);
  // curl: -d without -X is a POST, sent as a form
  if (c.method === '') c.method = c.data === undefined ? 'GET' : 'POST';
  return c;
}

// ---------------------------------------------------------------- files named by -d @file

const FILES: Record<string, () => Buffer> = {
  // 65 levels: the outer object, the record, and 63 arrays
  'deep65.json': () => Buffer.from(`{"record":{"a":${'['.repeat(63)}${']'.repeat(63)}}}`),
  // a 17,000,025-byte record
  'big.json': () => Buffer.from(`{"record":{"b":"${'x'.repeat(17_000_025 - 19)}"}}`),
};

// ---------------------------------------------------------------- matching

/** Values that differ from run to run; see docs/api.md, "How the examples are checked". */
const DYNAMIC: Array<{ re: RegExp; kind: 'bind' | 'fence' | 'version' | 'any' }> = [
  { re: /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, kind: 'bind' },
  { re: /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/g, kind: 'bind' },
  { re: /(?<="fence":)\d+/g, kind: 'fence' },
  // Versions: the ETag, the current version a 412 or a failed check names, and the version a
  // check asked for, echoed back. ("expected version N" echoes the request as sent: literal.)
  { re: /(?<=^ETag: ")\d+(?="$)/gm, kind: 'version' },
  { re: /(?<=changed \(version )\d+(?=\))/g, kind: 'version' },
  { re: /(?<=already exists \(version )\d+(?=\))/g, kind: 'version' },
  { re: /(?<=has version )\d+/g, kind: 'version' },
  { re: /(?<=has version \d+, not )\d+/g, kind: 'version' },
  { re: /(?<="expires_in_ms":)\d+/g, kind: 'any' },
  // The time left of a listed name ("ttl_ms": null, no expiry, stays literal).
  { re: /(?<="ttl_ms":)\d+/g, kind: 'any' },
  { re: /(?<="(?:disk_free|disk_used|disk_total|mem_free|mem_total|space_total)":")\d+\.\d\dGB/g, kind: 'any' },
  { re: /(?<="disk_percent":")\d+\.\d\d%/g, kind: 'any' },
  { re: /(?<="space_bytes":)\d+/g, kind: 'any' },
  { re: /(?<="gc_state":)[012]/g, kind: 'any' },
  { re: /(?<=^Date: ).*$/gm, kind: 'any' },
];

/** A pattern for any value of the same shape: hex digits stay hex digits, the rest stays as it is. */
function shapeOf(text: string): string {
  return text
    .replace(/[0-9a-f]/g, '\u0000')
    .replace(/[.]/g, '\\.')
    .replace(/\u0000/g, '[0-9a-f]');
}

export class Matcher {
  /** shown value → actual value, for tokens and times: equal shown values must be equal actual ones. */
  readonly bound = new Map<string, string>();
  /** shown fence → actual fence; the order of shown fences must hold between actual ones. */
  readonly fences = new Map<number, number>();

  /** shown version → actual version (docs/api.md: ordered like fences, and sent back as given). */
  readonly versions = new Map<number, number>();

  /**
   * Replaces bound values in a command, so a later request uses the token an earlier answer
   * gave; a version shown earlier is sent as the server's real one where a request names a
   * version (If-Match, if_version, a check's version, since=). A version never shown is sent as is.
   */
  substitute(cmd: string): string {
    let out = cmd;
    for (const [shown, actual] of this.bound) out = out.split(shown).join(actual);
    const v = (n: string): string => String(this.versions.get(Number(n)) ?? n);
    return out.replace(/(If-Match: "|"if_version":|"version":|[?&]since=)(\d+)/g, (_all, pre: string, n: string) => pre + v(n));
  }

  /** Throws unless `actual` is `shown` with its dynamic values replaced; records the bindings. */
  match(shown: string, actual: string, where: string): void {
    // Collect the dynamic spans of the shown text, in order.
    const spans: Array<{ start: number; end: number; kind: string; text: string }> = [];
    for (const d of DYNAMIC) {
      for (const m of shown.matchAll(d.re)) {
        const start = m.index ?? 0;
        if (spans.some((s) => start < s.end && start + m[0].length > s.start)) continue;
        spans.push({ start, end: start + m[0].length, kind: d.kind, text: m[0] });
      }
    }
    spans.sort((a, b) => a.start - b.start);
    let re = '^';
    let pos = 0;
    for (const s of spans) {
      re += escape(shown.slice(pos, s.start));
      re += s.kind === 'fence' || s.kind === 'version' ? '(\\d+)' : s.kind === 'bind' ? `(${shapeOf(s.text)})` : `(${anyPattern(s.text)})`;
      pos = s.end;
    }
    re += escape(shown.slice(pos)) + '$';
    const m = new RegExp(re).exec(actual);
    if (m === null) {
      throw new assert.AssertionError({ message: `${where}: the answer differs from the page`, expected: shown, actual, operator: 'match' });
    }
    spans.forEach((s, i) => {
      const got = m[i + 1];
      if (s.kind === 'bind') {
        const prev = this.bound.get(s.text);
        if (prev !== undefined && prev !== got) {
          throw new Error(`${where}: ${s.text} stood for ${prev} earlier on the page, now for ${got}`);
        }
        this.bound.set(s.text, got);
      } else if (s.kind === 'fence' || s.kind === 'version') {
        const what = s.kind === 'fence' ? 'fence' : 'version';
        const seen = s.kind === 'fence' ? this.fences : this.versions;
        const shownN = Number(s.text);
        const gotN = Number(got);
        const prev = seen.get(shownN);
        if (prev !== undefined && prev !== gotN) throw new Error(`${where}: ${what} ${shownN} was ${prev} earlier on the page, now ${gotN}`);
        for (const [sh, ac] of seen) {
          if (Math.sign(sh - shownN) !== Math.sign(ac - gotN)) {
            throw new Error(`${where}: ${what}s ${sh} and ${shownN} on the page are ${ac} and ${gotN} here: not in the same order`);
          }
        }
        seen.set(shownN, gotN);
      }
    });
  }
}

function anyPattern(text: string): string {
  if (/^[012]$/.test(text)) return '[012]';
  if (/^\d+$/.test(text)) return '\\d+';
  if (/GB$/.test(text)) return '\\d+\\.\\d\\dGB';
  if (/%$/.test(text)) return '\\d+\\.\\d\\d%';
  return '.*';
}

function escape(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * The answer to a `curl -i` example as the page shows it: the status line, only the headers the
 * page shows (in the server's order), then the body. A page that separates head and body with
 * a blank line keeps it; one that leaves headers out shows the body right after them.
 */
export function withShownHeaders(shown: string, head: string, body: string): string {
  const blank = shown.indexOf('\n\n');
  const shownHead = (blank >= 0 ? shown.slice(0, blank) : shown).split('\n');
  const names = new Set<string>();
  for (const line of shownHead.slice(1)) {
    const m = /^([A-Za-z][A-Za-z0-9-]*): /.exec(line);
    if (m === null) break;
    names.add(m[1].toLowerCase());
  }
  const [status, ...headers] = head.split('\n');
  const kept = headers.filter((h) => names.has(h.slice(0, h.indexOf(':')).toLowerCase()));
  return [status, ...kept].join('\n') + (blank >= 0 ? '\n\n' : '\n') + body;
}

// ---------------------------------------------------------------- running

/** Keep-alive, as curl's HTTP/1.1 is: the server's Connection/Keep-Alive headers are then the ones curl sees. */
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });

function send(port: number, c: Curl): Promise<{ status: number; head: string; body: string }> {
  return new Promise((resolve, reject) => {
    let payload: Buffer | undefined;
    if (c.data !== undefined) {
      if (c.data.startsWith('@')) {
        const make = FILES[c.data.slice(1)];
        if (make === undefined) throw new Error(`file ${c.data.slice(1)} is unknown to the example checker (add it to FILES, or mark the block not checked)`);
        payload = make();
      } else {
        payload = Buffer.from(c.data, 'utf8');
      }
    }
    const headers: Record<string, string> = { 'User-Agent': 'curl/8', Accept: '*/*' };
    const chunked = c.headers.some(([k, v]) => k.toLowerCase() === 'transfer-encoding' && v === 'chunked');
    if (payload !== undefined) {
      headers['Content-Type'] = 'application/x-www-form-urlencoded';
      if (!chunked) headers['Content-Length'] = String(payload.length);
    }
    for (const [k, v] of c.headers) headers[k] = v;
    const req = http.request({ host: '127.0.0.1', port, method: c.method, path: c.path, headers, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (d: Buffer) => chunks.push(d));
      res.on('error', reject);
      res.on('end', () => {
        const raw = res.rawHeaders;
        const lines = [`HTTP/1.1 ${res.statusCode} ${res.statusMessage}`];
        for (let i = 0; i < raw.length; i += 2) lines.push(`${raw[i]}: ${raw[i + 1]}`);
        resolve({ status: res.statusCode ?? 0, head: lines.join('\n'), body: Buffer.concat(chunks).toString('utf8') });
      });
    });
    req.on('error', reject);
    req.end(payload);
  });
}

let srv: PithosServer;
const parsed = parseDoc(readFileSync(DOC, 'utf8'));

before(async () => {
  // As the page says it was run: test clock on, token SECRET, an empty data directory.
  srv = await PithosServer.start({ token: 'SECRET' });
});
after(async () => {
  agent.destroy();
  await srv?.close();
});

test('the checker parses, matches and refuses as the convention says', () => {
  assert.deepEqual(words(`curl -s -H 'Auth-Token: SECRET' -d '{"a":"b c"}' "x\\"y"`), ['curl', '-s', '-H', 'Auth-Token: SECRET', '-d', '{"a":"b c"}', 'x"y']);
  assert.throws(() => words(`curl -H "X: $(head -c 1 /dev/zero)"`), /not supported/);
  assert.throws(() => parseCurl('curl -s --compressed localhost:2668/x'), /not supported/);
  const c = parseCurl(`curl -s -H 'Auth-Token: SECRET' localhost:2668/tables/t/rows -d '{}'`);
  assert.deepEqual([c.method, c.path, c.port], ['POST', '/tables/t/rows', '2668']);
  const m = new Matcher();
  const tok = '9339baa5-03d1-4e72-b80c-8f6b2a08447e';
  m.match(`{"token":"${tok}","fence":45}`, '{"token":"0a0b0c0d-0000-4000-8000-000000000001","fence":7}', 't');
  assert.equal(m.substitute(`-d '{"token":"${tok}"}'`), `-d '{"token":"0a0b0c0d-0000-4000-8000-000000000001"}'`);
  assert.throws(() => m.match(`{"token":"${tok}"}`, '{"token":"0a0b0c0d-0000-4000-8000-000000000002"}', 't'), /stood for/);
  assert.throws(() => m.match('{"fence":49}', '{"fence":3}', 't'), /same order/);
  assert.throws(() => m.match('{"variant":6}', '{"variant":47}', 't'), /differs/);
  assert.throws(() => m.match('{"variant":3.0}', '{"variant":3}', 't'), /differs/);
  m.match('{"expires_in_ms":29928}', '{"expires_in_ms":29999}', 't');
  m.match('{"ttl_ms":59588}', '{"ttl_ms":59990}', 't');
  assert.throws(() => m.match('{"ttl_ms":null}', '{"ttl_ms":59990}', 't'), /differs/);
  m.match('ETag: "1"', 'ETag: "61"', 't');
  m.match(`record 'c' changed (version 2)`, `record 'c' changed (version 64)`, 't');
  assert.throws(() => m.match('ETag: "3"', 'ETag: "60"', 't'), /same order/);
  assert.equal(
    m.substitute(`-H 'If-Match: "1"' -d '{"if_version":2,"x":1}' /watch?since=2`),
    `-H 'If-Match: "61"' -d '{"if_version":64,"x":1}' /watch?since=64`,
  );
  assert.equal(m.substitute(`-d '{"if_version":9}'`), `-d '{"if_version":9}'`, 'a version never shown is sent as is');
  assert.equal(
    withShownHeaders('HTTP/1.1 200 OK\nETag: "1"\n{"a":1}', 'HTTP/1.1 200 OK\nContent-Length: 7\nETag: "5"', '{"a":1}'),
    'HTTP/1.1 200 OK\nETag: "5"\n{"a":1}',
  );
  assert.equal(withShownHeaders('HTTP/1.1 200 OK\nA: 1\n\n{}', 'HTTP/1.1 200 OK\nA: 1\nB: 2', '{}'), 'HTTP/1.1 200 OK\nA: 1\n\n{}');
  const p = parseDoc(
    [
      '```console',
      '$ curl -s localhost:2668/a',
      '{"x":1}',
      '# HTTP 200',
      '',
      '$ curl -s localhost:2668/b',
      '```',
      '<!-- not checked: why -->',
      '```console',
      '$ curl x',
      '```',
    ].join('\n'),
  );
  assert.equal(p.examples.length, 2);
  assert.deepEqual([p.examples[0].shown, p.examples[0].status, p.examples[1].status], ['{"x":1}', 200, undefined]);
  assert.deepEqual(p.skipped, [{ line: 9, reason: 'why' }]);
});

test('docs/api.md: every checked example answers exactly as the page shows', async () => {
  assert.ok(parsed.examples.filter((e) => !e.setup).length >= 100, `only ${parsed.examples.length} examples found`);
  const m = new Matcher();
  let checked = 0;
  const failures: string[] = [];
  for (const ex of parsed.examples) {
    const where = `docs/api.md:${ex.line}`;
    const c = parseCurl(m.substitute(ex.command));
    if (c.port !== PORT) continue; // another server (the page says which); not checked
    const r = await send(srv.port, c);
    if (ex.setup) {
      if (r.status >= 300) failures.push(`${where}: setup request answered ${r.status} ${r.body}`);
      continue;
    }
    checked++;
    try {
      if (c.include) {
        m.match(ex.shown, withShownHeaders(ex.shown, r.head, r.body), where);
      } else {
        assert.equal(ex.status, r.status, `${where}: ${ex.command}\nthe page says HTTP ${ex.status}, the server answered ${r.status} ${r.body}`);
        m.match(ex.shown, r.body, where);
      }
    } catch (err) {
      failures.push(
        `${ex.command}\n${(err as Error).message}\n  page:   ${ex.shown}\n  server: ${c.include ? r.head + '\n\n' : ''}${r.body}` +
          (c.include ? '' : ` (HTTP ${r.status})`),
      );
    }
  }
  assert.deepEqual(failures, [], `${failures.length} of ${checked} examples differ from the server:\n\n${failures.join('\n\n')}`);
  assert.ok(checked >= 100, `only ${checked} examples checked`);
});
