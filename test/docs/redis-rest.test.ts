/**
 * The examples of docs/redis-rest.md, run against a real server so they cannot
 * drift from it: every `sh` block that starts with `curl` is sent as curl
 * would send it (`$TOKEN` is the server's token, the address the server's) and
 * its answer must equal the `json` block after it; the `js` block is run with
 * @upstash/redis and what its comments promise is checked.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, test } from 'node:test';
import { PithosServer, ROOT } from '../helpers/server.js';

const DOC = readFileSync(path.join(ROOT, 'docs', 'redis-rest.md'), 'utf8');
const ADDRESS = 'http://127.0.0.1:2668';

let srv: PithosServer;
before(async () => {
  srv = await PithosServer.start();
});
after(async () => {
  await srv?.close();
});

/** Shell words: single quotes verbatim, double quotes with `$TOKEN` already replaced. */
function words(cmd: string): string[] {
  const out: string[] = [];
  let cur = '';
  let inWord = false;
  for (let i = 0; i < cmd.length; i++) {
    const c = cmd[i]!;
    if (c === "'" || c === '"') {
      const end = cmd.indexOf(c, i + 1);
      assert.ok(end > i, `unbalanced quote in ${cmd}`);
      cur += cmd.slice(i + 1, end);
      i = end;
      inWord = true;
    } else if (c === ' ') {
      if (inWord) out.push(cur);
      cur = '';
      inWord = false;
    } else {
      cur += c;
      inWord = true;
    }
  }
  if (inWord) out.push(cur);
  return out;
}

/** Sends what `curl -s [-X M] URL [-H h]… [-d body]` sends. */
async function curl(cmd: string): Promise<string> {
  const w = words(cmd.replaceAll('$TOKEN', srv.token).replaceAll(ADDRESS, srv.base));
  assert.equal(w.shift(), 'curl');
  let method: string | undefined;
  let url = '';
  let body: string | undefined;
  const headers: Record<string, string> = {};
  while (w.length > 0) {
    const a = w.shift()!;
    if (a === '-s') continue;
    else if (a === '-X') method = w.shift();
    else if (a === '-H') {
      const h = w.shift()!;
      headers[h.slice(0, h.indexOf(':'))] = h.slice(h.indexOf(':') + 1).trim();
    } else if (a === '-d') {
      body = w.shift();
      // curl -d sends a form content type unless told otherwise.
      headers['Content-Type'] ??= 'application/x-www-form-urlencoded';
    } else url = a;
  }
  const r = await fetch(url, { method: method ?? (body === undefined ? 'GET' : 'POST'), headers, body });
  return r.text();
}

const EXAMPLE = /```sh\n(curl [^\n]+)\n```\n\n```json\n([^\n]+)\n```/g;

test('every curl example answers what the page shows', async () => {
  const examples = [...DOC.matchAll(EXAMPLE)];
  // One per form at least: the JSON array, the path form (GET and POST), the pipeline, the block, a refusal.
  assert.ok(examples.length >= 7, `found ${examples.length} examples`);
  for (const form of ['/redis -H', '/redis/get/', '-X POST', '/redis/pipeline', '/redis/multi-exec']) {
    assert.ok(
      examples.some((e) => e[1]!.includes(form)),
      form,
    );
  }
  for (const [, cmd, shown] of examples) assert.deepEqual(JSON.parse(await curl(cmd!)), JSON.parse(shown!), cmd);
});

test('the @upstash/redis snippet runs and does what its comments say', () => {
  const m = /```js\n([\s\S]*?)```/.exec(DOC);
  assert.ok(m, 'the page has a js block');
  const code = m[1]!.replace(`url: '${ADDRESS}/redis'`, `url: '${srv.base}/redis'`);
  assert.notEqual(code, m[1], 'the snippet names the address');
  // Beside the test, so that @upstash/redis resolves from the repository's node_modules.
  const file = path.join(path.dirname(fileURLToPath(import.meta.url)), 'redis-rest-snippet.mjs');
  writeFileSync(file, `${code}\nconsole.log(JSON.stringify({ user, n, a, b, ok, count }));\n`);
  try {
    const r = spawnSync(process.execPath, [file], { env: { ...process.env, TOKEN: srv.token }, encoding: 'utf8', timeout: 60_000 });
    assert.equal(r.status, 0, r.stderr);
    const out = JSON.parse(r.stdout.trim().split('\n').pop()!) as Record<string, unknown>;
    assert.deepEqual(out, { user: { name: 'Ada', langs: ['en', 'fr'] }, n: 1, a: 2, b: { name: 'Ada', langs: ['en', 'fr'] }, ok: 'OK', count: 3 });
  } finally {
    rmSync(file, { force: true });
  }
});
