/**
 * The RESP listener (docs/redis.md): a TCP (or TLS) server whose connections
 * parse commands, check authentication and roles, run each command from the
 * table in order, and write the replies in the connection's protocol. One
 * connection runs one command at a time, so pipelined commands are answered
 * in order; a client that does not read its replies is stopped from reading
 * more (soft bound) and closed past the hard one.
 */
import { isUtf8 } from 'node:buffer';
import net from 'node:net';
import tls from 'node:tls';
import type { Store } from '../store/store.js';
import { type Authenticator, type AuthResult, holds } from '../http/auth.js';
import type { TlsMaterial } from '../tls.js';
import type { Call, Command, ServerView, Session } from './command.js';
import { decode, execute, resolve, roleOf } from './dispatch.js';
import { Multi } from './multi.js';
import { ConnSubscriptions, pubsubCommands } from './resp-pubsub.js';
import { encode, ErrorReply, Issued, MapReply, OK, Parser, ProtocolError, type Reply, Simple } from './resp.js';
import { buildTable, type CommandTable } from './table.js';

export interface RespOptions {
  store: Store;
  auth: Authenticator;
  tls?: TlsMaterial;
  /** Largest bulk string (the HTTP API's --max-body-bytes). */
  maxBulk: number;
  maxConnections: number;
  version: string;
  storeName: string;
  log: (level: 'info' | 'warn' | 'error', msg: string) => void;
}

/** Documented bounds (docs/redis.md, "Limits"). */
export const LIMITS = {
  maxArgs: 1024 * 1024,
  /** Pending replies above this: the connection's socket is not read until they drain. */
  softOutputBytes: 16 * 1024 * 1024,
  /** Pending replies above this: the connection is closed (Redis's client-output-buffer-limit). */
  hardOutputBytes: 256 * 1024 * 1024,
  /** A connection that has not authenticated within this long is closed. */
  authTimeoutMs: 10_000,
  /** Input received without a whole command in it: past this (or 2 × --max-body-bytes + 1 MiB if larger) the connection is closed (Redis's client-query-buffer-limit). */
  queryBytes: 64 * 1024 * 1024,
} as const;

/** Input waiting while a command runs: past this the socket is not read until the commands before have run. */
const INPUT_PAUSE_BYTES = 1024 * 1024;

/** Replies a connection may owe at once (pipelined commands whose durability is pending) before it stops reading. */
const MAX_IN_FLIGHT = 1024;

interface Slot {
  done: boolean;
  value: Reply | undefined;
  /** Settles once the reply is there; undefined for a reply that was there at once. */
  settled: Promise<void> | undefined;
}

const NOAUTH = new ErrorReply('NOAUTH Authentication required.');
const WRONGPASS = new ErrorReply('WRONGPASS invalid username-password pair or user is disabled.');

/** One client connection: its session state, parser and reply queue. */
class Conn implements Session {
  readonly id: number;
  proto: 2 | 3 = 2;
  name = '';
  user: string | undefined;
  role: 'read' | 'write' | 'admin' | undefined;
  /** The secret the connection authenticated with, checked again for each command's role (tokens reload on SIGHUP). */
  token: string | undefined;
  readonly addr: string;
  readonly createdAt = Date.now();
  private readonly abort = new AbortController();
  readonly gone = this.abort.signal;
  lastCommand = 'NULL';
  readonly multi = new Multi();
  /** Pub/sub (resp-pubsub.ts): messages are written as they come, past the hard output bound the connection closes. */
  readonly pubsub = new ConnSubscriptions(
    (r) => this.write(r),
    () => this.unread > LIMITS.hardOutputBytes,
    () => this.close(),
  );
  private readonly parser: Parser;
  private running = false;
  private closed = false;
  /** QUIT or a protocol error: no more commands; the connection ends once the replies before are out. */
  private quitting = false;
  private authTimer: NodeJS.Timeout | undefined;

