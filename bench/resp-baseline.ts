/**
 * The Redis-protocol baseline (docs/benchmarks.md, "Redis protocol"): what
 * Node itself costs for the work redis-benchmark asks, with nothing of
 * Pithos. A bare `node:net` server, run as its own process, parses RESP
 * arrays, keeps the keys in `Map`s, and answers the write commands
 * (`INCR`, `SET`, `LPUSH`, `SADD`, `ZADD`) only after they are appended to a
 * file and `fdatasync`ed — one flush for every write that arrived while the
 * previous flush ran, as the log's group commit does. `GET` answers at once.
 * Any other command answers `+OK` (redis-benchmark's `CONFIG GET` probe,
 * `AUTH`): no checks, no types beyond what the replies need.
 *
 *   node dist/bench/resp-baseline.js --port <n> --file <path>
 *
 * Prints `listening` when ready; SIGTERM stops it.
 */
import { closeSync, openSync } from 'node:fs';
import { GroupLog } from './group-log.js';
import { createServer, type Socket } from 'node:net';

const arg = (name: string): string => {
  const i = process.argv.indexOf(name);
  if (i < 0 || i + 1 >= process.argv.length) throw new Error(`missing ${name}`);
  return process.argv[i + 1]!;
};

const fd = openSync(arg('--file'), 'w');
const strings = new Map<string, string>();
const lists = new Map<string, string[]>();
const sets = new Map<string, Set<string>>();
const zsets = new Map<string, Map<string, number>>();

const log = new GroupLog(fd);

const bulk = (s: string): string => `$${Buffer.byteLength(s)}\r\n${s}\r\n`;

/** The reply to one command, and whether it is a write that must be flushed first. */
function run(a: string[]): [string, boolean] {
  const cmd = a[0]!.toLowerCase();
  const key = a[1] ?? '';
  switch (cmd) {
    case 'get': {
      const v = strings.get(key);
      return [v === undefined ? '$-1\r\n' : bulk(v), false];
    }
    case 'set':
      strings.set(key, a[2] ?? '');
      return ['+OK\r\n', true];
    case 'incr': {
      const v = String(Number(strings.get(key) ?? '0') + 1);
      strings.set(key, v);
      return [`:${v}\r\n`, true];
    }
    case 'lpush': {
      let l = lists.get(key);
      if (l === undefined) lists.set(key, (l = []));
      for (const x of a.slice(2)) l.push(x);
      return [`:${l.length}\r\n`, true];
    }
    case 'sadd': {
      let s = sets.get(key);
      if (s === undefined) sets.set(key, (s = new Set()));
      let n = 0;
      for (const x of a.slice(2)) if (!s.has(x)) (s.add(x), n++);
      return [`:${n}\r\n`, true];
    }
    case 'zadd': {
      let z = zsets.get(key);
      if (z === undefined) zsets.set(key, (z = new Map()));
      let n = 0;
      for (let i = 2; i + 1 < a.length; i += 2) {
        if (!z.has(a[i + 1]!)) n++;
        z.set(a[i + 1]!, Number(a[i]));
      }
      return [`:${n}\r\n`, true];
    }
    default:
      return ['+OK\r\n', false];
  }
}

/** One connection: whole commands from each read, their replies in order, in one write once the writes among them are on disk. */
function serve(socket: Socket): void {
  socket.setNoDelay(true);
  let buf: Buffer = Buffer.alloc(0);
  socket.on('data', (d: Buffer) => {
    buf = buf.length === 0 ? d : Buffer.concat([buf, d]);
    const replies: string[] = [];
    let writes = 0;
    let off = 0;
    for (;;) {
      const parsed = parse(buf, off);
      if (parsed === undefined) break;
      off = parsed[1];
      const [reply, isWrite] = run(parsed[0]);
      replies.push(reply);
      if (isWrite) {
        writes++;
        log.line(parsed[0].join(' ') + '\n');
      }
    }
    buf = buf.subarray(off);
    if (replies.length === 0) return;
    const out = replies.join('');
    if (writes === 0) socket.write(out);
    else {
      // The replies go once the last of these writes is flushed (they are all in the same or the next flush).
      let left = writes;
      for (let i = 0; i < writes; i++) log.then(() => --left === 0 && socket.write(out));
    }
  });
  socket.on('error', () => socket.destroy());
}

/** One RESP array of bulk strings at `off`, and the offset after it; undefined when it is not all there yet. */
function parse(b: Buffer, off: number): [string[], number] | undefined {
  if (off >= b.length) return undefined;
  let nl = b.indexOf('\r\n', off);
  if (nl < 0) return undefined;
  const n = Number(b.toString('latin1', off + 1, nl));
  let p = nl + 2;
  const args: string[] = [];
  for (let i = 0; i < n; i++) {
    nl = b.indexOf('\r\n', p);
    if (nl < 0) return undefined;
    const len = Number(b.toString('latin1', p + 1, nl));
    if (nl + 2 + len + 2 > b.length) return undefined;
    args.push(b.toString('utf8', nl + 2, nl + 2 + len));
    p = nl + 2 + len + 2;
  }
  return [args, p];
}

const server = createServer(serve);
server.listen(Number(arg('--port')), '127.0.0.1', () => process.stdout.write('listening\n'));
process.on('SIGTERM', () => {
  server.close();
  closeSync(fd);
  process.exit(0);
});
