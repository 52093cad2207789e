/**
 * `pithos <command>`: the command-line client, built on the typed client in client/.
 * bin/pithos sends every command named in COMMANDS here; everything else (`serve`,
 * `repair`, bare `pithos`, server flags) still starts the server.
 *
 * Exit codes: 0 ok, 1 the server refused or the object does not exist (any error
 * answer, or no answer at all), 2 usage (bad arguments, unreadable JSON argument).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Answer, type Kind, KINDS, Pithos, PithosError } from '../../client/index.js';
import { call, type Ctx, type Io, msg, readJsonArg, readObjectArg, writeOpts } from './context.js';
import { flag, has, intFlag, isClientLine, kindOf, onlyFlags, parse, type Parsed, positionals, UsageError } from './args.js';
import { cmdBackup, restore } from './backup.js';
import {
  cmdAdd,
  cmdCombine,
  cmdPop,
  cmdPush,
  cmdRemove,
  COLLECTIONS,
  getCollection,
  isCollection,
  patchCollection,
  putCollection,
  zincr,
} from './collections.js';
import { HELP, OVERVIEW } from './help.js';
import { cut, grid, JSON_NUMBER, show, type Shown, showVariant, withNumber } from './show.js';

export { grid, isClientLine };
export type { Ctx, Io } from './context.js';

// prettier-ignore
export const COMMANDS: ReadonlySet<string> = new Set([
  'get', 'put', 'del', 'incr', 'query', 'insert', 'patch', 'lock', 'unlock', 'txn', 'ls', 'watch', 'health', 'backup', 'restore', 'help', 'version',
  'push', 'pop', 'append', 'add', 'remove', 'combine',
]);

export function version(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 5; i++) {
    const f = path.join(dir, 'package.json');
    if (fs.existsSync(f)) return (JSON.parse(fs.readFileSync(f, 'utf8')) as { version: string }).version;
    dir = path.dirname(dir);
  }
  return 'unknown';
}

// ---------------------------------------------------------------------------------------
// Commands

/** The body field of a write whose only option is its condition (`--if-version`): a row write, a delete of a list, set or sorted set. */
function rowCondition(p: Parsed): Record<string, unknown> {
  const v = intFlag(p, 'if-version');
  return v === undefined ? {} : { if_version: v };
}

async function cmdGet(c: Ctx): Promise<void> {
  const { p } = c;
  if (p.pos[0] === 'row') {
    onlyFlags(p, 'get row', []);
    const [, table, id] = positionals(p, 'get row', 3, 3);
    await call(c, 'getRow', [table!, id!], {}, (a) => JSON.stringify(a.data, null, 2) + (a.version !== undefined ? `\n(version ${a.version})` : ''));
    return;
  }
  const [kw, name] = positionals(p, 'get', 2, 2);
  const kind = kindOf(kw, 'get', KINDS);
  if (isCollection(kind)) return getCollection(c, kind, name!);
  switch (kind) {
    case 'table':
      onlyFlags(p, 'get table', ['limit', 'after']);
      await call<Record<string, Record<string, unknown>>>(
        c,
        'getTable',
        [name!],
        { query: { limit: intFlag(p, 'limit', 1), after: intFlag(p, 'after') } },
        (a) => grid(Object.entries(a.data).map(([id, row]) => ({ id, row }))),
      );
      return;
    case 'record': {
      onlyFlags(p, 'get record', ['column']);
      const column = flag(p, 'column');
      if (column !== undefined) {
        await call<unknown[]>(c, 'searchRecord', [name!], { body: { column } }, (a) =>
          a.data.length ? show(a.data[0]) : { out: '', note: '(no such field)' },
        );
      } else {
        await call(c, 'getRecord', [name!], {}, (a) => {
          const out = JSON.stringify(a.data, null, 2);
          return a.version === undefined ? out : { out, note: `(version ${a.version})` };
        });
      }
      return;
    }
    case 'variant':
      onlyFlags(p, 'get variant', []);
      await call<{ variant: unknown }>(c, 'getVariant', [name!], {}, showVariant);
      return;
    case 'lock':
      onlyFlags(p, 'get lock', []);
      await call<{ holder: string | null; fence: number; expires_in_ms: number; ttl: number; acquired_at: string }>(c, 'getLock', [name!], {}, (a) => {
        const d = a.data;
        return `held by ${d.holder ?? '(no holder name)'}, fence ${d.fence}, expires in ${(d.expires_in_ms / 1000).toFixed(1)} s (lease ${d.ttl} s, acquired ${d.acquired_at})`;
      });
  }
}

