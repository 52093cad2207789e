/**
 * The RESP wire format (docs/redis.md, "Protocol"): a parser that turns the
 * bytes a client sends into commands (arrays of byte strings, or inline
 * commands typed into telnet), and the encoder of replies in RESP2 or RESP3.
 * Nothing here knows a command; the limits are the ones docs/redis.md lists.
 */

/** A reply that is not a plain bulk string, integer, array or null. */
export class Simple {
  constructor(readonly text: string) {}
}
/** An error reply: `text` starts with its code (`ERR`, `WRONGTYPE`, `NOAUTH`, …). */
export class ErrorReply extends Error {
  constructor(readonly text: string) {
    super(text);
  }
}
/** RESP3 double; a bulk string of its text in RESP2. */
export class Dbl {
  constructor(readonly value: number) {}
}
/** RESP3 map; a flat array of key, value, … in RESP2. */
export class MapReply {
  constructor(readonly entries: Array<[Reply, Reply]>) {}
}
/** RESP3 set; an array in RESP2. */
export class SetReply {
  constructor(readonly items: Reply[]) {}
}
/** RESP3 push (pub/sub messages); an array in RESP2. */
export class Push {
  constructor(readonly items: Reply[]) {}
}
/**
 * A handler's answer when every store operation it makes has been issued and
 * what is left is waiting for durability: the connection may start its next
 * command at once (listener.ts), so a pipeline of such commands shares the
 * log's group commits, and their effects still land in command order.
 */
export class Issued {
  constructor(readonly reply: Promise<Reply>) {}
}

/** The null array (`*-1` in RESP2): EXEC aborted by WATCH, a blocking pop that timed out. */
export const NULL_ARRAY = Symbol('null array');

/**
 * A reply: a string is a bulk string (UTF-8), a number or bigint an integer,
 * null the null bulk string, an array an array.
 */
export type Reply = string | Buffer | number | bigint | null | Reply[] | Simple | ErrorReply | Dbl | MapReply | SetReply | Push | typeof NULL_ARRAY | boolean;

export const OK = new Simple('OK');
export const QUEUED = new Simple('QUEUED');

/** Redis's text of a double reply: `inf`, `-inf`, else the shortest text that reads back the same. */
export function doubleText(v: number): string {
  if (v === Infinity) return 'inf';
  if (v === -Infinity) return '-inf';
  return String(v).replace('e+', 'e');
}

/** Appends the encoding of `r` to `out` (strings and buffers, written in one go by the caller). */
export function encode(r: Reply, proto: 2 | 3, out: Array<string | Buffer>): void {
  if (typeof r === 'string') {
    out.push(`$${Buffer.byteLength(r)}\r\n${r}\r\n`);
  } else if (typeof r === 'number' || typeof r === 'bigint') {
    out.push(`:${r}\r\n`);
  } else if (r === null) {
    out.push(proto === 3 ? '_\r\n' : '$-1\r\n');
  } else if (Array.isArray(r)) {
    out.push(`*${r.length}\r\n`);
    for (const x of r) encode(x, proto, out);
  } else if (r instanceof Simple) {
    out.push(`+${r.text}\r\n`);
  } else if (r instanceof ErrorReply) {
    out.push(`-${r.text.replace(/[\r\n]+/g, ' ')}\r\n`);
  } else if (Buffer.isBuffer(r)) {
    out.push(`$${r.length}\r\n`, r, '\r\n');
  } else if (r === NULL_ARRAY) {
    out.push(proto === 3 ? '_\r\n' : '*-1\r\n');
  } else if (typeof r === 'boolean') {
    out.push(proto === 3 ? (r ? '#t\r\n' : '#f\r\n') : r ? ':1\r\n' : ':0\r\n');
  } else if (r instanceof Dbl) {
    const t = doubleText(r.value);
    out.push(proto === 3 ? `,${t}\r\n` : `$${t.length}\r\n${t}\r\n`);
  } else if (r instanceof MapReply) {
    out.push(proto === 3 ? `%${r.entries.length}\r\n` : `*${r.entries.length * 2}\r\n`);
    for (const [k, v] of r.entries) {
      encode(k, proto, out);
      encode(v, proto, out);
    }
  } else if (r instanceof SetReply) {
    out.push(proto === 3 ? `~${r.items.length}\r\n` : `*${r.items.length}\r\n`);
    for (const x of r.items) encode(x, proto, out);
  } else {
    out.push(proto === 3 ? `>${r.items.length}\r\n` : `*${r.items.length}\r\n`);
    for (const x of r.items) encode(x, proto, out);
  }
}

