/**
 * Memory of a node on the shared store while it answers large reads
 * (docs/scaling.md, "Large answers"): peak RSS growth over a GET of a whole
 * table, an unindexed query over it, and the GET again. Numbers only.
 *
 *   npm run build:all && node dist/test/helpers/postgres.js node dist/bench/pgmem.js [rows]
 *
 * (the helper starts a throw-away PostgreSQL and sets PITHOS_TEST_STORE).
 */
import fs from 'node:fs';
import http from 'node:http';
import { PithosServer } from '../test/helpers/server.js';

const N = Number(process.argv[2] ?? 200_000);
const srv = await PithosServer.start({ testClock: false });
const pid = srv.child?.pid as number;
const mem = (): { rss: number; hwm: number } => {
  const s = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return { rss: Number(/VmRSS:\s+(\d+)/.exec(s)?.[1]) / 1024, hwm: Number(/VmHWM:\s+(\d+)/.exec(s)?.[1]) / 1024 };
};
try {
  await srv.req('PUT', '/tables/big');
  for (let from = 0; from < N; from += 1000) {
    const mutations = [];
    for (let i = from; i < Math.min(N, from + 1000); i++) {
      mutations.push({ name: 'big', operation: 'INSERT', values: { i, name: `row-${String(i).padStart(6, '0')}`, grp: i % 100, pad: 'x'.repeat(16) } });
    }
    const r = await srv.req('POST', '/txns', { mutations });
    if (r.status !== 200) throw new Error(r.raw);
  }
  const send = (method: string, path: string, body?: unknown): Promise<{ status: number; bytes: number; ms: number }> =>
    new Promise((resolve, reject) => {
      const t = performance.now();
      let n = 0;
      const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
      const rq = http.request(
        {
          host: '127.0.0.1',
          port: srv.port,
          method,
          path,
          headers: { 'Auth-Token': srv.token, ...(payload ? { 'Content-Type': 'application/json', 'Content-Length': payload.length } : {}) },
        },
        (res) => {
          res.on('data', (c: Buffer) => {
            n += c.length;
          });
          res.on('end', () => resolve({ status: res.statusCode ?? 0, bytes: n, ms: performance.now() - t }));
        },
      );
      rq.on('error', reject);
      rq.end(payload);
    });
  await new Promise((r) => setTimeout(r, 500));
  console.log(`shared store, a table of ${N} rows:`);
  for (const [label, method, path, body] of [
    ['GET table', 'GET', '/tables/big'],
    ['query grp=42', 'POST', '/tables/big/query', { wheres: { grp: 42 } }],
    ['GET table again', 'GET', '/tables/big'],
  ] as const) {
    const before = mem();
    fs.writeFileSync(`/proc/${pid}/clear_refs`, '5'); // resets the peak (VmHWM)
    const r = await send(method, path, body);
    const after = mem();
    console.log(
      `  ${label}: ${r.status}, ${(r.bytes / 1e6).toFixed(1)} MB in ${r.ms.toFixed(0)} ms; RSS before ${before.rss.toFixed(0)} MiB, peak +${(after.hwm - before.rss).toFixed(0)} MiB`,
    );
  }
} finally {
  await srv.close();
}
