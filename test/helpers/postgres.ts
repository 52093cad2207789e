/**
 * A throw-away PostgreSQL cluster for the tests: initdb in a temporary
 * directory, a free port, a socket in that directory, as an unprivileged
 * user (when the tests run as root, as CI does, initdb and the server run as
 * `postgres`, which Debian's package creates). Binaries come from
 * /usr/lib/postgresql/<newest>/bin, else from PATH.
 *
 * `node dist/test/helpers/postgres.js <command> [args...]` starts a cluster,
 * runs the command with PITHOS_TEST_STORE (a superuser URL) and
 * PITHOS_TEST_PGDATA / PITHOS_TEST_PGBIN set, stops the cluster and exits
 * with the command's code: that is how `npm test` runs its PostgreSQL pass.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { freePort } from './net.js';

export function pgBinDir(): string | undefined {
  const base = '/usr/lib/postgresql';
  if (existsSync(base)) {
    const versions = readdirSync(base)
      .filter((v) => existsSync(path.join(base, v, 'bin', 'initdb')))
      .sort((a, b) => Number(b) - Number(a));
    if (versions.length > 0) return path.join(base, versions[0], 'bin');
  }
  const r = spawnSync('sh', ['-c', 'command -v initdb'], { encoding: 'utf8' });
  return r.status === 0 ? path.dirname(r.stdout.trim()) : undefined;
}

const asRoot = typeof process.getuid === 'function' && process.getuid() === 0;

export class PgCluster {
  constructor(
    readonly bin: string,
    readonly dir: string,
    readonly port: number,
  ) {}

  /** Superuser URL over TCP (the tests' Pithos nodes connect here). */
  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  /** Runs a PostgreSQL program as the cluster's owner. */
  private run(prog: string, args: string[]): void {
    const cmd = path.join(this.bin, prog);
    const [file, argv] = asRoot ? ['runuser', ['-u', 'postgres', '--', cmd, ...args]] : [cmd, args];
    execFileSync(file, argv, { stdio: ['ignore', 'pipe', 'pipe'], cwd: this.dir });
  }

  static async create(): Promise<PgCluster> {
    const bin = pgBinDir();
    if (bin === undefined) throw new Error('PostgreSQL is not installed (no initdb in /usr/lib/postgresql/*/bin or PATH); .ci/run installs it');
    const dir = mkdtempSync(path.join(os.tmpdir(), 'pithos-pg-'));
    if (asRoot) {
      const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
      const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
      chownSync(dir, uid, gid);
    }
    const c = new PgCluster(bin, dir, await freePort());
    c.run('initdb', ['-D', path.join(dir, 'data'), '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--locale=C', '--no-instructions']);
    c.start();
    return c;
  }

  /** Starts the server (again) on the same port and waits until it accepts connections. */
  start(): void {
    this.run('pg_ctl', [
      '-D',
      path.join(this.dir, 'data'),
      '-l',
      path.join(this.dir, 'log'),
      '-w',
      '-t',
      '60',
      '-o',
      `-p ${this.port} -k ${this.dir} -c listen_addresses=127.0.0.1 -c max_connections=300 -c shared_buffers=64MB`,
      'start',
    ]);
  }

  /** Stops the server (fast: connections are cut, committed data stays). */
  stop(): void {
    this.run('pg_ctl', ['-D', path.join(this.dir, 'data'), '-m', 'fast', '-w', '-t', '60', 'stop']);
  }

  /** Stops the server as a crash would (immediate: no checkpoint; the next start replays the WAL). */
  crash(): void {
    this.run('pg_ctl', ['-D', path.join(this.dir, 'data'), '-m', 'immediate', '-w', '-t', '60', 'stop']);
  }

  /** The postmaster's process id (the first line of postmaster.pid). */
  postmasterPid(): number {
    return Number(readFileSync(path.join(this.dir, 'data', 'postmaster.pid'), 'utf8').split('\n')[0]);
  }

  /** The postmaster and every process it started (backends, background workers). */
  processes(): number[] {
    const pm = this.postmasterPid();
    const r = spawnSync('ps', ['-o', 'pid=', '--ppid', String(pm)], { encoding: 'utf8' });
    return [
      pm,
      ...r.stdout
        .split('\n')
        .map((x) => Number(x.trim()))
        .filter((x) => x > 0),
    ];
  }

  /**
   * Freezes the server as a hung machine would: SIGSTOP to the postmaster and
   * its processes (connections stay open, nothing answers). Returns what was
   * stopped, for thaw. The tests run as root (or as the cluster's owner).
   */
  freeze(): number[] {
    const pids = this.processes();
    for (const p of pids) process.kill(p, 'SIGSTOP');
    // A backend forked between listing and stopping the postmaster: stop it too.
    const more = this.processes().filter((p) => !pids.includes(p));
    for (const p of more) process.kill(p, 'SIGSTOP');
    return [...pids, ...more];
  }

  thaw(pids: number[]): void {
    for (const p of pids) {
      try {
        process.kill(p, 'SIGCONT');
      } catch {
        /* gone */
      }
    }
  }

  /**
   * A streaming hot standby of this cluster (pg_basebackup -R), in a
   * directory of its own, on a free port, started. `promote` makes it a
   * primary.
   */
  async standby(): Promise<PgCluster> {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'pithos-pgs-'));
    if (asRoot) {
      const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
      const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
      chownSync(dir, uid, gid);
    }
    const s = new PgCluster(this.bin, dir, await freePort());
    s.run('pg_basebackup', ['-D', path.join(dir, 'data'), '-R', '-X', 'stream', '-h', '127.0.0.1', '-p', String(this.port), '-U', 'postgres']);
    s.start();
    return s;
  }

  /** Promotes a standby and waits until it accepts writes. */
  promote(): void {
    this.run('pg_ctl', ['-D', path.join(this.dir, 'data'), '-w', '-t', '60', 'promote']);
  }

  /** Stops the server and removes everything. Never throws. */
  destroy(): void {
    try {
      this.stop();
    } catch {
      /* already stopped */
    }
    rmSync(this.dir, { recursive: true, force: true });
  }

  log(): string {
    try {
      return readFileSync(path.join(this.dir, 'log'), 'utf8');
    } catch {
      return '';
    }
  }

  /** The cluster the tests were started with (postgres.js as the wrapper), or undefined. */
  static fromEnv(): PgCluster | undefined {
    const url = process.env.PITHOS_TEST_STORE;
    const dir = process.env.PITHOS_TEST_PGDATA;
    const bin = process.env.PITHOS_TEST_PGBIN;
    if (url === undefined || dir === undefined || bin === undefined) return undefined;
    return new PgCluster(bin, dir, Number(new URL(url).port));
  }
}

