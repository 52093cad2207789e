/**
 * The `pithos` commands for lists, sets and sorted sets (docs/api.md, "Lists"
 * and "Sets and sorted sets"), through the same typed client as the others.
 * They keep the verbs of the other kinds where one fits (`get`, `put`, `del`,
 * `incr`) and add one verb per element operation of the server: `push` and
 * `pop` for lists, `add` and `remove` for the members of sets and sorted sets.
 * Reading one member is a flag of `get`, as `get record --column` reads one
 * field: `get set <name> --member m` (contains), `get zset <name> --member m`
 * (score and ranks). Changing a list in place or a lifetime is `patch`, as for
 * records and rows (`patch --list`, `--set`, `--zset`); `combine` is the
 * server's set operation, which reads several sets and may write one.
 */
import { type Kind, KINDS } from '../../client/index.js';
import { countFlag, flag, has, intFlag, onlyFlags, type Parsed, positionals, UsageError } from './args.js';
import { call, type Ctx, msg, writeOpts } from './context.js';
import { JSON_NUMBER, show, type Shown } from './show.js';

/** Which kinds are collections (lists, sets, sorted sets), the kinds these commands serve. */
const IS_COLLECTION = { table: false, record: false, variant: false, lock: false, list: true, set: true, zset: true } as const satisfies Record<Kind, boolean>;
export type Collection = { [K in Kind]: (typeof IS_COLLECTION)[K] extends true ? K : never }[Kind];
export const isCollection = (k: Kind): k is Collection => IS_COLLECTION[k];
export const COLLECTIONS: readonly Collection[] = KINDS.filter(isCollection);

/** Start and stop may be negative: they count from the end, as in Redis. */
const ANY = Number.MIN_SAFE_INTEGER;

/** A list value as written: JSON, else the word itself as a string (`push q a` pushes "a"). */
function jsonOrString(raw: string): unknown {
  try {
    return JSON.parse(raw) as unknown;
  } catch {
    return raw;
  }
}

function score(raw: string): number {
  if (!JSON_NUMBER.test(raw.trim())) throw new UsageError(`a score must be a number (as JSON writes it: 5, -2, 0.5), got '${raw}'`);
  return Number(raw);
}

/** `<member> <score>...` as `{member: score}`; a prototype-less object, so a member may be named `__proto__`. */
function pairs(words: string[]): Record<string, number> {
  if (words.length % 2 !== 0) throw new UsageError('give members and scores in pairs: <member> <score>...');
  const out = Object.create(null) as Record<string, number>;
  for (let i = 0; i < words.length; i += 2) out[words[i]!] = score(words[i + 1]!);
  return out;
}

/** One entry per line, or a note on stderr when there is none. */
function lines(entries: string[], none: string, more?: string | null): Shown {
  const note = more ? `(more: --after ${more})` : undefined;
  if (entries.length === 0) return { out: '', note: note ?? none };
  return note === undefined ? entries.join('\n') : { out: entries.join('\n'), note };
}

const counted = (d: Record<string, number>): string =>
  Object.entries(d)
    .map(([k, v]) => `${k} ${v}`)
    .join(', ');

/** `get list|set|zset <name>`: items, members, or members with scores, one per line. */
export async function getCollection(c: Ctx, kind: Collection, name: string): Promise<void> {
  const { p } = c;
  if (kind === 'list') {
    onlyFlags(p, 'get list', ['start', 'stop']);
    const query = { start: intFlag(p, 'start', ANY), stop: intFlag(p, 'stop', ANY) };
    await call<{ items: unknown[] }>(c, 'getList', [name], { query }, (a) => lines(a.data.items.map(show), '(no items)'));
  } else if (kind === 'set') {
    onlyFlags(p, 'get set', ['limit', 'after', 'member']);
    const members = p.flags.get('member');
    if (members !== undefined) {
      await call<{ contains: boolean[] }>(c, 'setContains', [name], { body: { members } }, (a) =>
        members.map((m, i) => `${m}\t${a.data.contains[i]}`).join('\n'),
      );
      return;
    }
    const query = { limit: intFlag(p, 'limit', 1), after: flag(p, 'after') };
    await call<{ members: string[]; next: string | null }>(c, 'getSet', [name], { query }, (a) => lines(a.data.members, '(no members)', a.data.next));
  } else {
    await getZset(c, name);
  }
}

