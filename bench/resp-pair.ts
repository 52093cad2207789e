/**
 * The two servers a Redis-protocol benchmark compares (bench/resp.ts,
 * bench/pubsub.ts): a `redis-server` and a Pithos with its RESP port, in one
 * temporary directory, both listening before it returns; `stop` ends both
 * and removes the directory.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServer } from './proc.js';
import { freePort, waitPort } from '../test/helpers/net.js';

export interface RespPair {
  pithosPort: number;
  redisPort: number;
  /** Pithos's secret; redis-server takes none. */
  token: string;
  stop(): Promise<void>;
}

/** `server`: the Pithos build's entry point; the extra arguments go to each side. */
export async function startRespPair(o: { server: string; redisArgs: string[]; pithosArgs: string[] }): Promise<RespPair> {
  const dir = mkdtempSync(join(tmpdir(), 'pithos-resp-pair-'));
  const token = 'bench-resp-token';
  const redisPort = await freePort();
  const pithosPort = await freePort();
  const redis = spawn('redis-server', ['--port', String(redisPort), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--daemonize', 'no', ...o.redisArgs], {
    stdio: 'ignore',
  });
  const pithos = await startServer('pithos', process.execPath, [
    o.server,
    '--port',
    '0',
    '--resp-port',
    String(pithosPort),
    '--data-dir',
    join(dir, 'pithos'),
    '--auth-token',
    token,
    ...o.pithosArgs,
  ]);
  const stop = async (): Promise<void> => {
    redis.kill('SIGKILL');
    await pithos.stop();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await waitPort(redisPort);
    await waitPort(pithosPort);
  } catch (err) {
    await stop();
    throw err;
  }
  return { pithosPort, redisPort, token, stop };
}
