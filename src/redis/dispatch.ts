/**
 * What every transport does with a command before it runs (docs/redis.md):
 * find it in the table, check its arity, decode its arguments as UTF-8, and
 * decide the role it needs; and how a failure becomes a Redis error. The RESP
 * listener and the REST routes both call these, so a command is judged the
 * same way whichever door it came through.
 */
import { isUtf8 } from 'node:buffer';
import { StoreError } from '../store/errors.js';
import type { Call, Command } from './command.js';
import { ErrorReply, Issued, type Reply } from './resp.js';
import type { CommandTable } from './table.js';

export type Role = 'read' | 'write' | 'admin';

/** Redis's answer to a name the table does not hold, quoting up to 20 arguments. */
export function unknownCommand(name: string, args: readonly string[]): ErrorReply {
  const rest = args
    .slice(0, 20)
    .map((a) => `'${a.slice(0, 128)}' `)
    .join('');
  return new ErrorReply(`ERR unknown command '${name.slice(0, 128)}', with args beginning with: ${rest}`);
}

/** The command `words[0]` names, or the error for an unknown one or a wrong number of words. */
export function resolve(table: CommandTable, words: readonly string[]): Command | ErrorReply {
  const name = words[0]!.toLowerCase();
  const cmd = table.get(name);
  if (cmd === undefined) return unknownCommand(words[0]!, words.slice(1));
  if ((cmd.arity > 0 && words.length !== cmd.arity) || words.length < -cmd.arity) return new ErrorReply(`ERR wrong number of arguments for '${name}' command`);
  return cmd;
}

/** The arguments as text, or the error naming the first that is not UTF-8 (docs/redis.md, "Binary data"). */
export function decode(raw: readonly Buffer[]): string[] | ErrorReply {
  const args = new Array<string>(raw.length);
  for (let i = 0; i < raw.length; i++) {
    const b = raw[i]!;
    if (!isUtf8(b)) return new ErrorReply(`ERR argument ${i} is not valid UTF-8: Pithos keeps keys and values as UTF-8 text (docs/redis.md, "Binary data")`);
    args[i] = b.toString('utf8');
  }
  return args;
}

/** The role a token needs for `cmd`: admin for `admin` commands, write for `write` ones, read for the rest. */
export function roleOf(cmd: Command): Role {
  return cmd.flags.includes('admin') ? 'admin' : cmd.flags.includes('write') ? 'write' : 'read';
}

/** A StoreError as a Redis error; anything else is logged and answered as an internal error. */
export function toReply(err: unknown, log: (level: 'error', msg: string) => void): ErrorReply {
  if (err instanceof ErrorReply) return err;
  if (err instanceof StoreError) {
    if (err.kind === 'unreachable' || err.kind === 'unavailable') return new ErrorReply(`TRYAGAIN ${err.message}`);
    return new ErrorReply(`ERR ${err.message}`);
  }
  log('error', `Redis command failed: ${String((err as Error)?.stack ?? err)}`);
  return new ErrorReply('ERR internal error');
}

/** The reply of what `execute` answered, once it is there (an Issued command's included). */
export async function settle(r: Reply | undefined | Promise<Reply | undefined> | Issued): Promise<Reply | undefined> {
  return r instanceof Issued ? r.reply : r;
}

/**
 * Runs a resolved command; a failure becomes its Redis error. A reply the
 * handler had at once is not wrapped in a promise. `then`, when given, sees
 * every reply (a failure's error included) before it is returned, in the
 * same step that turns a failure into its error: a pipelined command pays
 * for one promise reaction here, not two.
 */
export function execute(
  cmd: Command,
  call: Call,
  log: (level: 'error', msg: string) => void,
  then: (r: Reply | undefined) => Reply | undefined = same,
): Reply | undefined | Promise<Reply | undefined> | Issued {
  let r: ReturnType<Command['run']>;
  try {
    r = cmd.run(call);
  } catch (err) {
    return then(toReply(err, log));
  }
  if (r instanceof Issued)
    return new Issued(
      r.reply.then(
        (x) => then(x) ?? null,
        (err: unknown) => then(toReply(err, log)) ?? null,
      ),
    );
  if (r instanceof Promise) return r.then(then, (err: unknown) => then(toReply(err, log)));
  return then(r);
}

const same = (r: Reply | undefined): Reply | undefined => r;
