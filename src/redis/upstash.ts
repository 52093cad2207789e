/**
 * Upstash's REST protocol over the command table (docs/redis-rest.md): the
 * commands as JSON arrays, run one by one, as a pipeline or as a MULTI/EXEC
 * block, and their replies as Upstash's JSON (RESP2 shapes, strings
 * base64-encoded when the client asks). Nothing here speaks HTTP; the routes
 * in src/http/redis-rest.ts carry the requests here and the answers back, so
 * a command is judged by dispatch.ts exactly as the RESP listener judges it.
 */
import type { Store } from '../store/store.js';
import type { Call, Command, ServerView, Session } from './command.js';
import { execute, resolve, roleOf, settle } from './dispatch.js';
import { Multi } from './multi.js';
import { Dbl, doubleText, ErrorReply, Issued, MapReply, NULL_ARRAY, type Reply, SetReply, Simple } from './resp.js';
import { buildTable, type CommandTable } from './table.js';

/** Longest a blocking command (BLPOP …) waits over REST: an HTTP request is no place to wait for minutes. */
export const REST_MAX_BLOCK_MS = 30_000;

/** A pipeline's commands whose durability may be pending at once (the RESP listener's bound on replies owed). */
const MAX_IN_FLIGHT = 1024;

/**
 * Commands of a RESP connection's own state, which a stateless request has
 * no use for: what to do instead. A Map, since the name is the client's (an
 * object would answer `__proto__` or `constructor` from its prototype).
 */
const CONNECTION_ONLY: ReadonlyMap<string, string> = new Map([
  ['multi', 'send the block to /redis/multi-exec'],
  ['exec', 'send the block to /redis/multi-exec'],
  ['discard', 'send the block to /redis/multi-exec'],
  ['watch', 'send the block to /redis/multi-exec'],
  ['unwatch', 'send the block to /redis/multi-exec'],
  ['auth', 'send the token as Authorization: Bearer <token>'],
  ['hello', 'every answer is JSON in RESP2 shapes'],
  ['quit', 'each request is its own exchange'],
  ['subscribe', 'POST /redis/subscribe/<channel> answers a stream of its messages'],
  ['psubscribe', 'POST /redis/psubscribe/<pattern> answers a stream of its messages'],
  ['unsubscribe', 'close the stream of POST /redis/subscribe/<channel>'],
  ['punsubscribe', 'close the stream of POST /redis/psubscribe/<pattern>'],
  ['reset', 'each request is its own exchange'],
]);

/** A bad request: nothing of it ran (400 `{"error"}`). */
export class RestRequestError extends Error {}

/** The refusal of a token that may not run a command (403 for one command; one entry's error in a pipeline). */
export class NoPerm extends ErrorReply {}

/** Who sent a request: its token's name, and whether that token holds a role. */
export interface Caller {
  readonly name: string;
  /** May this token run a command that needs `role`? */
  may(role: 'write' | 'admin'): boolean;
  readonly addr: string;
  /** Aborted when the client goes away: a blocking command then stops waiting. */
  readonly gone: AbortSignal;
}

/**
 * A request's session: what CLIENT INFO and the like read; fresh for every
 * request. What only some commands read (the caller's name, the MULTI
 * queue) is made when first asked for, so a plain INCR allocates neither.
 */
class RestSession implements Session {
  proto: 2 | 3 = 2;
  name = '';
  role: 'read' | 'write' | 'admin' | undefined = undefined;
  readonly createdAt = Date.now();
  lastCommand = 'NULL';
  private queue: Multi | undefined = undefined;
  constructor(
    readonly id: number,
    readonly caller: Caller,
  ) {}
  private named: string | undefined = undefined;
  get user(): string {
    return (this.named ??= this.caller.name);
  }
  set user(v: string) {
    this.named = v;
  }
  get multi(): Multi {
    return (this.queue ??= new Multi());
  }
  get addr(): string {
    return this.caller.addr;
  }
  get gone(): AbortSignal {
    return this.caller.gone;
  }
}

export interface RestOptions {
  store: Store;
  version: string;
  storeName: string;
  /** The HTTP port, for INFO's tcp_port. */
  port: () => number;
  log: (level: 'error', msg: string) => void;
}

/** One element of a JSON command: text as is, a number as its JSON text (Upstash's clients send numbers as numbers). */
function word(v: unknown, i: number): string {
  if (typeof v === 'string') {
    // A lone surrogate (`"\ud800"`) is no text Pithos can keep (docs/redis.md, "Binary data").
    if (LONE_SURROGATE.test(v)) throw new RestRequestError(`ERR argument ${i} is not valid UTF-8 text`);
    return v;
  }
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) throw new RestRequestError(`ERR argument ${i} is not a finite number`);
    return String(v);
  }
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  throw new RestRequestError(`ERR argument ${i} must be a string or a number, got ${v === null ? 'null' : Array.isArray(v) ? 'an array' : typeof v}`);
}

