/**
 * The Upstash REST routes under /redis (docs/redis-rest.md): what
 * @upstash/redis and curl send, carried to the command table through
 * src/redis/upstash.ts and answered in Upstash's wire format, not the
 * envelope: `{"result": …}`, an array of them for a pipeline or a block,
 * and `{"error": "…"}` for a refusal. The routes are in the route table
 * (routes.ts, `upstash: true`), so limits, CORS, metrics, the access log
 * and /openapi.json apply to them as to any other.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { exceedsDepth, MAX_DEPTH } from '../store/json.js';
import { type Authenticated, type AuthResult, holds } from './auth.js';
import { closeIfBodyPending } from './envelope.js';
import type { Ctx } from './context.js';
import { encode, ErrorReply, type Reply } from '../redis/resp.js';
import { HUB, type Subscriber } from '../redis/pubsub.js';
import { type Caller, commandOf, commandsOf, entryJson, NoPerm, replyJson, RestRequestError, type RestRunner } from '../redis/upstash.js';

/** What the REST routes need beside the store: the runner over the command table (server.ts checks the token). */
export interface RedisRest {
  runner: RestRunner;
}

const JSON_TYPE = 'application/json; charset=utf-8';
const NOT_SERVED = 'ERR the Redis REST protocol is not served by this server';
const RESP_TYPE = 'application/octet-stream';

/** `{"error": message}` with `status`; what every refusal on these routes looks like (server.ts uses it too). */
export function sendUpstashError(res: ServerResponse, status: number, message: string, extra?: readonly string[]): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  closeIfBodyPending(res);
  send(res, status, `{"error":${JSON.stringify(message)}}`, JSON_TYPE, extra);
}

/** A token refused on these routes (server.ts): Authenticator's messages name Auth-Token, these routes take Bearer too. */
export function refuseUpstash(res: ServerResponse, status: number, message: string): void {
  const m = message.startsWith('missing')
    ? 'missing token: send Authorization: Bearer <token> (or Auth-Token)'
    : message === 'wrong Auth-Token'
      ? 'wrong token'
      : message;
  sendUpstashError(res, status, m);
}

function send(res: ServerResponse, status: number, body: string | Buffer, type: string, extra?: readonly string[]): void {
  const headers = ['Content-Type', type, 'Content-Length', String(typeof body === 'string' ? Buffer.byteLength(body) : body.length)];
  if (extra !== undefined) headers.push(...extra);
  res.writeHead(status, headers);
  res.end(body);
}

/** The token a request carries: Auth-Token, else `Authorization: Bearer <token>` (what @upstash/redis sends). */
export function restToken(req: IncomingMessage): string | undefined {
  const t = req.headers['auth-token'];
  if (t !== undefined) return t as string;
  const a = req.headers.authorization;
  if (a === undefined || a.length < 7 || a.slice(0, 7).toLowerCase() !== 'bearer ') return undefined;
  return a.slice(7).trim();
}

/** How the client wants its answers: Upstash-Encoding and Upstash-Response-Format. */
interface Format {
  base64: boolean;
  resp2: boolean;
}

const PLAIN: Format = { base64: false, resp2: false };
const BASE64: Format = { base64: true, resp2: false };

function formatOf(req: IncomingMessage): Format {
  const enc = req.headers['upstash-encoding'] as string | undefined;
  const fmt = req.headers['upstash-response-format'] as string | undefined;
  if (fmt === undefined && enc === undefined) return PLAIN;
  const base64 = enc !== undefined && enc.toLowerCase() === 'base64';
  if (enc !== undefined && !base64)
    throw new RestRequestError(`ERR Upstash-Encoding '${enc.slice(0, 40)}' is not supported: send base64, or no Upstash-Encoding for plain text`);
  const f = fmt === undefined ? 'json' : fmt.toLowerCase();
  if (f !== 'json' && f !== 'resp2')
    throw new RestRequestError(`ERR Upstash-Response-Format '${f.slice(0, 40)}' is not supported: json (the default) or resp2`);
  return f === 'resp2' ? { base64: false, resp2: true } : base64 ? BASE64 : PLAIN;
}

/**
 * The caller, for the runner: what server.ts found for its token (on the
 * request, Authenticated), so a command's role is checked without checking
 * the token again. Its abort signal is made only when a command asks for it.
 */
class HttpCaller implements Caller {
  private ctl: AbortController | undefined;
  constructor(
    private readonly who: AuthResult,
    private readonly res: ServerResponse,
  ) {}
  get name(): string {
    return this.who.ok ? this.who.name : '';
  }
  may(role: 'write' | 'admin'): boolean {
    return holds(this.who, role);
  }
  get addr(): string {
    const s = this.res.req.socket;
    return `${s.remoteAddress}:${s.remotePort}`;
  }
  get gone(): AbortSignal {
    if (this.ctl === undefined) {
      const ctl = (this.ctl = new AbortController());
      if (this.res.closed) ctl.abort();
      else this.res.once('close', () => ctl.abort());
    }
    return this.ctl.signal;
  }
}