async function getZset(c: Ctx, name: string): Promise<void> {
  const { p } = c;
  onlyFlags(p, 'get zset', ['start', 'stop', 'min', 'max', 'offset', 'limit', 'rev', 'member']);
  const member = flag(p, 'member');
  if (member !== undefined) {
    await call<{ score: number; rank: number; rev_rank: number }>(c, 'zmember', [name, member], {}, (a) =>
      Object.entries(a.data)
        .map(([k, v]) => `${k} ${v}`)
        .join('\n'),
    );
    return;
  }
  const rev = has(p, 'rev') ? true : undefined;
  // A score bound, an offset or a limit reads by score; else by rank (the server's default).
  const byScore = ['min', 'max', 'offset', 'limit'].some((f) => has(p, f));
  const query = byScore
    ? { by: 'score', min: flag(p, 'min'), max: flag(p, 'max'), offset: intFlag(p, 'offset'), limit: intFlag(p, 'limit', 1), rev }
    : { start: intFlag(p, 'start', ANY), stop: intFlag(p, 'stop', ANY), rev };
  if (byScore && (has(p, 'start') || has(p, 'stop')))
    throw new UsageError('give a rank range (--start, --stop) or a score range (--min, --max, --offset, --limit), not both');
  await call<{ items: { member: string; score: number }[] }>(c, 'zrange', [name], { query }, (a) =>
    lines(
      a.data.items.map((it) => `${it.member}\t${it.score}`),
      '(no members)',
    ),
  );
}

/** `put list|set|zset <name> <elements...>`: create or replace the whole object; elements as push / add take them. */
export async function putCollection(c: Ctx, kind: Collection): Promise<void> {
  const { p } = c;
  onlyFlags(p, `put ${kind}`, ['ttl', 'if-version', 'if-absent']);
  const [, name, ...rest] = positionals(p, `put ${kind}`, 2, Infinity);
  const body = kind === 'list' ? { list: rest.map(jsonOrString) } : kind === 'set' ? { set: rest } : { zset: pairs(rest) };
  await call(c, ({ list: 'putList', set: 'putSet', zset: 'putZset' } as const)[kind], [name!], { body: { ...body, ...writeOpts(p) } }, (a) =>
    a.status === 201 ? 'created' : 'replaced',
  );
}

/** `create: false` when `--no-create` is given: the element operation then refuses a missing object (404) instead of creating it. */
const createOpt = (p: Parsed): Record<string, unknown> => (has(p, 'no-create') ? { create: false } : {});

/** `add set <name> <member>...`, `add zset <name> <member> <score>... [--mode m]`. */
export async function cmdAdd(c: Ctx): Promise<void> {
  const { p } = c;
  const kind = p.pos[0];
  if (kind !== 'set' && kind !== 'zset') throw new UsageError(`the first argument must be set or zset${kind ? `, got '${kind}'` : ''}`);
  onlyFlags(p, `add ${kind}`, kind === 'zset' ? ['mode', 'if-version', 'no-create'] : ['if-version', 'no-create']);
  const [, name, ...rest] = positionals(p, `add ${kind}`, 3, Infinity);
  const body: Record<string, unknown> = { members: kind === 'set' ? rest : pairs(rest), ...writeOpts(p), ...createOpt(p) };
  const mode = flag(p, 'mode');
  if (mode !== undefined) body.mode = mode;
  await call<Record<string, number>>(c, kind === 'set' ? 'setAdd' : 'zadd', [name!], { body }, (a) => counted(a.data));
}

/** `remove set|zset <name> <member>...`: the members go; the object stays, even empty. */
export async function cmdRemove(c: Ctx): Promise<void> {
  const { p } = c;
  const kind = p.pos[0];
  if (kind !== 'set' && kind !== 'zset') throw new UsageError(`the first argument must be set or zset${kind ? `, got '${kind}'` : ''}`);
  onlyFlags(p, `remove ${kind}`, ['if-version']);
  const [, name, ...members] = positionals(p, `remove ${kind}`, 3, Infinity);
  const body = { members, ...writeOpts(p) };
  await call<Record<string, number>>(c, kind === 'set' ? 'setRemove' : 'zremove', [name!], { body }, (a) => counted(a.data));
}

/** `incr --zset <name> <member> [delta]`: adds to a member's score (a new member starts at 0); prints the new score. */
export async function zincr(c: Ctx): Promise<void> {
  const { p } = c;
  onlyFlags(p, 'incr --zset', ['zset', 'if-version', 'no-create']);
  const [name, member, d] = positionals(p, 'incr --zset', 2, 3);
  const body = { member, delta: score(d ?? '1'), ...writeOpts(p), ...createOpt(p) };
  await call<{ score: number }>(c, 'zincr', [name!], { body }, (a) => show(a.data.score));
}

/** `pithos push <list> <value>... [--left]`: each value is JSON (else a string), pushed in order. */
export async function cmdPush(c: Ctx): Promise<void> {
  const { p } = c;
  onlyFlags(p, 'push', ['left', 'right', 'if-version', 'no-create']);
  const [name, ...raw] = positionals(p, 'push', 2, Infinity);
  const body: Record<string, unknown> = { values: raw.map(jsonOrString), side: has(p, 'left') ? 'left' : 'right', ...writeOpts(p), ...createOpt(p) };
  await call<{ length: number }>(c, 'pushList', [name!], { body }, (a) => `length ${a.data.length}`);
}

