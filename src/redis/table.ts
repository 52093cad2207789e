/**
 * The one table of Redis commands (docs/redis.md, "Commands"): every family's
 * declarations, plus the session commands the listener provides, gathered
 * once. The dispatcher, COMMAND (COUNT, INFO, DOCS, LIST), the role check
 * and the coverage list in docs/redis.md all read it.
 */
import type { Command } from './command.js';
import { CONNECTION_COMMANDS } from './connection.js';
import { glob } from './glob.js';
import { HASH_COMMANDS } from './hashes.js';
import { KEY_COMMANDS } from './keys.js';
import { LIST_COMMANDS } from './lists.js';
import { PUBSUB_COMMANDS } from './pubsub.js';
import { ErrorReply, MapReply, type Reply, Simple } from './resp.js';
import { SET_COMMANDS } from './sets.js';
import { STRING_COMMANDS } from './strings.js';
import { ZSET_COMMANDS } from './zsets.js';

/** The families over the Store, in the order docs/redis.md lists them. */
export const FAMILIES: ReadonlyArray<readonly [string, readonly Command[]]> = [
  ['Connection and server', CONNECTION_COMMANDS],
  ['Keys', KEY_COMMANDS],
  ['Strings', STRING_COMMANDS],
  ['Lists', LIST_COMMANDS],
  ['Sets', SET_COMMANDS],
  ['Sorted sets', ZSET_COMMANDS],
  ['Hashes', HASH_COMMANDS],
  ['Pub/sub', PUBSUB_COMMANDS],
];

export type CommandTable = ReadonlyMap<string, Command>;

/** The table: the families and `session` (the listener's own: AUTH, HELLO, MULTI, …), each name once. */
export function buildTable(session: readonly Command[]): CommandTable {
  const t = new Map<string, Command>();
  const all = [...FAMILIES.flatMap(([, cs]) => cs), ...session, ...aliases()];
  for (const c of all) {
    if (t.has(c.name)) throw new Error(`command '${c.name}' is declared twice`);
    t.set(c.name, c);
  }
  t.set('command', {
    name: 'command',
    arity: -1,
    flags: ['loading', 'stale'],
    keys: [0, 0, 0],
    summary: 'COUNT, INFO, DOCS, LIST',
    run: (c) => command(t, c.args),
  });
  return t;
}

/** Commands that are another under a second name. */
function aliases(): Command[] {
  const find = (n: string): Command => KEY_COMMANDS.find((c) => c.name === n) as Command;
  return [{ ...find('flushdb'), name: 'flushall', summary: 'FLUSHDB (one database)' }];
}

/** COMMAND INFO's entry of one command (Redis 7's ten fields, the last three empty). */
function info(c: Command): Reply {
  return [c.name, c.arity, c.flags.map((f) => new Simple(f)), c.keys[0], c.keys[1], c.keys[2], [], [], [], []];
}

/** COMMAND LIST [FILTERBY MODULE name | ACLCAT category | PATTERN glob]: Pithos has no modules and no ACL categories, so those list nothing. */
function commandList(t: CommandTable, args: readonly string[]): Reply {
  if (args.length === 2) return [...t.keys()];
  if (args.length !== 5 || args[2]!.toUpperCase() !== 'FILTERBY') throw new ErrorReply('ERR syntax error');
  const by = args[3]!.toUpperCase();
  if (by === 'PATTERN') {
    // Matched without regard to case, as Redis does.
    const re = glob(args[4]!.toLowerCase());
    return [...t.keys()].filter((n) => re.test(n));
  }
  if (by === 'MODULE' || by === 'ACLCAT') return [];
  throw new ErrorReply('ERR syntax error');
}

function command(t: CommandTable, args: readonly string[]): Reply {
  const sub = args[1]?.toUpperCase();
  if (sub === undefined) return [...t.values()].map(info);
  if (sub === 'COUNT') {
    if (args.length !== 2) throw new ErrorReply("ERR wrong number of arguments for 'command|count' command");
    return t.size;
  }
  if (sub === 'LIST') return commandList(t, args);
  if (sub === 'INFO')
    return (args.length === 2 ? [...t.values()] : args.slice(2).map((n) => t.get(n.toLowerCase()))).map((c) => (c === undefined ? null : info(c)));
  if (sub === 'DOCS') {
    const cs = args.length === 2 ? [...t.values()] : args.slice(2).flatMap((n) => t.get(n.toLowerCase()) ?? []);
    return new MapReply(cs.map((c): [Reply, Reply] => [c.name, new MapReply([['summary', c.summary]])]));
  }
  if (sub === 'GETKEYS') {
    const c = t.get((args[2] ?? '').toLowerCase());
    if (c === undefined) throw new ErrorReply('ERR Invalid command specified');
    return keysOf(c, args.slice(2));
  }
  throw new ErrorReply(`ERR unknown subcommand '${args[1]}'. Try COMMAND HELP.`);
}

/** The keys a command's arguments name, by its key positions. */
export function keysOf(c: Command, args: readonly string[]): string[] {
  const [first, last, step] = c.keys;
  if (first === 0) return [];
  const end = last < 0 ? args.length + last : last;
  const out: string[] = [];
  for (let i = first; i <= end && i < args.length; i += step) out.push(args[i]!);
  return out;
}

/** docs/redis.md's list of commands, family by family, as the table declares them (a docs test compares). */
export function coverage(t: CommandTable): string {
  const lines: string[] = [];
  const seen = new Set<string>();
  const row = (c: Command): string => `| \`${c.name.toUpperCase()}\` | ${c.arity} | ${c.flags.join(', ')} | ${c.summary} |`;
  for (const [family, cs] of FAMILIES) {
    lines.push(`**${family}**`, '', '| command | arity | flags | what |', '|---|---:|---|---|');
    for (const c of cs) {
      lines.push(row(t.get(c.name) ?? c));
      seen.add(c.name);
    }
    lines.push('');
  }
  const rest = [...t.values()].filter((c) => !seen.has(c.name));
  lines.push('**Session, transactions and introspection**', '', '| command | arity | flags | what |', '|---|---:|---|---|');
  for (const c of rest) lines.push(row(c));
  return lines.join('\n') + '\n';
}