/** Runs one statement as the superuser on the test cluster. */
export async function adminQuery(url: string, sql: string): Promise<void> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

/** A new empty schema on the test cluster, and the store URL whose connections use it. */
export async function freshSchema(url: string, name: string): Promise<string> {
  await adminQuery(url, `CREATE SCHEMA ${name}`);
  const u = new URL(url);
  u.searchParams.set('options', `-c search_path=${name}`);
  return u.toString();
}

async function wrapper(argv: string[]): Promise<number> {
  const c = await PgCluster.create();
  process.stdout.write(`# PostgreSQL test cluster: ${c.bin}, ${c.dir}, port ${c.port}\n`);
  const stop = (): void => c.destroy();
  process.on('SIGINT', () => {
    stop();
    process.exit(130);
  });
  process.on('SIGTERM', () => {
    stop();
    process.exit(143);
  });
  try {
    const child = spawn(argv[0], argv.slice(1), {
      stdio: 'inherit',
      env: { ...process.env, PITHOS_TEST_STORE: c.url, PITHOS_TEST_PGDATA: c.dir, PITHOS_TEST_PGBIN: c.bin },
    });
    return await new Promise<number>((resolve) => child.on('exit', (code, sig) => resolve(code ?? (sig ? 1 : 0))));
  } finally {
    stop();
  }
}

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  wrapper(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (err: unknown) => {
      process.stderr.write(`${(err as Error)?.stack ?? String(err)}\n`);
      process.exit(1);
    },
  );
}