/** `pithos pop <list> [--right] [--count n] [--wait ms] [--to list [--to-side left|right]]`: one item per line (`--pop-count` is `--count`). */
export async function cmdPop(c: Ctx): Promise<void> {
  const { p } = c;
  onlyFlags(p, 'pop', ['left', 'right', 'count', 'pop-count', 'wait', 'to', 'to-side', 'if-version']);
  const [name] = positionals(p, 'pop', 1, 1);
  const body: Record<string, unknown> = { side: has(p, 'right') ? 'right' : 'left', ...writeOpts(p) };
  const count = countFlag(p, 'pop-count', 1);
  if (count !== undefined) body.count = count;
  const wait = intFlag(p, 'wait', 0);
  if (wait !== undefined) body.wait_ms = wait;
  const to = flag(p, 'to');
  if (to !== undefined) body.to = to;
  const toSide = flag(p, 'to-side');
  if (toSide !== undefined) body.to_side = toSide;
  await call<{ items: unknown[] }>(c, 'popList', [name!], { body }, (a) =>
    a.data.items.length === 0 ? '(nothing to pop)' : a.data.items.map(show).join('\n'),
  );
}

/** `pithos combine <set> union|inter|diff <other>... [--store <set>]`: the members one per line, or with --store the stored count. */
export async function cmdCombine(c: Ctx): Promise<void> {
  const { p } = c;
  onlyFlags(p, 'combine', ['store']);
  const [name, op, ...others] = positionals(p, 'combine', 3, Infinity);
  if (op !== 'union' && op !== 'inter' && op !== 'diff') throw new UsageError(`the second argument must be union, inter or diff, got '${op}'`);
  const store = flag(p, 'store');
  const body: Record<string, unknown> = { op, with: others };
  if (store !== undefined) body.store = store;
  await call<{ members?: string[]; count: number }>(c, 'setCombine', [name!], { body }, (a) =>
    a.data.members === undefined ? `count ${a.data.count}` : lines(a.data.members, '(no members)'),
  );
}

/**
 * `patch --list <name>` with one of `--index i <value>` (set one item), `--start i --stop j`
 * (trim: keep only that inclusive range) or `--remove <value> [--count n]` (`--remove-count` is `--count`), and/or
 * `--ttl s`; `patch --set|--zset <name> --ttl s`. Every form takes `--if-version v`.
 */
export async function patchCollection(c: Ctx, kind: Collection): Promise<void> {
  const { p } = c;
  if (kind !== 'list') {
    onlyFlags(p, `patch --${kind}`, [kind, 'ttl', 'if-version']);
    const [name] = positionals(p, `patch --${kind}`, 1, 1);
    if (!has(p, 'ttl')) throw new UsageError(`patch --${kind}: give --ttl <seconds> (0: no expiry)`);
    await call(c, kind === 'set' ? 'setSetTtl' : 'setZsetTtl', [name!], { body: writeOpts(p) }, msg);
    return;
  }
  onlyFlags(p, 'patch --list', ['list', 'index', 'start', 'stop', 'remove', 'count', 'remove-count', 'ttl', 'if-version']);
  const [name, raw] = positionals(p, 'patch --list', 1, 2);
  const body: Record<string, unknown> = writeOpts(p);
  const ops: string[] = [];
  const index = intFlag(p, 'index', ANY);
  if (index !== undefined) {
    if (raw === undefined) throw new UsageError('patch --list --index i: give the new value after the name');
    body.set = { index, value: jsonOrString(raw) };
    ops.push('--index');
  } else if (raw !== undefined) throw new UsageError(`unexpected argument '${raw}' (a value goes with --index)`);
  if (has(p, 'start') || has(p, 'stop')) {
    body.trim = { start: intFlag(p, 'start', ANY) ?? 0, stop: intFlag(p, 'stop', ANY) ?? -1 };
    ops.push('--start/--stop');
  }
  const removed = flag(p, 'remove');
  if (removed !== undefined) {
    body.remove = { value: jsonOrString(removed), count: countFlag(p, 'remove-count', ANY) ?? 0 };
    ops.push('--remove');
  } else if (has(p, 'remove-count') || has(p, 'count')) throw new UsageError(`--${has(p, 'count') ? 'count' : 'remove-count'} goes with --remove <value>`);
  if (ops.length > 1) throw new UsageError(`give one of --index, --start/--stop or --remove, not ${ops.join(' and ')}`);
  if (ops.length === 0 && body.ttl === undefined) throw new UsageError('patch --list: give --index i <value>, --start/--stop, --remove <value> or --ttl s');
  await call<{ length: number }>(c, 'patchList', [name!], { body }, (a) => `length ${a.data.length}`);
}
