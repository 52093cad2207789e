/**
 * Raw HTTP/1.1 over a TCP socket, for tests that need control node:http's
 * client does not give: pipelining, odd methods, missing Host, bodies that
 * never come, clients that never read.
 */
import net from 'node:net';

export interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
  /** Parsed JSON body, or undefined. */
  json: unknown;
}

export interface Exchange {
  /** Every byte received, latin1. */
  data: string;
  answers: RawAnswer[];
  /** Whether the server closed (FIN or RST) before `waitMs` ran out. */
  closed: boolean;
  /** Milliseconds from the first write to the close (or to giving up). */
  ms: number;
  error?: string;
}

/** Splits received bytes into answers (Content-Length or chunked framing). Trailing garbage ends parsing. */
export function parseAnswers(data: Buffer): { answers: RawAnswer[]; rest: number } {
  const answers: RawAnswer[] = [];
  let at = 0;
  for (;;) {
    const sep = data.indexOf('\r\n\r\n', at, 'latin1');
    if (sep < 0) break;
    const head = data.subarray(at, sep).toString('latin1').split('\r\n');
    const m = /^HTTP\/1\.[01] (\d{3})/.exec(head[0]);
    if (m === null) break;
    const headers: Record<string, string> = {};
    for (const line of head.slice(1)) {
      const i = line.indexOf(':');
      if (i > 0) headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
    }
    let body: Buffer;
    let end: number;
    const status = Number(m[1]);
    if (status === 100) {
      answers.push({ status, headers, body: '', json: undefined });
      at = sep + 4;
      continue;
    }
    if (headers['content-length'] !== undefined) {
      const n = Number(headers['content-length']);
      if (data.length < sep + 4 + n) break;
      body = data.subarray(sep + 4, sep + 4 + n);
      end = sep + 4 + n;
    } else if (/chunked/i.test(headers['transfer-encoding'] ?? '')) {
      const parts: Buffer[] = [];
      let p = sep + 4;
      let ok = false;
      for (;;) {
        const le = data.indexOf('\r\n', p, 'latin1');
        if (le < 0) break;
        const size = parseInt(data.subarray(p, le).toString('latin1'), 16);
        if (Number.isNaN(size)) break;
        if (size === 0) {
          const fin = data.indexOf('\r\n\r\n', le, 'latin1');
          if (fin < 0) break;
          p = fin + 4;
          ok = true;
          break;
        }
        if (data.length < le + 2 + size + 2) break;
        parts.push(data.subarray(le + 2, le + 2 + size));
        p = le + 2 + size + 2;
      }
      if (!ok) break;
      body = Buffer.concat(parts);
      end = p;
    } else {
      body = data.subarray(sep + 4);
      end = data.length;
    }
    const text = body.toString('utf8');
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    answers.push({ status, headers, body: text, json });
    at = end;
  }
  return { answers, rest: at };
}

export interface ExchangeOptions {
  /** Give up after this long (default 5000 ms). */
  waitMs?: number;
  /** Resolve as soon as this many final answers have arrived (the socket is then destroyed). */
  answers?: number;
  /** Written after `then` ms have passed since the first write, if still open (errors ignored). */
  later?: { afterMs: number; bytes: Buffer | string };
  /** Half-close (FIN) after writing. */
  end?: boolean;
}

/** Writes `bytes` on a fresh connection and collects what comes back. */
export function exchange(port: number, bytes: Buffer | string, o: ExchangeOptions = {}): Promise<Exchange> {
  return new Promise((resolve) => {
    const sock = net.connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    const t0 = Date.now();
    let done = false;
    let error: string | undefined;
    const finish = (closed: boolean) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      if (laterTimer) clearTimeout(laterTimer);
      sock.destroy();
      const data = Buffer.concat(chunks);
      resolve({ data: data.toString('latin1'), answers: parseAnswers(data).answers, closed, ms: Date.now() - t0, error });
    };
    sock.on('data', (d: Buffer) => {
      chunks.push(d);
      if (o.answers !== undefined) {
        const n = parseAnswers(Buffer.concat(chunks)).answers.filter((a) => a.status !== 100).length;
        if (n >= o.answers) finish(false);
      }
    });
    sock.on('error', (e: NodeJS.ErrnoException) => {
      error = e.code ?? e.message;
    });
    sock.on('close', () => finish(true));
    const timer = setTimeout(() => finish(false), o.waitMs ?? 5000);
    let laterTimer: NodeJS.Timeout | undefined;
    sock.write(bytes);
    if (o.end) sock.end();
    if (o.later) {
      const l = o.later;
      laterTimer = setTimeout(() => {
        if (!done && !sock.destroyed) sock.write(l.bytes);
      }, l.afterMs);
    }
  });
}

/** One request's bytes. */
export function reqBytes(method: string, path: string, token: string | null, body?: string, extra: Record<string, string> = {}): string {
  let h = `${method} ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n`;
  if (token !== null) h += `Auth-Token: ${token}\r\n`;
  for (const [k, v] of Object.entries(extra)) h += `${k}: ${v}\r\n`;
  if (body !== undefined) h += `Content-Length: ${Buffer.byteLength(body)}\r\n`;
  return `${h}\r\n${body ?? ''}`;
}