  constructor(
    readonly socket: net.Socket,
    readonly server: RespServer,
    id: number,
  ) {
    this.id = id;
    this.addr = `${socket.remoteAddress}:${socket.remotePort}`;
    this.parser = new Parser({ maxArgs: LIMITS.maxArgs, maxBulk: server.opts.maxBulk });
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.received(chunk));
    socket.on('close', () => this.close());
    socket.on('error', () => this.close());
    this.authTimer = setTimeout(() => {
      if (this.user === undefined) socket.destroy();
    }, LIMITS.authTimeoutMs);
  }

  /**
   * Bytes from the client: parsed and run in order. While a command is
   * running, more than INPUT_PAUSE_BYTES waiting stops reading the socket
   * until the commands before have run; more than LIMITS.queryBytes of one
   * unfinished frame closes the connection (Redis's client-query-buffer-limit).
   */
  private received(chunk: Buffer): void {
    if (this.quitting || this.closed) return;
    this.parser.push(chunk);
    const limit = Math.max(LIMITS.queryBytes, 2 * this.server.opts.maxBulk + INPUT_PAUSE_BYTES);
    if (this.parser.pending > limit) {
      this.server.opts.log('warn', `RESP client ${this.addr} closed: ${this.parser.pending} bytes of input without a whole command`);
      this.enqueue(new ErrorReply(`ERR Protocol error: more than ${limit} bytes of input without a whole command`));
      this.quitting = true;
      this.pump(true);
      return;
    }
    if (this.running && this.parser.pending > INPUT_PAUSE_BYTES) this.socket.pause();
    this.drain().catch((err: unknown) => {
      this.server.opts.log('error', `RESP connection ${this.addr} closed after an unexpected failure: ${String((err as Error)?.stack ?? err)}`);
      this.close();
    });
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.authTimer);
    this.pubsub.clear();
    this.abort.abort();
    this.socket.destroy();
    this.server.forget(this);
  }

  /**
   * Runs every whole command received, in order. A command that must wait
   * (its store work is not all issued yet) is awaited before the next one
   * starts; one whose store work is all issued (Issued: it only waits for
   * durability, as a group commit does) lets the next one start at once, so
   * a pipeline of them shares the log's group commits, and on the log store
   * its batches (Store.together). Replies go out in command order whatever
   * order they complete in.
   */
  private async drain(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      while (!this.quitting) {
        let args: Buffer[] | undefined;
        try {
          args = this.parser.next();
        } catch (err) {
          if (!(err instanceof ProtocolError)) throw err;
          this.enqueue(new ErrorReply(`ERR Protocol error: ${err.message}`));
          this.quitting = true;
          break;
        }
        if (args === undefined) break;
        // The connection owns its writes: a pipeline's writes decided at once may share a batch of the log.
        const reply = this.server.opts.store.together(this, Conn.runIn, args);
        if (reply instanceof Issued) {
          this.enqueue(reply.reply);
          if (this.slots.length > MAX_IN_FLIGHT && !this.slots[0]!.done) await this.slots[0]!.settled;
        } else if (reply instanceof Promise) {
          this.pump(true);
          await this.enqueue(reply).settled;
        } else this.enqueue(reply);
        if (this.closed) return;
        if (this.pendingBytes > 64 * 1024) this.flush();
        if (this.socket.writableLength > LIMITS.hardOutputBytes) {
          this.server.opts.log('warn', `RESP client ${this.addr} closed: ${this.socket.writableLength} bytes of replies unread`);
          this.close();
          return;
        }
        if (this.socket.writableLength > LIMITS.softOutputBytes) {
          // Stop taking commands until the client has read what is pending.
          this.socket.pause();
          await new Promise<void>((resolve) => this.socket.once('drain', resolve).once('close', resolve));
          this.socket.resume();
        }
      }
    } finally {
      this.running = false;
      if (!this.closed) {
        this.pump(true);
        // Stopped reading while commands ran (received) or for good (QUIT, a protocol error).
        if (this.quitting) this.socket.pause();
        else this.socket.resume();
      }
    }
  }

  /** Replies in command order, each settled or not yet. */
  private slots: Slot[] = [];
  /** Replies encoded and not yet handed to the socket: a pipeline's answers go out in one write. */
  private pending: Array<string | Buffer> = [];
  private pendingBytes = 0;

  private enqueue(r: Reply | undefined | Promise<Reply | undefined>): Slot {
    const slot: Slot = { done: false, value: undefined, settled: undefined };
    this.slots.push(slot);
    if (r instanceof Promise) {
      slot.settled = r.then((v) => {
        slot.done = true;
        slot.value = v;
        // Outside the loop nothing else would send it.
        if (!this.running) this.sendSoon();
      });
    } else {
      slot.done = true;
      slot.value = r;
    }
    return slot;
  }

  private sendPending = false;

  /**
   * Sends the settled replies once the promises settling now have all run:
   * a group commit settles a pipeline's writes together, and their replies
   * go out in one socket write, not one each. A tick queued from a promise
   * callback runs after every callback queued with it.
   */
  private sendSoon(): void {
    if (this.sendPending) return;
    this.sendPending = true;
    process.nextTick(() => {
      this.sendPending = false;
      if (!this.running && !this.closed) this.pump(true);
    });
  }

  /** Encodes the settled replies at the head of the queue; `send` hands them to the socket. */
  private pump(send: boolean): void {
    let i = 0;
    const slots = this.slots;
    while (i < slots.length && slots[i]!.done) {
      const v = slots[i]!.value;
      if (v !== undefined) {
        const before = this.pending.length;
        encode(v, this.proto, this.pending);
        for (let j = before; j < this.pending.length; j++) this.pendingBytes += this.pending[j]!.length;
      }
      i++;
    }
    if (i > 0) slots.splice(0, i);
    if (send) this.flush();
  }

  /** An out-of-band reply (a pub/sub message): after the replies already settled, before those still owed. */
  write(r: Reply): void {
    this.pump(false);
    const before = this.pending.length;
    encode(r, this.proto, this.pending);
    for (let j = before; j < this.pending.length; j++) this.pendingBytes += this.pending[j]!.length;
    // Messages published together (a publisher's pipeline, a burst from the bus) go out in one write.
    if (this.outOfBandPending) return;
    this.outOfBandPending = true;
    process.nextTick(() => {
      this.outOfBandPending = false;
      if (!this.closed) this.flush();
    });
  }

  private outOfBandPending = false;

  /** Bytes of replies owed to the client: in the socket's buffer, and encoded but not yet handed to it. */
  get unread(): number {
    return this.socket.writableLength + this.pendingBytes;
  }

  private flush(): void {
    this.pump(false);
    const out = this.pending;
    if (out.length > 0) {
      this.pending = [];
      this.pendingBytes = 0;
      if (out.every((x) => typeof x === 'string')) this.socket.write(out.join(''));
      else {
        this.socket.cork();
        for (const x of out) this.socket.write(x);
        this.socket.uncork();
      }
    }
    if (this.quitting && this.slots.length === 0 && !this.closed) {
      this.closed = true;
      this.socket.end();
      this.server.forget(this);
    }
  }

  /** `c.run(raw)`, for Store.together. */
  private static runIn(this: void, c: Conn, raw: Buffer[]): Reply | undefined | Promise<Reply | undefined> | Issued {
    return c.run(raw);
  }

  /** One command: decoded, checked, run; resolves to its reply (undefined: nothing to send). */
  private run(raw: Buffer[]): Reply | undefined | Promise<Reply | undefined> | Issued {
    this.server.stats.commands++;
    let words = decode(raw);
    let bytes: Buffer[] | undefined;
    if (words instanceof ErrorReply) {
      // Bytes that are not UTF-8 only for a command that answers them as sent; inside MULTI only text is queued.
      if (this.multi.active || !isUtf8(raw[0]!) || this.server.table.get(raw[0]!.toString().toLowerCase())?.bytes !== true) return this.fail(words);
      words = raw.map((b) => b.toString('latin1'));
      bytes = raw;
    }
    const cmd = resolve(this.server.table, words);
    if (cmd instanceof ErrorReply) {
      this.server.count('unknown', true);
      return this.fail(cmd);
    }
    if (this.user === undefined && !cmd.flags.includes('noauth')) return this.fail(NOAUTH);
    this.lastCommand = cmd.name;
    const denied = this.denied(cmd) ?? this.pubsub.refusal(cmd.name, words[1], this.proto);
    if (denied !== undefined) return this.fail(denied);
    if (this.multi.active && !Multi.RUNS_NOW.has(cmd.name)) return this.multi.queue(cmd, words);
    const pong = cmd.name === 'ping' ? this.pubsub.subscribedPing(words, this.proto, bytes) : undefined;
    if (pong !== undefined) return this.server.count(cmd.name, false, pong);
    const server = this.server;
    return execute(cmd, { store: server.opts.store, args: words, raw: bytes, session: this, server: server.view }, server.opts.log, (x) =>
      server.count(cmd.name, x instanceof ErrorReply, x),
    );
  }

  /** A command refused before it runs; inside MULTI it also makes EXEC fail, as in Redis. */
  private fail(e: ErrorReply): Reply {
    if (this.multi.active) this.multi.dirty = true;
    return e;
  }

  /** The tokens' generation (Authenticator.generation) in which the connection's token last held `checked`; -1: never checked. */
  private checkedIn = -1;
  private checked: AuthResult | undefined;

  /**
   * Why the connection's token may not run `cmd`, if it may not. The token
   * is looked up again only when the tokens were reloaded since the last
   * look (a reload may remove it or change its role), not per command.
   */
  private denied(cmd: Command): ErrorReply | undefined {
    if (this.token === undefined || cmd.flags.includes('noauth')) return undefined;
    const auth = this.server.opts.auth;
    if (this.checkedIn !== auth.generation) {
      this.checked = auth.check(this.token, 'read', 'RESP', cmd.name);
      this.checkedIn = auth.generation;
      // A reload may have changed the token's role: what CLIENT LIST shows it follows.
      if (this.checked.ok) this.role = this.checked.role as 'read' | 'write' | 'admin';
    }
    const need = roleOf(cmd);
    const r = this.checked!;
    if (holds(r, need)) return undefined;
    if (!r.ok) {
      // The token was removed by a reload: the connection is no longer authenticated.
      this.user = undefined;
      this.token = undefined;
      this.checkedIn = -1;
      return NOAUTH;
    }
    return new ErrorReply(`NOPERM this token may not run the '${cmd.name}' command (it needs a ${need} token)`);
  }

  /** AUTH [name] token: the main secret (name 'default' or 'main') or a named token of the tokens file. */
  authenticate(args: readonly string[]): Reply {
    const token = args[args.length - 1]!;
    const name = args.length === 3 ? args[1]! : undefined;
    const latin1 = Buffer.from(token, 'utf8').toString('latin1');
    const r = this.server.opts.auth.check(latin1, 'read', 'RESP', 'AUTH');
    if (!r.ok) return WRONGPASS;
    // 'default' is the user clients name when they were given only a password (HELLO's AUTH needs one): any token.
    if (name !== undefined && name !== 'default' && name !== r.name) return WRONGPASS;
    this.user = r.name;
    this.token = latin1;
    this.checkedIn = -1;
    const auth = this.server.opts.auth;
    this.role = auth.check(latin1, 'admin', 'RESP', 'AUTH').ok ? 'admin' : auth.check(latin1, 'write', 'RESP', 'AUTH').ok ? 'write' : 'read';
    clearTimeout(this.authTimer);
    return OK;
  }

  hello(args: readonly string[]): Reply {
    let proto: 2 | 3 = this.proto;
    let i = 1;
    if (args.length > 1) {
      const v = args[1]!;
      if (!/^-?\d+$/.test(v)) return new ErrorReply('ERR Protocol version is not an integer or out of range');
      if (v !== '2' && v !== '3') return new ErrorReply('NOPROTO unsupported protocol version');
      proto = v === '3' ? 3 : 2;
      i = 2;
    }
    let setName: string | undefined;
    for (; i < args.length; i++) {
      const w = args[i]!.toUpperCase();
      if (w === 'AUTH' && i + 2 < args.length) {
        const r = this.authenticate(['auth', args[i + 1]!, args[i + 2]!]);
        if (r !== OK) return r;
        i += 2;
      } else if (w === 'SETNAME' && i + 1 < args.length) setName = args[++i]!;
      else return new ErrorReply(`ERR Syntax error in HELLO option '${args[i]}'`);
    }
    if (this.user === undefined)
      return new ErrorReply(
        'NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time',
      );
    this.proto = proto;
    if (setName !== undefined) this.name = setName;
    return new MapReply([
      ['server', 'redis'],
      ['version', '7.0.0'],
      ['proto', proto],
      ['id', this.id],
      ['mode', 'standalone'],
      ['role', 'master'],
      ['modules', []],
    ]);
  }

  reset(): Reply {
    this.proto = 2;
    this.name = '';
    this.user = undefined;
    this.token = undefined;
    // Unauthenticated again: bounded as a new connection is.
    clearTimeout(this.authTimer);
    this.authTimer = setTimeout(() => {
      if (this.user === undefined) this.socket.destroy();
    }, LIMITS.authTimeoutMs);
    this.multi.clear();
    this.pubsub.clear();
    return new Simple('RESET');
  }

  /** QUIT: answers OK after every reply before it, then closes. */
  quit(): Reply {
    this.quitting = true;
    return OK;
  }
}

