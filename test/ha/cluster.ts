/**
 * A real highly available PostgreSQL for the HA harness, from Debian's
 * packages: one etcd (v2 API: Patroni 3.0.2's etcd3 client can split the
 * brain), three Patroni members in synchronous mode, and HAProxy routing to
 * the member whose Patroni answers `OPTIONS /primary` with 200. Everything
 * on 127.0.0.1, on free ports, under one temporary directory; PostgreSQL
 * and Patroni run as `postgres` when the harness runs as root. Every wait
 * is bounded; destroy() kills every process it started.
 */
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { pgBinDir } from '../helpers/postgres.js';
import { freePort } from '../helpers/net.js';

/**
 * The settings that decide the outage (docs/scaling.md, "Running highly
 * available"). ttl ≥ loop_wait + 2 × retry_timeout, as Patroni requires.
 */
export const PATRONI = { ttl: 10, loop_wait: 1, retry_timeout: 4 } as const;
/**
 * HAProxy's check of each member's Patroni REST API (`OPTIONS /primary`):
 * Patroni's layout (docs: `inter 3s fall 3 rise 2 on-marked-down
 * shutdown-sessions`) with shorter intervals. A member that stops leading is
 * checked every `inter` while up, then every `fastinter` once a check failed,
 * so it is marked down (its sessions cut) within `inter` + (`fall` - 1) ×
 * `fastinter`; the new leader, down until then, is checked every `downinter`
 * and taken after `rise` answers: the part of a switchover's outage that is
 * HAProxy's own.
 */
export const HAPROXY_CHECK = { inter: '500ms', fastinter: '200ms', downinter: '200ms', fall: 2, rise: 1 } as const;

/** The `default-server` settings of the primary's listener. */
export function haproxyCheck(): string {
  const c = HAPROXY_CHECK;
  return `inter ${c.inter} fastinter ${c.fastinter} downinter ${c.downinter} fall ${c.fall} rise ${c.rise} on-marked-down shutdown-sessions`;
}

const asRoot = typeof process.getuid === 'function' && process.getuid() === 0;
const owner = asRoot
  ? {
      uid: Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim()),
      gid: Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim()),
    }
  : undefined;

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Polls `cond` until it returns a value other than undefined, at most `ms`. */
export async function until<T>(cond: () => Promise<T | undefined> | T | undefined, ms: number, what: string, every = 200): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await cond();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(every);
  }
}

/** One HTTP request to a Patroni REST API, bounded; status and body, or status 0 on no answer. */
export function rest(port: number, method: string, p: string, body?: unknown, timeoutMs = 3000): Promise<{ status: number; body: string }> {
  return new Promise((resolve) => {
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        method,
        path: p,
        agent: false,
        timeout: timeoutMs,
        headers: payload ? { 'Content-Type': 'application/json', 'Content-Length': payload.length } : {},
      },
      (res) => {
        let s = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (s += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: s }));
        res.on('error', () => resolve({ status: 0, body: s }));
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', () => resolve({ status: 0, body: '' }));
    req.end(payload);
  });
}

export interface Member {
  name: string;
  pgPort: number;
  restPort: number;
  dir: string;
  proc: ChildProcess | null;
}

export interface ClusterMember {
  name: string;
  role: string;
  state: string;
  timeline?: number;
  lag?: number | string;
}

export class HaCluster {
  readonly members: Member[] = [];
  etcd: ChildProcess | null = null;
  haproxy: ChildProcess | null = null;
  etcdPort = 0;
  proxyPort = 0;
  private logs = new Map<string, string>();

  private constructor(
    readonly dir: string,
    readonly bin: string,
  ) {}

  /** Where each process's output goes, for the failure message. */
  log(name: string): string {
    return this.logs.get(name) ?? '';
  }

