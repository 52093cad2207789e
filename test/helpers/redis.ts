/**
 * The Redis side of the black-box tests: a Pithos server with its RESP
 * listener on a free port, and a real `redis-server` (Debian's package) in a
 * temporary directory with `appendonly yes, appendfsync always`, the
 * reference every command is compared against.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { PithosServer, type StartOptions } from './server.js';
import { freePort } from './net.js';

/** The RESP port a started server logged ("Redis protocol on redis://host:port"). */
export function respPort(srv: PithosServer): number {
  const m = /Redis protocol on rediss?:\/\/[^\s]*:(\d+)/.exec(srv.stdout + srv.stderr);
  if (m === null) throw new Error(`no Redis protocol line in the server's output:\n${srv.stdout}\n${srv.stderr}`);
  return Number(m[1]);
}

/** Starts Pithos with `--resp-port 0` (a free port) and answers it with that port. */
export async function startWithResp(opts: StartOptions = {}): Promise<{ srv: PithosServer; port: number }> {
  const srv = await PithosServer.start({ ...opts, args: [...(opts.args ?? []), '--resp-port', '0'] });
  return { srv, port: respPort(srv) };
}

export const REDIS_SERVER = '/usr/bin/redis-server';
export const hasRedis = (): boolean => spawnSync(REDIS_SERVER, ['--version']).status === 0;

/** A throw-away redis-server: durable as Pithos's default (fsync per write), on loopback only. */
export class RedisServer {
  private constructor(
    readonly port: number,
    private readonly child: ChildProcess,
    private readonly dir: string,
  ) {}

  static async start(): Promise<RedisServer> {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'redis-ref-'));
    const port = await freePort();
    const child = spawn(
      REDIS_SERVER,
      [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--dir',
        dir,
        '--appendonly',
        'yes',
        '--appendfsync',
        'always',
        '--save',
        '',
        '--daemonize',
        'no',
        '--loglevel',
        'warning',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr?.on('data', (d: Buffer) => (out += d.toString()));
    const deadline = Date.now() + 20_000;
    for (;;) {
      if (await canConnect(port)) break;
      if (Date.now() > deadline || child.exitCode !== null) {
        child.kill('SIGKILL');
        throw new Error(`redis-server did not start: ${out}`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    return new RedisServer(port, child, dir);
  }

  async close(): Promise<void> {
    if (this.child.exitCode === null) {
      const done = new Promise((r) => this.child.once('exit', r));
      this.child.kill('SIGKILL');
      await done;
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

/** Sends raw bytes on a new connection and collects what comes back until the server closes or `ms` pass. */
export function rawExchange(port: number, bytes: Buffer | string, ms = 2000): Promise<{ data: string; closed: boolean }> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    let data = '';
    let closed = false;
    const timer = setTimeout(() => {
      s.destroy();
      resolve({ data, closed });
    }, ms);
    s.on('data', (d: Buffer) => (data += d.toString('latin1')));
    s.on('close', () => {
      closed = true;
      clearTimeout(timer);
      resolve({ data, closed });
    });
    s.on('error', () => undefined);
    s.write(bytes);
  });
}