const sessionOf = (c: Call): Conn => c.session as Conn;

/** The commands that act on the connection itself. */
const SESSION_COMMANDS: Command[] = [
  {
    name: 'auth',
    arity: -2,
    flags: ['noauth', 'fast', 'loading', 'stale'],
    keys: [0, 0, 0],
    summary: 'AUTH [name] token',
    run: (c) => (c.args.length > 3 ? new ErrorReply('ERR syntax error') : sessionOf(c).authenticate(c.args)),
  },
  {
    name: 'hello',
    arity: -1,
    flags: ['noauth', 'fast', 'loading', 'stale'],
    keys: [0, 0, 0],
    summary: 'HELLO [2|3] [AUTH name token] [SETNAME name]',
    run: (c) => sessionOf(c).hello(c.args),
  },
  { name: 'quit', arity: -1, flags: ['noauth', 'fast', 'loading', 'stale'], keys: [0, 0, 0], summary: 'close the connection', run: (c) => sessionOf(c).quit() },
  {
    name: 'reset',
    arity: 1,
    flags: ['noauth', 'fast', 'loading', 'stale'],
    keys: [0, 0, 0],
    summary: 'back to a new connection state',
    run: (c) => sessionOf(c).reset(),
  },
  ...Multi.commands((c) => sessionOf(c).multi),
  ...pubsubCommands((c) => sessionOf(c).pubsub),
];