const LONE_SURROGATE = /\p{Cs}/u;

/** A command given as a JSON array (`["SET", "k", "v", "EX", 100]`) as its words; throws RestRequestError. */
export function commandOf(v: unknown, what = 'the request body'): string[] {
  if (!Array.isArray(v)) throw new RestRequestError(`ERR ${what} must be a JSON array of a command and its arguments, e.g. ["SET","k","v"]`);
  if (v.length === 0) throw new RestRequestError(`ERR ${what} is an empty command`);
  const words = new Array<string>(v.length);
  for (let i = 0; i < v.length; i++) words[i] = word(v[i], i);
  return words;
}

/** A pipeline's or block's commands (a JSON array of JSON arrays), all checked before any runs. */
export function commandsOf(v: unknown): string[][] {
  if (!Array.isArray(v) || v.length === 0)
    throw new RestRequestError('ERR the request body must be a non-empty JSON array of commands, e.g. [["SET","k","v"],["GET","k"]]');
  return v.map((c, i) => commandOf(c, `command ${i + 1}`));
}

export class RestRunner {
  readonly table: CommandTable = buildTable([]);
  readonly view: ServerView;
  private nextId = 1;
  private readonly stats = { commands: 0, connections: 0 };
  private readonly execCmd: Command;

  constructor(private readonly opts: RestOptions) {
    const stats = this.stats;
    this.view = {
      startedAt: Date.now(),
      get port() {
        return opts.port();
      },
      version: opts.version,
      storeName: opts.storeName,
      maxBlockMs: REST_MAX_BLOCK_MS,
      // A request is no connection: there is none to list or to close.
      clients: () => [],
      kill: () => 0,
      stats,
    };
    this.execCmd = Multi.commands((c) => (c.session as RestSession).multi).find((c) => c.name === 'exec')!;
  }

  private session(caller: Caller): RestSession {
    return new RestSession(this.nextId++, caller);
  }

  /** The command `words` name, checked for the caller's role; an ErrorReply when it may not run. */
  private check(words: readonly string[], caller: Caller): Command | ErrorReply {
    const cmd = resolve(this.table, words);
    if (cmd instanceof ErrorReply) {
      const instead = CONNECTION_ONLY.get(words[0]!.toLowerCase());
      return instead === undefined ? cmd : new ErrorReply(`ERR '${words[0]!.toLowerCase()}' is not available over REST: ${instead}`);
    }
    const need = roleOf(cmd);
    // The route itself admitted a read token: a command that only reads needs no second look.
    if (need !== 'read' && !caller.may(need)) return new NoPerm(`NOPERM this token may not run the '${cmd.name}' command (it needs a ${need} token)`);
    return cmd;
  }

  /**
   * Starts one command: its reply when it had one at once, a promise of it,
   * or Issued when its store work is all issued and only durability is
   * pending. Never rejects: a failure is its ErrorReply (dispatch.ts).
   */
  private start(words: string[], s: RestSession): Reply | Promise<Reply | undefined> | Issued {
    this.stats.commands++;
    const cmd = this.check(words, s.caller);
    if (cmd instanceof ErrorReply) return cmd;
    s.lastCommand = cmd.name;
    const r = execute(cmd, this.call(words, s), this.opts.log);
    if (r instanceof Issued || r instanceof Promise) return r;
    return r ?? null;
  }

  /** `start` for Store.together, which passes the session (the owner) and the command. */
  private readonly startIn = (s: RestSession, words: string[]): Reply | Promise<Reply | undefined> | Issued => this.start(words, s);

  private call(args: string[], session: Session): Call {
    return { store: this.opts.store, args, session, server: this.view };
  }

  /** One command; its reply (an ErrorReply when it failed), at once when the command had it. */
  run(words: string[], caller: Caller): Reply | Promise<Reply | undefined> {
    const r = this.start(words, this.session(caller));
    return r instanceof Issued ? r.reply : r;
  }

