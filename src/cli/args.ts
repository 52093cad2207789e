/**
 * The command line of `pithos <command>` (src/cli/main.ts): which options take
 * a value, where they may stand, and the checks every command shares on its
 * flags and arguments, each failing as a UsageError (exit 2).
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { KINDS, type Kind } from '../../client/index.js';

export class UsageError extends Error {}

export interface Parsed {
  pos: string[];
  flags: Map<string, string[]>;
}

/** Flags that take a value; the others are booleans. `-o` is `--output`, `-h` is `--help`. */
const VALUED = [
  'url',
  'token',
  'output',
  'ttl',
  'if-version',
  'limit',
  'after',
  'order',
  'fields',
  'prefix',
  'since',
  'kind',
  'holder',
  'renew',
  'column',
  'timeout',
  'retries',
  'count-events',
  'delta',
  'out',
  'from',
  'data-dir',
  'unset',
  'pop-count',
  'wait',
  'to',
  'to-side',
  'start',
  'stop',
  'min',
  'max',
  'offset',
  'member',
  'mode',
  'store',
  'index',
  'remove',
  'remove-count',
  'encryption-key-file',
  'encryption-old-key-files',
] as const;
const BOOLEAN = [
  'if-absent',
  'count',
  'with-ids',
  'all',
  'values',
  'record',
  'row',
  'string',
  'help',
  'left',
  'right',
  'rev',
  'zset',
  'list',
  'set',
  'no-create',
] as const;
const SHORT: Record<string, string> = { output: 'o', help: 'h' };
type Options = NonNullable<ParseArgsConfig['options']>;
const OPTIONS: Options = Object.fromEntries([
  ...VALUED.map((n) => [n, { type: 'string' as const, ...(SHORT[n] ? { short: SHORT[n] } : {}) }]),
  ...BOOLEAN.map((n) => [n, { type: 'boolean' as const, ...(SHORT[n] ? { short: SHORT[n] } : {}) }]),
]);
/**
 * Commands with one count, which `--count <n>` gives as well as its long name
 * (`pop --count 5` is `pop --pop-count 5`): for them `--count` takes a value,
 * for `query` it is a switch.
 */
const COUNTED = new Set(['pop', 'patch']);
const COUNTED_OPTIONS: Options = { ...OPTIONS, count: { type: 'string' } };
/** The connection and output options, which may also come before the command (`pithos --url U health`). */
const LEADING: Options = Object.fromEntries(['url', 'token', 'output', 'timeout', 'retries'].map((n) => [n, OPTIONS[n]!]));

/**
 * Options may come anywhere, before or after the command and its arguments. A
 * word of one dash other than `-o` and `-h` is an argument, not an option, so
 * `pithos incr n -2` and `put variant x -1.5` keep their negative numbers.
 * parseArgs runs non-strict so that each problem is reported in the CLI's own
 * words; `problem` is the first one found.
 */
export function parse(argv: readonly string[]): Parsed & { problem?: string } {
  const first = parseWith(argv, OPTIONS);
  return COUNTED.has(first.pos[0] ?? '') ? parseWith(argv, COUNTED_OPTIONS) : first;
}

function parseWith(argv: readonly string[], options: Options): Parsed & { problem?: string } {
  const args = [...argv];
  const { tokens } = parseArgs({ args, options, strict: false, allowPositionals: true, tokens: true });
  const pos: string[] = [];
  const flags = new Map<string, string[]>();
  let problem: string | undefined;
  let lastIndex = -1;
  for (const t of tokens) {
    if (t.kind === 'positional') pos.push(t.value);
    if (t.kind !== 'option') continue;
    const known = Object.prototype.hasOwnProperty.call(options, t.name) && (t.rawName.startsWith('--') || SHORT[t.name] === t.rawName.slice(1));
    if (!known && !t.rawName.startsWith('--')) {
      // One arg like `-1.5` comes back as several short options with the same index.
      if (t.index !== lastIndex) pos.push(args[t.index]!);
      lastIndex = t.index;
      continue;
    }
    let value: string | undefined;
    if (!known) problem ??= `unknown option '${args[t.index]}'`;
    else if (options[t.name]!.type === 'string') {
      value = t.value;
      if (value === undefined) problem ??= t.rawName === '-o' ? '-o needs a value (json or human)' : `${t.rawName} needs a value`;
    } else if (t.value !== undefined) problem ??= `${t.rawName} takes no value`;
    else value = 'true';
    if (value === undefined) continue;
    const a = flags.get(t.name);
    if (a) a.push(value);
    else flags.set(t.name, [value]);
  }
  return problem === undefined ? { pos, flags } : { pos, flags, problem };
}

/**
 * Whether a command line that starts with an option is the client's: it opens
 * with connection and output options only (each with its value), and the first
 * word after them is the command (which the client checks). A line with any
 * other option first (`pithos --port 0 …`) is the server's.
 */
export function isClientLine(argv: readonly string[]): boolean {
  const { tokens } = parseArgs({ args: [...argv], options: LEADING, strict: false, allowPositionals: true, tokens: true });
  for (const t of tokens) {
    if (t.kind === 'positional') return true;
    if (t.kind !== 'option' || !Object.prototype.hasOwnProperty.call(LEADING, t.name) || t.value === undefined) return false;
  }
  return tokens.length > 0;
}

export const flag = (p: Parsed, name: string): string | undefined => p.flags.get(name)?.at(-1);
export const has = (p: Parsed, name: string): boolean => p.flags.has(name);

export function intFlag(p: Parsed, name: string, min = 0): number | undefined {
  const v = flag(p, name);
  if (v === undefined) return undefined;
  if (!/^-?\d+$/.test(v) || Number(v) < min || !Number.isSafeInteger(Number(v))) {
    throw new UsageError(`--${name} must be an integer ≥ ${min}, got '${v}'`);
  }
  return Number(v);
}

/**
 * A command's one count, given as `--count` or by its long name (`--pop-count`);
 * both at once is a usage error.
 */
export function countFlag(p: Parsed, long: string, min: number): number | undefined {
  if (has(p, 'count') && has(p, long)) throw new UsageError(`--count and --${long} are the same option: give one`);
  return intFlag(p, has(p, 'count') ? 'count' : long, min);
}

export function onlyFlags(p: Parsed, cmd: string, allowed: string[]): void {
  const ok = new Set([...allowed, 'url', 'token', 'output', 'timeout', 'retries', 'help']);
  for (const k of p.flags.keys()) if (!ok.has(k)) throw new UsageError(`${cmd} does not take --${k}`);
}

export function positionals(p: Parsed, cmd: string, min: number, max: number): string[] {
  if (p.pos.length < min) throw new UsageError(`missing argument${min - p.pos.length > 1 ? 's' : ''} for '${cmd}'`);
  if (p.pos.length > max) throw new UsageError(`unexpected argument '${p.pos[max]}'`);
  return p.pos;
}

/** Each kind by its singular and its plural (the path's) spelling. */
const KIND_WORDS: Record<string, Kind> = Object.fromEntries(KINDS.flatMap((k) => [[k, k] as const, [`${k}s`, k] as const]));
export function kindOf<K extends Kind>(word: string | undefined, cmd: string, allowed: readonly K[]): K {
  const k = word === undefined ? undefined : KIND_WORDS[word];
  if (k === undefined || !(allowed as readonly Kind[]).includes(k)) {
    const what = cmd.includes(' --') ? cmd.slice(cmd.indexOf(' --') + 1) : 'the first argument';
    throw new UsageError(`${what} must be one of ${allowed.join(', ')}${word ? `, got '${word}'` : ''}`);
  }
  return k as K;
}
