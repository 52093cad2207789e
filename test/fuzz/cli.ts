/**
 * `npm run fuzz -- --requests N [--seed S] [--workers W]`: the fuzzer of the
 * test suite, standalone, against a fresh server; prints the figures.
 * `--mode tls [--seconds N]`: the TLS attack (adversaries.ts) with the HTTP
 * fuzzer over TLS beside it, on a server with a self-signed certificate and
 * --max-connections 40. `--mode bodies [--seconds N]`: bodies without a token.
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { PithosServer, STORE } from '../helpers/server.js';
import { noTokenBodies, rssMiB, selfSigned, serverSockets, tlsAttack } from './adversaries.js';
import { fuzz } from './fuzzer.js';

const HELP = `npm run fuzz -- [options]: the test suite's fuzzer against a fresh server of this build

  --requests N   requests to send (default 100000)
  --minutes M    stop after M minutes instead, whichever comes first
  --seed S       the random seed (default: a new one, printed)
  --workers W    concurrent connections (default 4)
  --fsync MODE   the server's --fsync (default never)
  --mode MODE    http (the default), tls (the TLS attack beside the fuzzer over TLS)
                 or bodies (request bodies sent without a token)
  --seconds N    how long tls and bodies run (default 20)

Exit status 0 when the server stayed up, healthy and logged no errors; the figures
are printed as JSON. docs/fuzzing.md says what is sent and what is checked.`;
if (process.argv.includes('--help') || process.argv.includes('-h')) {
  console.log(HELP);
  process.exit(0);
}

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
const mode = process.argv.includes('--mode') ? process.argv[process.argv.indexOf('--mode') + 1] : 'http';
if (mode === 'tls' || mode === 'bodies') process.exit(await adversary(mode, arg('--seconds', 20)));
if (mode !== 'http') throw new Error('--mode is http (the default), tls or bodies');
console.log(`fuzz: ${requests} requests, seed ${seed}, ${workers} workers, fsync ${fsync}, store ${STORE}`);
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
    port: s.port,
    token: s.token,
    requests,
    seed,
    workers,
    timeLimitMs: minutes > 0 ? minutes * 60_000 : undefined,
    progress: (n) => console.log(`  ${n} requests, ${Math.round(n / ((Date.now() - t0) / 1000))}/s, server RSS ${rss()}`),
  });
  const alive = s.child?.exitCode === null;
  const health = alive ? (await s.req('GET', '/health')).status : 0;
  console.log(
    JSON.stringify(
      {
        ...report,
        lastTimeout: report.lastTimeout?.slice(0, 300),
        violations: report.violations.length,
        serverAlive: alive,
        healthAfter: health,
        serverRss: rss(),
      },
      null,
      1,
    ),
  );
  for (const v of report.violations) console.log(`VIOLATION ${v}`);
  if (report.lastTimeout !== undefined) {
    writeFileSync('fuzz-timeout.bin', Buffer.from(report.lastTimeout, 'latin1'));
    console.log('the bytes of the last exchange that timed out are in fuzz-timeout.bin');
  }
  if (/request failed|ERROR/.test(s.stdout + s.stderr)) {
    console.log(
      'server logged errors:\n' +
        (s.stdout + s.stderr)
          .split('\n')
          .filter((l) => /ERROR|request failed/.test(l))
          .slice(0, 20)
          .join('\n'),
    );
    code = 1;
  }
  if (report.violations.length > 0 || !alive || health !== 200) code = 1;
} finally {
  await s.close();
}
process.exit(code);

async function adversary(which: 'tls' | 'bodies', seconds: number): Promise<number> {
  console.log(`fuzz --mode ${which}: ${seconds} s, seed ${seed}`);
  let violations: string[];
  if (which === 'tls') {
    const [cert, key, ca, dir] = selfSigned();
    const max = 40;
    const srv = await PithosServer.start({ testClock: false, fsync: 'never', args: ['--tls-cert', cert, '--tls-key', key, '--max-connections', String(max)] });
    try {
      const pid = srv.child!.pid!;
      const [attack, fuzzed] = await Promise.all([
        tlsAttack({
          port: srv.port,
          token: srv.token,
          ca,
          seed,
          durationMs: seconds * 1000,
          maxConnections: max,
          sockets: () => serverSockets(pid),
          socketSlack: 3 + (STORE === 'postgres' ? 10 : 0),
        }),
        fuzz({ port: srv.port, token: srv.token, requests: 10_000_000, seed, workers: 2, timeLimitMs: seconds * 1000, tlsCa: ca }),
      ]);
      console.log(
        JSON.stringify(
          {
            attack: { ...attack, violations: attack.violations.length },
            fuzzOverTls: { ...fuzzed, lastTimeout: undefined, violations: fuzzed.violations.length },
            serverAlive: srv.child?.exitCode === null,
          },
          null,
          1,
        ),
      );
      violations = [...attack.violations, ...fuzzed.violations];
      if (srv.child?.exitCode !== null) violations.push('the server died');
    } finally {
      await srv.close();
      rmSync(dir, { recursive: true, force: true });
    }
  } else {
    const srv = await PithosServer.start({ testClock: false, fsync: 'never' });
    try {
      const pid = srv.child!.pid!;
      const before = rssMiB(pid);
      let peak = before;
      const sampler = setInterval(() => (peak = Math.max(peak, rssMiB(pid))), 50);
      const report = await noTokenBodies({ port: srv.port, token: srv.token, seed, durationMs: seconds * 1000, workers });
      clearInterval(sampler);
      console.log(
        JSON.stringify(
          {
            ...report,
            violations: report.violations.length,
            rssBeforeMiB: Math.round(before),
            rssPeakMiB: Math.round(peak),
            serverAlive: srv.child?.exitCode === null,
          },
          null,
          1,
        ),
      );
      violations = report.violations;
      if (srv.child?.exitCode !== null) violations.push('the server died');
    } finally {
      await srv.close();
    }
  }
  for (const v of violations) console.log(`VIOLATION ${v}`);
  return violations.length > 0 ? 1 : 0;
}
