/**
 * `npm run fuzz -- --requests N [--seed S] [--workers W]`: the fuzzer of the
 * test suite, standalone, against a fresh server; prints the figures.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { PithosServer } from '../helpers/server.js';
import { fuzz } from './fuzzer.js';

function arg(name: string, def: number): number {
  const i = process.argv.indexOf(name);
  if (i < 0) return def;
  const v = Number(process.argv[i + 1]);
  if (!Number.isFinite(v) || v < 0) throw new Error(`${name} needs a number`);
  return v;
}

const requests = arg('--requests', 100_000);
const seed = arg('--seed', Math.floor(Math.random() * 2 ** 31));
const workers = arg('--workers', 4);
const minutes = arg('--minutes', 0);
const fsync = process.argv.includes('--fsync') ? process.argv[process.argv.indexOf('--fsync') + 1] : 'never';
console.log(`fuzz: ${requests} requests, seed ${seed}, ${workers} workers, fsync ${fsync}`);
const s = await PithosServer.start({ testClock: false, fsync });
const rss = () => {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${s.child!.pid}/status`, 'utf8'));
    return m ? `${Math.round(Number(m[1]) / 1024)} MiB` : '?';
  } catch {
    return '?';
  }
};
let code = 0;
try {
  const t0 = Date.now();
  const report = await fuzz({
    port: s.port, token: s.token, requests, seed, workers, timeLimitMs: minutes > 0 ? minutes * 60_000 : undefined,
    progress: (n) => console.log(`  ${n} requests, ${Math.round(n / ((Date.now() - t0) / 1000))}/s, server RSS ${rss()}`),
  });
  const alive = s.child?.exitCode === null;
  const health = alive ? (await s.req('GET', '/health')).status : 0;
  console.log(JSON.stringify({ ...report, lastTimeout: report.lastTimeout?.slice(0, 300), violations: report.violations.length, serverAlive: alive, healthAfter: health, serverRss: rss() }, null, 1));
  for (const v of report.violations) console.log(`VIOLATION ${v}`);
  if (report.lastTimeout !== undefined) {
    writeFileSync('fuzz-timeout.bin', Buffer.from(report.lastTimeout, 'latin1'));
    console.log('the bytes of the last exchange that timed out are in fuzz-timeout.bin');
  }
  if (/request failed|ERROR/.test(s.stdout + s.stderr)) {
    console.log('server logged errors:\n' + (s.stdout + s.stderr).split('\n').filter((l) => /ERROR|request failed/.test(l)).slice(0, 20).join('\n'));
    code = 1;
  }
  if (report.violations.length > 0 || !alive || health !== 200) code = 1;
} finally {
  await s.close();
}
process.exit(code);