/** Every command the listener answers: the families and the session's own. */
export const COMMANDS: CommandTable = buildTable(SESSION_COMMANDS);

export class RespServer {
  readonly table: CommandTable = COMMANDS;
  readonly server: net.Server;
  private readonly conns = new Set<Conn>();
  private nextId = 1;
  readonly stats = { commands: 0, connections: 0 };
  readonly view: ServerView;
  private port = 0;

  constructor(readonly opts: RespOptions) {
    const accept = (socket: net.Socket): void => {
      this.stats.connections++;
      const c = new Conn(socket, this, this.nextId++);
      this.conns.add(c);
    };
    this.server = opts.tls === undefined ? net.createServer(accept) : tls.createServer({ cert: opts.tls.cert, key: opts.tls.key }, accept);
    this.server.maxConnections = opts.maxConnections;
    const self = this;
    this.view = {
      startedAt: Date.now(),
      get port() {
        return self.port;
      },
      version: opts.version,
      storeName: opts.storeName,
      maxBlockMs: Infinity,
      maxValueBytes: opts.maxBulk,
      clients: () => [...this.conns],
      kill: (pred) => {
        let n = 0;
        for (const c of [...this.conns])
          if (pred(c)) {
            c.close();
            n++;
          }
        return n;
      },
      stats: this.stats,
    };
  }

  /** Commands answered and errors, by the table's names (/metrics); passes `r` through. */
  readonly commands = new Map<string, { calls: number; errors: number }>();
  count<R>(name: string, error: boolean, r?: R): R | undefined {
    let c = this.commands.get(name);
    if (c === undefined) this.commands.set(name, (c = { calls: 0, errors: 0 }));
    c.calls++;
    if (error) c.errors++;
    return r;
  }

  get connections(): number {
    return this.conns.size;
  }

  forget(c: Conn): void {
    this.conns.delete(c);
  }

  listen(port: number, host: string): Promise<number> {
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, host, () => {
        this.server.off('error', reject);
        this.port = (this.server.address() as net.AddressInfo).port;
        resolve(this.port);
      });
    });
  }

  /** Stops accepting and closes every connection (blocked commands take nothing). */
  close(): Promise<void> {
    for (const c of [...this.conns]) c.close();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}