/** The kinds `put` and `del` take: all but locks, which `lock` and `unlock` acquire and release. */
type PutKind = Exclude<Kind, 'lock'>;
const PUT_KINDS: readonly PutKind[] = KINDS.filter((k): k is PutKind => k !== 'lock');

async function cmdPut(c: Ctx): Promise<void> {
  const { p } = c;
  if (p.pos[0] === 'row') {
    onlyFlags(p, 'put row', ['if-version']);
    const [, table, id, value] = positionals(p, 'put row', 4, 4);
    const rows = await readObjectArg(value, 'the row', c.io);
    await call(c, 'replaceRow', [table!, id!], { body: { rows, ...rowCondition(p) } }, msg);
    return;
  }
  const kind = kindOf(p.pos[0], 'put', PUT_KINDS);
  if (isCollection(kind)) return putCollection(c, kind);
  switch (kind) {
    case 'table': {
      onlyFlags(p, 'put table', ['ttl']);
      const [, name] = positionals(p, 'put table', 2, 2);
      await call(c, 'createTable', [name!], { body: writeOpts(p) }, msg);
      return;
    }
    case 'record': {
      onlyFlags(p, 'put record', ['ttl', 'if-version', 'if-absent']);
      const [, id, value] = positionals(p, 'put record', 3, 3);
      const record = await readObjectArg(value, 'the record', c.io);
      await call(c, 'putRecord', [id!], { body: { record, ...writeOpts(p) } }, (a) => (a.status === 201 ? 'created' : 'replaced'));
      return;
    }
    case 'variant': {
      onlyFlags(p, 'put variant', ['ttl', 'if-version', 'if-absent', 'string']);
      const [, name, raw] = positionals(p, 'put variant', 3, 3);
      let variant: unknown = raw;
      if (!has(p, 'string')) {
        try {
          variant = JSON.parse(raw!);
        } catch {
          variant = raw; // not JSON: a string
        }
      }
      // A number goes as written: `3.0` makes a double, `3` an integer (docs/api.md, "Variants").
      const body =
        typeof variant === 'number' && JSON_NUMBER.test(raw!.trim()) ? withNumber('variant', raw!.trim(), writeOpts(p)) : { variant, ...writeOpts(p) };
      await call<{ variant: unknown }>(c, 'putVariant', [name!], { body }, showVariant);
    }
  }
}

async function cmdDel(c: Ctx): Promise<void> {
  const { p } = c;
  if (p.pos[0] === 'rows') {
    onlyFlags(p, 'del rows', []);
    const [, table, w] = positionals(p, 'del rows', 3, 3);
    const wheres = await readObjectArg(w, 'wheres', c.io);
    await call(c, 'deleteRows', [table!], { body: { wheres } }, msg);
    return;
  }
  if (p.pos[0] === 'row') {
    onlyFlags(p, 'del row', ['if-version']);
    const [, table, id] = positionals(p, 'del row', 3, 3);
    await call(c, 'deleteRow', [table!, id!], { body: rowCondition(p) }, msg);
    return;
  }
  const kind = kindOf(p.pos[0], 'del', PUT_KINDS);
  // A list, set or sorted set takes a condition on its delete (docs/api.md); the other kinds' deletes take none.
  onlyFlags(p, `del ${kind}`, isCollection(kind) ? ['if-version'] : []);
  const [, name] = positionals(p, 'del', 2, 2);
  const ops = {
    table: 'dropTable',
    record: 'deleteRecord',
    variant: 'deleteVariant',
    list: 'deleteList',
    set: 'deleteSet',
    zset: 'deleteZset',
  } as const satisfies Record<PutKind, string>;
  const op = ops[kind];
  const condition = rowCondition(p);
  await call(c, op, [name!], condition.if_version === undefined ? {} : { body: condition }, msg);
}