/** The parser's limits (docs/redis.md, "Limits"). */
export interface ParseLimits {
  /** Most arguments in one command (Redis: 1,048,576 by default; here smaller, see docs). */
  maxArgs: number;
  /** Largest bulk string, in bytes (the HTTP API's --max-body-bytes). */
  maxBulk: number;
}

/** An inline command's longest line, as Redis's PROTO_INLINE_MAX_SIZE. */
export const MAX_INLINE = 64 * 1024;

const SKIP = Symbol('empty command');

/** A malformed frame: the connection answers `-ERR Protocol error: …` and closes. */
export class ProtocolError extends Error {}

/**
 * Incremental parser: `push` the bytes as they arrive, then take commands
 * with `next` until it returns undefined (more bytes needed). A command is
 * parsed only once all of it is here, so a half-sent command changes nothing.
 */
export class Parser {
  private buf: Buffer = Buffer.alloc(0);
  private pos = 0;
  /** Chunks received after `buf`, joined only once a command can be whole (so a large bulk is copied once, not per chunk). */
  private chunks: Buffer[] = [];
  private chunkBytes = 0;
  /** Bytes that must be pending before parsing is worth trying again. */
  private need = 1;
  /** Set by parseOne when it knows how many bytes the command it stopped in needs. */
  private hint = 0;

  constructor(private readonly limits: ParseLimits) {}

  /** Bytes received and not yet parsed into a command. */
  get pending(): number {
    return this.buf.length - this.pos + this.chunkBytes;
  }

  push(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.chunkBytes += chunk.length;
  }

  /** The next whole command, or undefined when more bytes are needed. Throws ProtocolError. */
  next(): Buffer[] | undefined {
    for (;;) {
      const avail = this.pending;
      if (avail < this.need) return undefined;
      if (this.chunkBytes > 0) {
        this.buf = this.pos >= this.buf.length && this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat([this.buf.subarray(this.pos), ...this.chunks]);
        this.pos = 0;
        this.chunks = [];
        this.chunkBytes = 0;
      }
      this.hint = 0;
      const r = this.parseOne();
      // An empty command (`*0`, a blank line) is skipped in this loop, never by recursion: a flood of them must not grow the stack.
      if (r === SKIP) continue;
      if (r === undefined) {
        this.need = Math.max(this.hint, avail + 1);
        return undefined;
      }
      this.need = 1;
      return r;
    }
  }

  private parseOne(): Buffer[] | undefined | typeof SKIP {
    const buf = this.buf;
    let p = this.pos;
    if (p >= buf.length) return undefined;
    if (buf[p] !== 0x2a /* * */) return this.inline();
    const lineEnd = this.lineEnd(p);
    if (lineEnd < 0) {
      if (buf.length - p > 32) throw new ProtocolError('too big mbulk count string');
      return undefined;
    }
    const n = this.integer(p + 1, lineEnd, 'invalid multibulk length');
    if (n > this.limits.maxArgs) throw new ProtocolError(`invalid multibulk length (more than ${this.limits.maxArgs} arguments)`);
    p = lineEnd + 2;
    if (n <= 0) {
      this.pos = p;
      return SKIP;
    }
    const args: Buffer[] = new Array<Buffer>(n);
    for (let i = 0; i < n; i++) {
      if (p >= buf.length) return undefined;
      if (buf[p] !== 0x24 /* $ */) throw new ProtocolError(`expected '$', got '${String.fromCharCode(buf[p]!)}'`);
      const e = this.lineEnd(p);
      if (e < 0) {
        if (buf.length - p > 32) throw new ProtocolError('too big bulk count string');
        return undefined;
      }
      const len = this.integer(p + 1, e, 'invalid bulk length');
      if (len < 0 || len > this.limits.maxBulk) throw new ProtocolError('invalid bulk length');
      const start = e + 2;
      if (start + len + 2 > buf.length) {
        this.hint = start + len + 2 - this.pos;
        return undefined;
      }
      if (buf[start + len] !== 0x0d || buf[start + len + 1] !== 0x0a) throw new ProtocolError('expected CRLF after a bulk string');
      args[i] = buf.subarray(start, start + len);
      p = start + len + 2;
    }
    this.pos = p;
    return args;
  }

