/**
 * What every `pithos` command shares (src/cli/main.ts and the modules it runs):
 * the terminal, one call through the typed client printed as JSON or for
 * people, and the JSON and write-option arguments.
 */
import * as fs from 'node:fs';
import { type Answer, type Operation, type Pithos } from '../../client/index.js';
import { has, intFlag, type Parsed, UsageError } from './args.js';
import { cut, type Shown } from './show.js';

export interface Io {
  out: (s: string) => void;
  err: (s: string) => void;
  env: Record<string, string | undefined>;
  stdin: () => Promise<string>;
}

export interface Ctx {
  p: Parsed;
  db: Pithos;
  json: boolean;
  io: Io;
}

export async function readJsonArg(text: string | undefined, what: string, io: Io): Promise<unknown> {
  if (text === undefined) throw new UsageError(`missing ${what} (JSON, @file or - for stdin)`);
  let src = text;
  if (text === '-') src = await io.stdin();
  else if (text.startsWith('@')) {
    try {
      src = fs.readFileSync(text.slice(1), 'utf8');
    } catch (err) {
      throw new UsageError(`cannot read ${text.slice(1)}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
    }
  }
  try {
    return JSON.parse(src);
  } catch {
    throw new UsageError(`${what} is not valid JSON: ${cut(src.trim(), 60)}`);
  }
}

export async function readObjectArg(text: string | undefined, what: string, io: Io): Promise<Record<string, unknown>> {
  const v = await readJsonArg(text, what, io);
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new UsageError(`${what} must be a JSON object`);
  return v as Record<string, unknown>;
}

/**
 * Run one call; in JSON mode print the server's envelope as it came (so
 * `3.0` stays a double), with `version` added when the server sent an ETag;
 * else hand the answer to `human`.
 */
export async function call<T>(c: Ctx, op: Operation, args: string[], opts: Parameters<Pithos['call']>[2], human: (a: Answer<T>) => Shown): Promise<Answer<T>> {
  const a = await c.db.call<T>(op, args, opts);
  if (c.json) {
    const env = a.text.trimEnd();
    c.io.out((a.version === undefined || !env.endsWith('}') ? env : `${env.slice(0, -1)},"version":${a.version}}`) + '\n');
  } else {
    const s = human(a);
    const out = typeof s === 'string' ? s : s.out;
    if (out !== '') c.io.out(out + '\n');
    if (typeof s !== 'string') c.io.err(s.note + '\n');
  }
  return a;
}

export const msg = (a: Answer<unknown>): string => a.message;

export function writeOpts(p: Parsed): Record<string, unknown> {
  const o: Record<string, unknown> = {};
  const ttl = intFlag(p, 'ttl');
  if (ttl !== undefined) o.ttl = ttl;
  const v = intFlag(p, 'if-version');
  if (v !== undefined) o.if_version = v;
  if (has(p, 'if-absent')) o.if_absent = true;
  return o;
}