async function cmdIncr(c: Ctx): Promise<void> {
  const { p } = c;
  if (has(p, 'zset')) return zincr(c);
  onlyFlags(p, 'incr', []);
  const [name, d] = positionals(p, 'incr', 1, 2);
  if (d !== undefined && !JSON_NUMBER.test(d.trim())) throw new UsageError(`incr: delta must be a number (as JSON writes it: 5, -2, 0.5), got '${d}'`);
  // As written: `1.0` is a double delta, which an integer variant refuses, as over HTTP.
  await call<{ variant: unknown }>(c, 'incr', [name!], { body: withNumber('delta', d === undefined ? '1' : d.trim(), {}) }, showVariant);
}

async function cmdAppend(c: Ctx): Promise<void> {
  const { p } = c;
  onlyFlags(p, 'append', ['if-version']);
  const [name, text] = positionals(p, 'append', 2, 2);
  const body: Record<string, unknown> = { append: text, ...writeOpts(p) };
  await call<{ length: number }>(c, 'append', [name!], { body }, (a) => String(a.data.length));
}

function parseOrder(s: string): { field: string; dir: 'asc' | 'desc' }[] {
  return s
    .split(',')
    .filter(Boolean)
    .map((part) => {
      const m = /^(.+?)(?::(asc|desc))?$/.exec(part.trim());
      if (!m) throw new UsageError(`--order: bad term '${part}'`);
      return { field: m[1]!, dir: (m[2] as 'asc' | 'desc' | undefined) ?? 'asc' };
    });
}

async function cmdQuery(c: Ctx): Promise<void> {
  const { p } = c;
  onlyFlags(p, 'query', ['limit', 'after', 'order', 'fields', 'count', 'with-ids']);
  const [table, w] = positionals(p, 'query', 1, 2);
  const wheres = w === undefined ? {} : await readObjectArg(w, 'wheres', c.io);
  const body: Record<string, unknown> = { wheres };
  const limit = intFlag(p, 'limit', 1);
  if (limit !== undefined) body.limit = limit;
  const after = intFlag(p, 'after');
  if (after !== undefined) body.after = after;
  const order = flag(p, 'order');
  if (order !== undefined) body.order = parseOrder(order);
  const fields = flag(p, 'fields');
  if (fields !== undefined) body.fields = fields.split(',').filter(Boolean);
  if (has(p, 'count')) body.count = true;
  if (has(p, 'with-ids')) body.with_ids = true;
  await call<unknown>(c, 'queryRows', [table!], { body }, (a) => {
    const d = a.data as unknown;
    if (!Array.isArray(d)) return JSON.stringify(d); // {count: n}
    if (has(p, 'with-ids')) return grid((d as { t_id: number; row: Record<string, unknown> }[]).map((x) => ({ id: x.t_id, row: x.row })));
    return grid((d as Record<string, unknown>[]).map((row) => ({ row })));
  });
}

async function cmdInsert(c: Ctx): Promise<void> {
  const { p } = c;
  onlyFlags(p, 'insert', []);
  const [table, ...rest] = positionals(p, 'insert', 2, Infinity);
  const rows: Record<string, unknown>[] = [];
  for (const r of rest) {
    const v = await readJsonArg(r, 'the row', c.io);
    // `-` or @file may hold an array of rows.
    for (const one of Array.isArray(v) && (r === '-' || r.startsWith('@')) ? v : [v]) {
      if (one === null || typeof one !== 'object' || Array.isArray(one)) throw new UsageError('each row must be a JSON object');
      rows.push(one as Record<string, unknown>);
    }
  }
  for (const row of rows) await call<{ t_id: number }>(c, 'insertRow', [table!], { body: { rows: row } }, (a) => `t_id ${a.data.t_id}`);
}