  /** Index of the CR of the CRLF ending the line that starts at `from`, or -1. */
  private lineEnd(from: number): number {
    const i = this.buf.indexOf(0x0d, from);
    if (i < 0 || i + 1 >= this.buf.length) return -1;
    if (this.buf[i + 1] !== 0x0a) throw new ProtocolError('expected LF after CR');
    return i;
  }

  /** The decimal integer in buf[from, to): digits with an optional leading '-', at most 18 of them. */
  private integer(from: number, to: number, what: string): number {
    const buf = this.buf;
    let neg = false;
    let i = from;
    if (buf[i] === 0x2d) {
      neg = true;
      i++;
    }
    if (i >= to || to - i > 18) throw new ProtocolError(what);
    let v = 0;
    for (; i < to; i++) {
      const c = buf[i]! - 0x30;
      if (c < 0 || c > 9) throw new ProtocolError(what);
      v = v * 10 + c;
    }
    return neg ? -v : v;
  }

  /** An inline command: one line of words, split on spaces, with Redis's quoting. */
  private inline(): Buffer[] | undefined | typeof SKIP {
    const buf = this.buf;
    const nl = buf.indexOf(0x0a, this.pos);
    if (nl < 0) {
      if (buf.length - this.pos > MAX_INLINE) throw new ProtocolError('too big inline request');
      return undefined;
    }
    if (nl - this.pos > MAX_INLINE) throw new ProtocolError('too big inline request');
    const end = nl > this.pos && buf[nl - 1] === 0x0d ? nl - 1 : nl;
    const line = buf.subarray(this.pos, end).toString('latin1');
    this.pos = nl + 1;
    const words = splitArgs(line);
    if (words === undefined) throw new ProtocolError('unbalanced quotes in request');
    if (words.length === 0) return SKIP;
    return words.map((w) => Buffer.from(w, 'latin1'));
  }
}

/** Redis's sdssplitargs: words separated by blanks; "double" (with \n, \xHH escapes) and 'single' quotes. */
export function splitArgs(line: string): string[] | undefined {
  const out: string[] = [];
  let i = 0;
  const n = line.length;
  for (;;) {
    while (i < n && /\s/.test(line[i]!)) i++;
    if (i >= n) return out;
    let cur = '';
    const q = line[i];
    if (q === '"' || q === "'") {
      i++;
      for (;;) {
        if (i >= n) return undefined;
        const c = line[i]!;
        if (q === '"' && c === '\\' && i + 1 < n) {
          const e = line[i + 1]!;
          if (e === 'x' && /^[0-9a-fA-F]{2}$/.test(line.slice(i + 2, i + 4))) {
            cur += String.fromCharCode(parseInt(line.slice(i + 2, i + 4), 16));
            i += 4;
            continue;
          }
          cur += ESCAPES[e] ?? e;
          i += 2;
          continue;
        }
        if (q === "'" && c === '\\' && line[i + 1] === "'") {
          cur += "'";
          i += 2;
          continue;
        }
        if (c === q) {
          i++;
          // A closing quote must be followed by a blank or the end.
          if (i < n && !/\s/.test(line[i]!)) return undefined;
          break;
        }
        cur += c;
        i++;
      }
    } else {
      while (i < n && !/\s/.test(line[i]!)) cur += line[i++];
    }
    out.push(cur);
  }
}

const ESCAPES: Record<string, string> = { n: '\n', r: '\r', t: '\t', b: '\b', a: '\x07' };