  private start(name: string, file: string, args: string[], asOwner: boolean): ChildProcess {
    const child = spawn(file, args, {
      cwd: this.dir,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: this.dir, LANG: 'C.UTF-8', LC_ALL: 'C.UTF-8' },
      ...(asOwner && owner ? owner : {}),
    });
    const keep = (d: Buffer): void => {
      // The tail is what explains a failure; keep the last 200 kB per process.
      const s = (this.logs.get(name) ?? '') + d.toString('utf8');
      this.logs.set(name, s.length > 200_000 ? s.slice(-200_000) : s);
    };
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    child.on('error', (e) => keep(Buffer.from(`spawn error: ${e.message}\n`)));
    return child;
  }

  static async create(): Promise<HaCluster> {
    const bin = pgBinDir();
    if (bin === undefined) throw new Error('PostgreSQL is not installed; .ci/run installs it');
    for (const b of ['/usr/bin/patroni', '/usr/bin/etcd', '/usr/sbin/haproxy']) {
      if (!existsSync(b)) throw new Error(`${b} is missing: .ci/run installs patroni, etcd-server and haproxy from Debian's packages`);
    }
    const dir = mkdtempSync(path.join(os.tmpdir(), 'pithos-ha-'));
    if (owner) chownSync(dir, owner.uid, owner.gid);
    const c = new HaCluster(dir, bin);
    try {
      await c.boot();
    } catch (e) {
      c.destroy();
      throw e;
    }
    return c;
  }

  private async boot(): Promise<void> {
    this.etcdPort = await freePort();
    const peer = await freePort();
    this.etcd = this.start(
      'etcd',
      '/usr/bin/etcd',
      [
        '--name',
        'e1',
        '--data-dir',
        path.join(this.dir, 'etcd'),
        '--listen-client-urls',
        `http://127.0.0.1:${this.etcdPort}`,
        '--advertise-client-urls',
        `http://127.0.0.1:${this.etcdPort}`,
        '--listen-peer-urls',
        `http://127.0.0.1:${peer}`,
        '--initial-advertise-peer-urls',
        `http://127.0.0.1:${peer}`,
        '--initial-cluster',
        `e1=http://127.0.0.1:${peer}`,
        '--enable-v2=true',
      ],
      false,
    );
    await until(async () => ((await rest(this.etcdPort, 'GET', '/v2/keys')).status === 200 ? true : undefined), 30_000, 'etcd');

    for (let i = 1; i <= 3; i++) {
      const m: Member = { name: `pg${i}`, pgPort: await freePort(), restPort: await freePort(), dir: path.join(this.dir, `pg${i}`), proc: null };
      mkdirSync(m.dir);
      if (owner) chownSync(m.dir, owner.uid, owner.gid);
      writeFileSync(path.join(m.dir, 'patroni.yml'), this.patroniConfig(m));
      this.members.push(m);
    }
    // The first member bootstraps (initdb) before the others clone it, so start it alone.
    this.startPatroni(this.members[0]);
    await until(async () => ((await this.leader()) === 'pg1' ? true : undefined), 90_000, 'pg1 to bootstrap and lead', 500);
    for (const m of this.members.slice(1)) this.startPatroni(m);

    this.proxyPort = await freePort();
    const stats = await freePort();
    writeFileSync(path.join(this.dir, 'haproxy.cfg'), this.haproxyConfig(stats));
    this.haproxy = this.start('haproxy', '/usr/sbin/haproxy', ['-db', '-f', path.join(this.dir, 'haproxy.cfg')], true);
    await this.healthy(120_000);
  }

  private patroniConfig(m: Member): string {
    return `scope: pithos-ha
name: ${m.name}
log:
  level: INFO
restapi:
  listen: 127.0.0.1:${m.restPort}
  connect_address: 127.0.0.1:${m.restPort}
etcd:
  host: 127.0.0.1:${this.etcdPort}
bootstrap:
  dcs:
    ttl: ${PATRONI.ttl}
    loop_wait: ${PATRONI.loop_wait}
    retry_timeout: ${PATRONI.retry_timeout}
    maximum_lag_on_failover: 1048576
    master_start_timeout: 0
    synchronous_mode: true
    postgresql:
      use_pg_rewind: true
      use_slots: true
      parameters:
        wal_level: replica
        hot_standby: 'on'
        wal_log_hints: 'on'
        max_connections: 100
        max_wal_senders: 10
        max_replication_slots: 10
        wal_keep_size: 128MB
  initdb:
    - encoding: UTF8
    - locale: C
  pg_hba:
    - local all all trust
    - host replication all 127.0.0.1/32 trust
    - host all all 127.0.0.1/32 trust
postgresql:
  listen: 127.0.0.1:${m.pgPort}
  connect_address: 127.0.0.1:${m.pgPort}
  data_dir: ${path.join(m.dir, 'data')}
  bin_dir: ${this.bin}
  pgpass: ${path.join(m.dir, 'pgpass')}
  authentication:
    superuser:
      username: postgres
      password: postgres
    replication:
      username: replicator
      password: replicator
    rewind:
      username: rewinder
      password: rewinder
  parameters:
    unix_socket_directories: '${m.dir}'
    shared_buffers: 32MB
tags:
  nofailover: false
  noloadbalance: false
  clonefrom: false
  nosync: false
`;
  }

  private haproxyConfig(stats: number): string {
    const servers = this.members.map((m) => `  server ${m.name} 127.0.0.1:${m.pgPort} maxconn 100 check port ${m.restPort}`).join('\n');
    return `global
  maxconn 200
defaults
  mode tcp
  log global
  retries 2
  timeout client 30m
  timeout connect 2s
  timeout server 30m
  timeout check 2s
listen stats
  mode http
  bind 127.0.0.1:${stats}
  stats enable
  stats uri /
listen primary
  bind 127.0.0.1:${this.proxyPort}
  option httpchk OPTIONS /primary
  http-check expect status 200
  default-server ${haproxyCheck()}
${servers}
`;
  }

  startPatroni(m: Member): void {
    m.proc = this.start(m.name, '/usr/bin/patroni', [path.join(m.dir, 'patroni.yml')], true);
  }

  /** The cluster as a Patroni REST API sees it (the first member that answers). */
  async view(): Promise<ClusterMember[] | undefined> {
    for (const m of this.members) {
      if (m.proc === null) continue;
      const r = await rest(m.restPort, 'GET', '/cluster', undefined, 1500);
      if (r.status === 200) {
        try {
          return (JSON.parse(r.body) as { members: ClusterMember[] }).members;
        } catch {
          /* a partial answer: ask the next */
        }
      }
    }
    return undefined;
  }

  async leader(): Promise<string | undefined> {
    return (await this.view())?.find((x) => x.role === 'leader' && x.state === 'running')?.name;
  }

  member(name: string): Member {
    const m = this.members.find((x) => x.name === name);
    if (m === undefined) throw new Error(`no member ${name}`);
    return m;
  }

  /**
   * Waits until one leader runs, both others replicate, one of them is the
   * synchronous standby, and HAProxy routes to the leader (its `OPTIONS
   * /primary` answers 200). Returns the leader's and sync standby's names.
   */
  async healthy(ms = 90_000): Promise<{ leader: string; sync: string }> {
    return until(
      async () => {
        const v = await this.view();
        if (v === undefined || v.length !== 3) return undefined;
        const leader = v.find((x) => x.role === 'leader' && x.state === 'running');
        const sync = v.find((x) => x.role === 'sync_standby' && (x.state === 'running' || x.state === 'streaming'));
        const others = v.filter((x) => x.role !== 'leader');
        if (leader === undefined || sync === undefined || !others.every((x) => x.state === 'running' || x.state === 'streaming')) return undefined;
        if (others.some((x) => x.timeline !== leader.timeline)) return undefined;
        if ((await rest(this.member(leader.name).restPort, 'OPTIONS', '/primary', undefined, 1500)).status !== 200) return undefined;
        return { leader: leader.name, sync: sync.name };
      },
      ms,
      `a healthy cluster (${JSON.stringify(await this.view().catch(() => undefined))})`,
      500,
    );
  }

  /** The postmaster's pid of a member (first line of postmaster.pid), or undefined when it is not running. */
  postmasterPid(m: Member): number | undefined {
    try {
      const pid = Number(readFileSync(path.join(m.dir, 'data', 'postmaster.pid'), 'utf8').split('\n')[0]);
      process.kill(pid, 0);
      return pid;
    } catch {
      return undefined;
    }
  }

  /** The postmaster and every process it started. */
  pgProcesses(m: Member): number[] {
    const pm = this.postmasterPid(m);
    if (pm === undefined) return [];
    const r = spawnSync('ps', ['-o', 'pid=', '--ppid', String(pm)], { encoding: 'utf8' });
    return [
      pm,
      ...r.stdout
        .split('\n')
        .map((x) => Number(x.trim()))
        .filter((x) => x > 0),
    ];
  }

  killPostmaster(m: Member): void {
    const pm = this.postmasterPid(m);
    if (pm === undefined) throw new Error(`${m.name} has no running postmaster`);
    process.kill(pm, 'SIGKILL');
  }

  /** SIGKILL of Patroni itself: its PostgreSQL keeps running, headless. */
  killPatroni(m: Member): void {
    m.proc?.kill('SIGKILL');
    m.proc = null;
  }

  /** Stops a member whole (Patroni, the postmaster and its processes), as a hung machine. Returns what to thaw. */
  freeze(m: Member): number[] {
    const pids = [m.proc?.pid ?? -1, ...this.pgProcesses(m)].filter((p) => p > 0);
    for (const p of pids) process.kill(p, 'SIGSTOP');
    const more = this.pgProcesses(m).filter((p) => !pids.includes(p));
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

  /** A planned switchover through the leader's REST API; resolves with Patroni's answer. */
  switchover(leader: string, candidate: string): Promise<{ status: number; body: string }> {
    return rest(this.member(leader).restPort, 'POST', '/switchover', { leader, candidate }, 60_000);
  }

  /** The members' PostgreSQL ports, in order (a multi-host URL's hosts). */
  get pgPorts(): number[] {
    return this.members.map((m) => m.pgPort);
  }

  /** Kills every process started here (and the PostgreSQL servers Patroni started), removes the directory. Never throws. */
  destroy(): void {
    const pids: number[] = [];
    for (const m of this.members) {
      pids.push(...this.pgProcesses(m));
      if (m.proc?.pid !== undefined) pids.push(m.proc.pid);
    }
    for (const c of [this.haproxy, this.etcd]) if (c?.pid !== undefined) pids.push(c.pid);
    for (const p of pids) {
      try {
        process.kill(p, 'SIGCONT');
        process.kill(p, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
    // Backends die with their postmaster; give the kernel a moment before removing their files.
    spawnSync('sleep', ['0.5']);
    rmSync(this.dir, { recursive: true, force: true });
  }
}