/** The caller of a request server.ts admitted to an Upstash route. */
function callerOf(res: ServerResponse): HttpCaller {
  const who = (res.req as IncomingMessage & Partial<Authenticated>).who;
  // server.ts sets it before any Upstash handler runs; without it, the request has no role.
  return new HttpCaller(who ?? NOBODY, res);
}

const NOBODY: AuthResult = Object.freeze({ ok: false, status: 401, message: 'missing token' });

function parseJson(raw: string): unknown {
  if (raw.length === 0) throw new RestRequestError('ERR the request body is empty: send a JSON array, e.g. ["GET","k"]');
  if (exceedsDepth(raw, MAX_DEPTH)) throw new RestRequestError(`ERR the request body nests deeper than ${MAX_DEPTH} levels`);
  try {
    return JSON.parse(raw);
  } catch (err) {
    throw new RestRequestError(`ERR the request body is not valid JSON: ${(err as Error).message}`);
  }
}

/** A handler's work; a RestRequestError becomes its 400, anything else what server.ts makes of it. */
async function answer(ctx: Ctx, res: ServerResponse, work: (rest: RedisRest, caller: Caller, f: Format) => Promise<void>): Promise<void> {
  const rest = ctx.redis;
  if (rest === undefined) return sendUpstashError(res, 503, NOT_SERVED);
  try {
    const f = formatOf(res.req);
    await work(rest, callerOf(res), f);
  } catch (err) {
    if (!(err instanceof RestRequestError)) throw err;
    sendUpstashError(res, 400, err.message);
  }
}

/** One command's answer: 200 `{"result"}`, 400 `{"error"}`, 403 for a token that may not run it. */
function sendReply(res: ServerResponse, r: Reply, f: Format): void {
  if (f.resp2) return send(res, r instanceof ErrorReply ? 400 : 200, respBytes([r]), RESP_TYPE);
  if (r instanceof ErrorReply) return sendUpstashError(res, r instanceof NoPerm ? 403 : 400, r.text);
  send(res, 200, `{"result":${replyJson(r, f.base64)}}`, JSON_TYPE);
}

function respBytes(rs: readonly Reply[]): Buffer {
  const out: Array<string | Buffer> = [];
  for (const r of rs) encode(r, 2, out);
  return Buffer.concat(out.map((x) => (typeof x === 'string' ? Buffer.from(x, 'utf8') : x)));
}

function sendEntries(res: ServerResponse, rs: readonly Reply[], f: Format): void {
  if (f.resp2) return send(res, 200, respBytes(rs), RESP_TYPE);
  let s = '[';
  for (let i = 0; i < rs.length; i++) s += (i === 0 ? '' : ',') + entryJson(rs[i]!, f.base64);
  send(res, 200, s + ']', JSON_TYPE);
}

/**
 * POST /redis: `["SET","k","v"]`. The route of every single command
 * @upstash/redis sends without auto-pipelining: a reply the command had at
 * once is sent without a promise, and one that waits costs one `then`.
 */
export function redisCommand(ctx: Ctx, _name: string, _body: unknown, res: ServerResponse, raw: string): void | Promise<void> {
  const rest = ctx.redis;
  if (rest === undefined) return sendUpstashError(res, 503, NOT_SERVED);
  let f: Format;
  let r: Reply | Promise<Reply | undefined>;
  try {
    f = formatOf(res.req);
    r = rest.runner.run(commandOf(parseJson(raw)), callerOf(res));
  } catch (err) {
    if (!(err instanceof RestRequestError)) throw err;
    return sendUpstashError(res, 400, err.message);
  }
  if (!(r instanceof Promise)) return sendReply(res, r, f);
  return r.then((x) => sendReply(res, x ?? null, f));
}

/** One path segment, percent-decoded as UTF-8 (node:http hands raw bytes over one per char). */
function segment(seg: string, i: number): string {
  try {
    return decodeURIComponent(/[^\x00-\x7f]/.test(seg) ? Buffer.from(seg, 'latin1').toString('utf8') : seg);
  } catch {
    throw new RestRequestError(`ERR path segment ${i + 1} is not valid percent-encoded UTF-8`);
  }
}

/** GET|POST /redis/<command>/<arg>/…: the segments are the words; a POST's body, when there is one, is the last. */
export function redisPath(ctx: Ctx, path: string, _body: unknown, res: ServerResponse, raw: string): Promise<void> {
  return answer(ctx, res, async (rest, caller, f) => {
    const words = path.split('/').map(segment);
    if (words[0] === '') throw new RestRequestError('ERR no command in the path: /redis/<command>/<arg>/…');
    if (raw.length > 0) words.push(raw);
    sendReply(res, (await rest.runner.run(commandOf(words), caller)) ?? null, f);
  });
}

