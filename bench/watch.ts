/**
 * Write throughput with 0, 10 and 1,000 change-feed watchers attached, and
 * the server memory of idle watchers (docs/benchmarks-history.md, "Versions, conditional writes and the change feed").
 *
 *   node dist/bench/watch.js [--watchers 0,10,1000] [--seconds 5] [--fsync always] [--conns 16]
 *
 * One server per watcher count (a fresh data directory each). The watchers
 * are raw sockets that read and discard; the writers are `conns` keep-alive
 * connections doing PUT /records/<k> (a ~100-byte record) as fast as the
 * server answers. Everything runs on this machine: the watchers' reading
 * and the writers cost CPU here too, which is reported with the load.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer } from './proc.js';

const ROOT = join(fileURLToPath(import.meta.url), '..', '..', '..');
const TOKEN = 'bench-token';

function arg(name: string, def: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? (process.argv[i + 1] as string) : def;
}

function rssMb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m === null ? 0 : Number(m[1]) / 1024;
}

function openWatcher(port: number): Promise<{ socket: Socket; bytes: () => number }> {
  return new Promise((resolve, reject) => {
    let bytes = 0;
    let ready = false;
    const s = connect(port, '127.0.0.1', () => {
      s.write(`GET /watch HTTP/1.1\r\nHost: x\r\nAuth-Token: ${TOKEN}\r\n\r\n`);
    });
    s.on('data', (d: Buffer) => {
      bytes += d.length;
      if (!ready && d.includes(': watching')) {
        ready = true;
        resolve({ socket: s, bytes: () => bytes });
      }
    });
    s.on('error', reject);
  });
}

/** CPU time (user + system) of a process so far, in ms. */
function cpuMs(pid: number): number {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const rest = f.slice(f.lastIndexOf(')') + 2).split(' ');
  return ((Number(rest[11]) + Number(rest[12])) * 1000) / 100; // clock ticks of 10 ms
}

async function writeFor(port: number, seconds: number, conns: number): Promise<number> {
  const agent = new Agent({ keepAlive: true, maxSockets: conns });
  const body = JSON.stringify({ record: { name: 'ann', age: 31, tags: ['a', 'b'], note: 'x'.repeat(40) } });
  const end = Date.now() + seconds * 1000;
  let done = 0;
  const one = (i: number): Promise<void> =>
    new Promise((resolve, reject) => {
      const r = request(
        {
          host: '127.0.0.1',
          port,
          method: 'PUT',
          path: `/records/k${i % 1000}`,
          agent,
          headers: { 'Auth-Token': TOKEN, 'Content-Length': Buffer.byteLength(body) },
        },
        (res) => {
          res.resume();
          res.on('end', () => (res.statusCode === 200 || res.statusCode === 201 ? resolve() : reject(new Error(`status ${res.statusCode}`))));
        },
      );
      r.on('error', reject);
      r.end(body);
    });
  await Promise.all(
    Array.from({ length: conns }, async (_, c) => {
      let i = c;
      while (Date.now() < end) {
        await one(i);
        i += conns;
        done++;
      }
    }),
  );
  agent.destroy();
  return done / seconds;
}

async function main(): Promise<void> {
  const counts = arg('watchers', '0,10,1000').split(',').map(Number);
  const seconds = Number(arg('seconds', '5'));
  const fsync = arg('fsync', 'always');
  const conns = Number(arg('conns', '16'));
  console.log(
    `write throughput with watchers: PUT /records (~100 B), ${conns} connections, ${seconds} s, --fsync ${fsync}; load before: ${loadavg()
      .map((x) => x.toFixed(2))
      .join(' ')}`,
  );
  for (const n of counts) {
    const dir = mkdtempSync(join(tmpdir(), 'pithos-watch-bench-'));
    const server = await startServer(
      'pithos',
      process.execPath,
      [join(ROOT, 'bin', 'pithos'), '--host', '127.0.0.1', '--port', '0', '--data-dir', dir, '--auth-token', TOKEN, '--fsync', fsync],
      { cwd: ROOT },
    );
    try {
      const pid = server.child.pid as number;
      await writeFor(server.port, 1, conns); // warm-up
      const rss0 = rssMb(pid);
      const watchers = [];
      for (let i = 0; i < n; i++) watchers.push(await openWatcher(server.port));
      await new Promise((r) => setTimeout(r, 500));
      const rssIdle = rssMb(pid);
      const cpu0 = cpuMs(pid);
      const rate = await writeFor(server.port, seconds, conns);
      const cpuPerWrite = ((cpuMs(pid) - cpu0) * 1000) / (rate * seconds);
      const got = watchers.reduce((a, w) => a + w.bytes(), 0);
      console.log(
        `${String(n).padStart(5)} watchers: ${rate.toFixed(0).padStart(6)} writes/s, server CPU ${cpuPerWrite.toFixed(0)} µs/write; server RSS ${rss0.toFixed(1)} MB, ` +
          `with idle watchers ${rssIdle.toFixed(1)} MB (${n > 0 ? `${(((rssIdle - rss0) * 1024) / n).toFixed(1)} KB each` : '-'}), ` +
          `after ${rssMb(pid).toFixed(1)} MB; watchers read ${(got / 1e6).toFixed(1)} MB; load ${loadavg()[0].toFixed(2)}`,
      );
      for (const w of watchers) w.socket.destroy();
    } finally {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