async function cmdPatch(c: Ctx): Promise<void> {
  const { p } = c;
  if (has(p, 'record')) {
    onlyFlags(p, 'patch --record', ['record', 'if-version', 'ttl']);
    const [id, s] = positionals(p, 'patch --record', 1, 2);
    const body: Record<string, unknown> = writeOpts(p);
    if (s !== undefined) body.sets = await readObjectArg(s, 'sets', c.io);
    else if (body.ttl === undefined) throw new UsageError('patch --record: give sets or --ttl');
    await call(c, 'patchRecord', [id!], { body }, msg);
    return;
  }
  for (const kind of COLLECTIONS) if (has(p, kind)) return patchCollection(c, kind);
  if (has(p, 'row')) {
    onlyFlags(p, 'patch --row', ['row', 'unset', 'if-version']);
    const [table, id, s] = positionals(p, 'patch --row', 2, 3);
    const unset = p.flags.get('unset');
    if (s === undefined && unset === undefined) throw new UsageError('patch --row: give sets or --unset <field>');
    const body: Record<string, unknown> = { sets: s === undefined ? {} : await readObjectArg(s, 'sets', c.io), ...rowCondition(p) };
    if (unset !== undefined) body.unset = unset;
    await call(c, 'patchRow', [table!, id!], { body }, msg);
    return;
  }
  onlyFlags(p, 'patch', []);
  const [table, w, s] = positionals(p, 'patch', 3, 3);
  const wheres = await readObjectArg(w, 'wheres', c.io);
  const sets = await readObjectArg(s, 'sets', c.io);
  await call(c, 'patchRows', [table!], { body: { wheres, sets } }, msg);
}

async function cmdLock(c: Ctx): Promise<void> {
  const { p } = c;
  onlyFlags(p, 'lock', ['ttl', 'holder', 'renew']);
  const [name] = positionals(p, 'lock', 1, 1);
  const ttl = intFlag(p, 'ttl', 1);
  const renew = flag(p, 'renew');
  const human = (a: Answer<{ token: string; fence: number }>): string => `token ${a.data.token}\nfence ${a.data.fence}`;
  if (renew !== undefined) {
    await call(c, 'renewLock', [name!], { body: ttl === undefined ? { token: renew } : { token: renew, ttl } }, human);
    return;
  }
  if (ttl === undefined) throw new UsageError('lock: --ttl <seconds> is required (the lease length)');
  const holder = flag(p, 'holder');
  await call(c, 'acquireLock', [name!], { body: holder === undefined ? { ttl } : { ttl, holder } }, human);
}

async function cmdUnlock(c: Ctx): Promise<void> {
  const { p } = c;
  onlyFlags(p, 'unlock', []);
  const [name, token] = positionals(p, 'unlock', 2, 2);
  await call(c, 'releaseLock', [name!], { body: { token } }, msg);
}

async function cmdTxn(c: Ctx): Promise<void> {
  const { p } = c;
  onlyFlags(p, 'txn', []);
  const [t] = positionals(p, 'txn', 1, 1);
  const body = await readObjectArg(t, 'the transaction', c.io);
  await call<{ results: unknown[] }>(c, 'txn', [], { body }, (a) => a.data.results.map((r, i) => `${i}: ${JSON.stringify(r)}`).join('\n'));
}

async function cmdLs(c: Ctx): Promise<void> {
  const { p } = c;
  onlyFlags(p, 'ls', ['prefix', 'limit', 'after', 'all']);
  const [kw] = positionals(p, 'ls', 0, 1);
  const kind = kw === undefined ? 'table' : kindOf(kw, 'ls', KINDS);
  const op = (
    {
      table: 'listTables',
      record: 'listRecords',
      variant: 'listVariants',
      lock: 'listLocks',
      list: 'listLists',
      set: 'listSets',
      zset: 'listZsets',
    } as const satisfies Record<Kind, string>
  )[kind];
  let after = flag(p, 'after');
  const limit = intFlag(p, 'limit', 1);
  type Page = {
    items: { name: string; ttl_ms: number | null; rows?: number; length?: number; held?: boolean; holder?: string | null; count?: number }[];
    next: string | null;
  };
  for (;;) {
    const a = await call<Page>(c, op, [], { query: { prefix: flag(p, 'prefix'), limit, after } }, (a) =>
      a.data.items
        .map((it) => {
          const extra = [
            it.rows !== undefined ? `${it.rows} row${it.rows === 1 ? '' : 's'}` : '',
            it.length !== undefined ? `${it.length} item${it.length === 1 ? '' : 's'}` : '',
            it.count !== undefined ? `${it.count} member${it.count === 1 ? '' : 's'}` : '',
            it.held !== undefined ? (it.held ? `held by ${it.holder ?? '?'}` : 'free') : '',
            it.ttl_ms !== null ? `expires in ${(it.ttl_ms / 1000).toFixed(0)} s` : '',
          ].filter(Boolean);
          return extra.length ? `${it.name}\t${extra.join(', ')}` : it.name;
        })
        .join('\n'),
    );
    if (!has(p, 'all') || a.data.next === null || a.data.items.length === 0) {
      if (!has(p, 'all') && a.data.next !== null && !c.json) c.io.err(`(more: --after ${a.data.next}, or --all)\n`);
      return;
    }
    after = a.data.next;
  }
}