/** POST /redis/pipeline: `[["SET","k","v"],["GET","k"]]`, each on its own, answers in order. */
export function redisPipeline(ctx: Ctx, _name: string, _body: unknown, res: ServerResponse, raw: string): Promise<void> {
  return answer(ctx, res, async (rest, caller, f) => sendEntries(res, await rest.runner.pipeline(commandsOf(parseJson(raw)), caller), f));
}

/** POST /redis/multi-exec: the same, as one MULTI/EXEC block. */
export function redisMultiExec(ctx: Ctx, _name: string, _body: unknown, res: ServerResponse, raw: string): Promise<void> {
  return answer(ctx, res, async (rest, caller, f) => {
    const r = await rest.runner.multiExec(commandsOf(parseJson(raw)), caller);
    if (r instanceof ErrorReply) return sendReply(res, r, f);
    // In RESP2 the block's answer is EXEC's: one array.
    if (f.resp2) return send(res, 200, respBytes([r]), RESP_TYPE);
    sendEntries(res, r, f);
  });
}

// ---- pub/sub as Server-Sent Events (docs/redis-rest.md, "Pub/sub") ------------------

/** Unread bytes past which a subscriber's stream is closed (Redis's pubsub client-output-buffer-limit); writers never wait for it. */
const MAX_UNREAD = 32 * 1024 * 1024;
/** A comment line this often keeps proxies from closing a quiet stream. */
const HEARTBEAT_MS = 15_000;

/** One SSE stream: each message is one event, `data: message,<channel>,<text>` as @upstash/redis reads it. */
class SseSubscriber implements Subscriber {
  constructor(private readonly res: ServerResponse) {}
  deliver(kind: 'message' | 'pmessage', channel: string, message: string, pattern?: string): void {
    this.event(kind === 'message' ? `message,${channel},${message}` : `pmessage,${pattern},${channel},${message}`);
  }
  /** A multi-line text is several `data:` lines of one event, as SSE has it. */
  event(text: string): void {
    const res = this.res;
    if (res.destroyed) return;
    if (res.writableLength > MAX_UNREAD) {
      res.destroy();
      return;
    }
    res.write(`data: ${text.includes('\n') ? text.split('\n').join('\ndata: ') : text}\n\n`);
  }
}

async function stream(ctx: Ctx, path: string, res: ServerResponse, patterns: boolean): Promise<void> {
  if (ctx.redis === undefined) return sendUpstashError(res, 503, NOT_SERVED);
  let names: string[];
  try {
    names = path.split('/').map(segment);
  } catch (err) {
    if (!(err instanceof RestRequestError)) throw err;
    return sendUpstashError(res, 400, err.message);
  }
  if (names.some((n) => n === '')) return sendUpstashError(res, 400, `ERR an empty ${patterns ? 'pattern' : 'channel'} name in the path`);
  let gone = false;
  let beat: NodeJS.Timeout | undefined;
  const sub = new SseSubscriber(res);
  res.once('close', () => {
    gone = true;
    clearInterval(beat);
    for (const n of names) {
      if (patterns) HUB.punsubscribe(sub, n);
      else HUB.unsubscribe(sub, n);
    }
  });
  // Confirmed only once messages from every node will arrive: a client that waits for the confirmation misses none.
  await HUB.ready();
  if (gone) return;
  // From here to the confirmations nothing yields, so no message can come before the headers.
  for (const n of names) {
    if (patterns) HUB.psubscribe(sub, n);
    else HUB.subscribe(sub, n);
  }
  res.writeHead(200, ['Content-Type', 'text/event-stream; charset=utf-8', 'Cache-Control', 'no-cache']);
  const kind = patterns ? 'psubscribe' : 'subscribe';
  names.forEach((n, i) => sub.event(`${kind},${n},${i + 1}`));
  beat = setInterval(() => res.write(':\n\n'), HEARTBEAT_MS);
}

/** POST /redis/subscribe/<channel>/…: a text/event-stream of the channels' messages until the client leaves. */
export function redisSubscribe(ctx: Ctx, path: string, _body: unknown, res: ServerResponse): Promise<void> {
  return stream(ctx, path, res, false);
}

/** POST /redis/psubscribe/<pattern>/…: the same for glob patterns (`pmessage,<pattern>,<channel>,<text>`). */
export function redisPSubscribe(ctx: Ctx, path: string, _body: unknown, res: ServerResponse): Promise<void> {
  return stream(ctx, path, res, true);
}