  /**
   * Each command on its own, in order: one failing does not stop the next.
   * As on a RESP connection (listener.ts), a command that must wait is
   * awaited before the next starts, so each sees the effects of those
   * before it; one whose store work is issued (Issued) lets the next start
   * at once, so the pipeline's writes share the log's group commits, and
   * on the log store its batches (Store.together). The answers are in
   * command order whatever order they settle in.
   */
  async pipeline(cmds: string[][], caller: Caller): Promise<Reply[]> {
    const s = this.session(caller);
    const out = new Array<Reply | Promise<Reply | undefined>>(cmds.length);
    let oldest = 0;
    const store = this.opts.store;
    for (let i = 0; i < cmds.length; i++) {
      // The session owns the pipeline's writes: those decided at once may share a batch of the log.
      const r = store.together(s, this.startIn, cmds[i]!);
      if (r instanceof Issued) {
        out[i] = r.reply;
        // Bounded like a RESP connection's replies owed: a long pipeline does not queue all its writes at once.
        if (i - oldest >= MAX_IN_FLIGHT) await out[oldest++];
      } else out[i] = r instanceof Promise ? ((await r) ?? null) : r;
    }
    const replies = new Array<Reply>(out.length);
    for (let i = 0; i < out.length; i++) {
      const r = out[i]!;
      replies[i] = (r instanceof Promise ? await r : r) ?? null;
    }
    return replies;
  }

  /**
   * The commands as one MULTI/EXEC block, through the same Multi as a RESP
   * connection's: queued, then EXEC. A command refused before it runs
   * (unknown, wrong arity, beyond the token's role) aborts the block, as in
   * Redis: nothing runs and the answer is EXECABORT naming it.
   */
  async multiExec(cmds: string[][], caller: Caller): Promise<Reply[] | ErrorReply> {
    const s = this.session(caller);
    s.multi.active = true;
    for (let i = 0; i < cmds.length; i++) {
      const words = cmds[i]!;
      const cmd = this.check(words, caller);
      if (cmd instanceof ErrorReply) {
        s.multi.clear();
        const text = `EXECABORT Transaction discarded because of previous errors: command ${i + 1}: ${cmd.text}`;
        return cmd instanceof NoPerm ? new NoPerm(text) : new ErrorReply(text);
      }
      s.multi.queue(cmd, words);
    }
    this.stats.commands += cmds.length;
    const r = await settle(execute(this.execCmd, this.call(['exec'], s), this.opts.log));
    if (Array.isArray(r)) return r;
    // EXEC answers an array unless the block was aborted; no WATCH can abort one sent whole.
    return r instanceof ErrorReply ? r : new ErrorReply('ERR the block did not run');
  }
}

// ---- replies as Upstash's JSON ------------------------------------------------------

const b64 = (s: string): string => Buffer.from(s, 'utf8').toString('base64');

/**
 * The JSON text of a reply in RESP2 shapes: a map is a flat array, a set an
 * array, a double its text, a boolean 1 or 0. With `base64`, every string is
 * the base64 of its UTF-8 bytes except the status reply OK, which
 * @upstash/redis reads as is; a bigint is written as the integer it is.
 */
export function replyJson(r: Reply, base64: boolean): string {
  if (typeof r === 'string') return base64 ? `"${b64(r)}"` : JSON.stringify(r);
  if (typeof r === 'number') return Number.isFinite(r) ? String(r) : JSON.stringify(String(r));
  if (typeof r === 'bigint') return r.toString();
  if (r === null || r === NULL_ARRAY) return 'null';
  if (typeof r === 'boolean') return r ? '1' : '0';
  if (Array.isArray(r)) return arrayJson(r, base64);
  if (r instanceof Simple) return base64 && r.text !== 'OK' ? `"${b64(r.text)}"` : JSON.stringify(r.text);
  if (r instanceof ErrorReply) return base64 ? `"${b64(r.text)}"` : JSON.stringify(r.text);
  if (Buffer.isBuffer(r)) return base64 ? `"${r.toString('base64')}"` : JSON.stringify(r.toString('utf8'));
  if (r instanceof Dbl) return replyJson(doubleText(r.value), base64);
  if (r instanceof MapReply) return arrayJson(r.entries.flat(), base64);
  if (r instanceof SetReply) return arrayJson(r.items, base64);
  return arrayJson(r.items, base64);
}

function arrayJson(items: readonly Reply[], base64: boolean): string {
  let s = '[';
  for (let i = 0; i < items.length; i++) s += (i === 0 ? '' : ',') + replyJson(items[i]!, base64);
  return s + ']';
}

/** One entry of a pipeline's or block's answer: `{"result": …}` or `{"error": "…"}` (errors never base64). */
export function entryJson(r: Reply, base64: boolean): string {
  return r instanceof ErrorReply ? `{"error":${JSON.stringify(r.text)}}` : `{"result":${replyJson(r, base64)}}`;
}