async function cmdWatch(c: Ctx): Promise<void> {
  const { p } = c;
  onlyFlags(p, 'watch', ['kind', 'prefix', 'since', 'values', 'count-events']);
  positionals(p, 'watch', 0, 0);
  const kinds = (p.flags.get('kind') ?? []).map((k) => kindOf(k, 'watch --kind', KINDS));
  const max = intFlag(p, 'count-events', 1);
  const since = intFlag(p, 'since');
  const ac = new AbortController();
  let n = 0;
  const o: Parameters<Pithos['watch']>[0] = { signal: ac.signal, values: has(p, 'values') };
  if (kinds.length) o.kind = kinds;
  const prefix = flag(p, 'prefix');
  if (prefix !== undefined) o.prefix = prefix;
  if (since !== undefined) o.since = since;
  // The library keeps the last id on an event that has none (the SSE rule, the
  // place to resume from); a line shows an id only when the server sent one with
  // that event, and ids never repeat, so a repeated id is one carried over
  // (an `expire` or `overflow`, which are not in the log).
  let lastId: string | undefined;
  for await (const ev of c.db.watch(o)) {
    const id = ev.id === lastId ? undefined : ev.id;
    lastId = ev.id;
    if (c.json) c.io.out(JSON.stringify(id === undefined ? { event: ev.event, data: ev.data } : ev) + '\n');
    else {
      const d = ev.data as { kind?: string; name?: string; t_id?: number; value?: unknown } | string;
      const what =
        typeof d === 'object' && d !== null
          ? `${d.kind ?? ''} ${d.name ?? ''}${d.t_id !== undefined ? ` t_id ${d.t_id}` : ''}${d.value !== undefined ? ` ${JSON.stringify(d.value)}` : ''}`
          : String(d);
      c.io.out(`${id ?? '-'}\t${ev.event}\t${what.trim()}\n`);
    }
    if (max !== undefined && ++n >= max) {
      ac.abort();
      break;
    }
  }
}

async function cmdHealth(c: Ctx): Promise<void> {
  onlyFlags(c.p, 'health', []);
  positionals(c.p, 'health', 0, 0);
  await call<Record<string, unknown>>(c, 'health', [], {}, (a) => {
    // space_total is in GB with two decimals (the seed-compatible form), 0.00GB for any small
    // store: shown from space_bytes in a unit that shows the figure, when the server sends it.
    const bytes = a.data.space_bytes;
    return Object.entries(a.data)
      .filter(([k]) => k !== 'space_bytes' || typeof bytes !== 'number')
      .map(([k, v]) => `${k.padEnd(13)} ${k === 'space_total' && typeof bytes === 'number' ? byteSize(bytes) : show(v)}`)
      .join('\n');
  });
}

const BYTE_UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
/** `512 B`, `1.50 KiB`, `3.20 GiB`: binary units, two decimals above bytes. */
function byteSize(n: number): string {
  let i = 0;
  while (n >= 1024 && i < BYTE_UNITS.length - 1) {
    n /= 1024;
    i++;
  }
  return i === 0 ? `${n} B` : `${n.toFixed(2)} ${BYTE_UNITS[i]}`;
}

const RUN: Record<string, (c: Ctx) => Promise<void>> = {
  push: cmdPush,
  add: cmdAdd,
  remove: cmdRemove,
  combine: cmdCombine,
  pop: cmdPop,
  append: cmdAppend,
  get: cmdGet,
  put: cmdPut,
  del: cmdDel,
  incr: cmdIncr,
  query: cmdQuery,
  insert: cmdInsert,
  patch: cmdPatch,
  lock: cmdLock,
  unlock: cmdUnlock,
  txn: cmdTxn,
  ls: cmdLs,
  watch: cmdWatch,
  health: cmdHealth,
  backup: cmdBackup,
};

/** Runs one command line (without the program name); resolves with the exit code. */
export async function run(argv: readonly string[], io: Io): Promise<number> {
  const all = parse(argv);
  const cmd = all.pos[0];
  if (cmd === undefined || !COMMANDS.has(cmd)) {
    io.err(`pithos: unknown command '${cmd ?? ''}' (see pithos help)\n`);
    return 2;
  }
  const p: Parsed = { pos: all.pos.slice(1), flags: all.flags };
  if (cmd === 'version') {
    io.out(`pithos ${version()}\n`);
    return 0;
  }
  if (cmd === 'help') {
    const topic = p.pos[0];
    if (topic === undefined) {
      io.out(OVERVIEW + '\n');
      return 0;
    }
    // Own topics only: `help constructor` would otherwise print Object.prototype's members.
    const text = Object.hasOwn(HELP, topic) ? HELP[topic] : undefined;
    if (text === undefined) {
      io.err(`pithos: no help for '${topic}'\n${OVERVIEW}\n`);
      return 2;
    }
    io.out(text + '\n');
    return 0;
  }
  if (all.problem !== undefined) {
    io.err(`pithos ${cmd}: ${all.problem} (see pithos help ${cmd})\n`);
    return 2;
  }
  if (has(p, 'help')) {
    io.out(HELP[cmd] + '\n');
    return 0;
  }
  if (cmd === 'restore') return restore(p, io);
  const output = flag(p, 'output') ?? 'human';
  if (output !== 'json' && output !== 'human') {
    io.err(`pithos ${cmd}: -o must be json or human, got '${output}'\n`);
    return 2;
  }
  const json = output === 'json';
  const url = flag(p, 'url') ?? io.env.PITHOS_URL ?? 'http://127.0.0.1:2668';
  if (!/^https?:\/\/[^/]+/.test(url)) {
    io.err(`pithos ${cmd}: --url must start with http:// or https://, got '${url}'\n`);
    return 2;
  }
  const token = flag(p, 'token') ?? io.env.PITHOS_TOKEN ?? io.env.PITHOS_AUTH_TOKEN;
  let db: Pithos;
  try {
    const timeout = intFlag(p, 'timeout', 1);
    db = new Pithos({ url, token, retries: intFlag(p, 'retries') ?? 0, ...(timeout !== undefined ? { timeoutMs: timeout * 1000 } : {}) });
    await RUN[cmd]!({ p, db, json, io });
    return 0;
  } catch (err) {
    if (err instanceof UsageError) {
      io.err(`pithos ${cmd}: ${err.message} (see pithos help ${cmd})\n`);
      return 2;
    }
    if (err instanceof PithosError) {
      if (json) io.out(JSON.stringify({ status: 'error', message: err.message, http_status: err.status }) + '\n');
      const hint = err.unsupported ? ' (this server does not offer that endpoint yet)' : err.status === 401 ? ' (check --token or PITHOS_TOKEN)' : '';
      io.err(`pithos ${cmd}: ${err.status ? `${err.status} ` : ''}${err.message}${hint}\n`);
      return 1;
    }
    throw err;
  }
}

/** `pithos restore`: local, no server (src/store/log/backup.ts checks and writes the files). */

/** Entry point used by bin/pithos. */
export async function main(argv: readonly string[]): Promise<number> {
  const io: Io = {
    out: (s) => process.stdout.write(s),
    err: (s) => process.stderr.write(s),
    env: process.env,
    stdin: async () => {
      const chunks: Buffer[] = [];
      for await (const c of process.stdin) chunks.push(c as Buffer);
      return Buffer.concat(chunks).toString('utf8');
    },
  };
  return run(argv, io);
}
