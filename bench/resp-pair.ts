/**
 * The servers a Redis-protocol benchmark compares (bench/resp.ts,
 * bench/pubsub.ts): a `redis-server` and a Pithos with its RESP port, and on
 * request the bare `node:net` baseline (bench/resp-baseline.ts), in one
 * temporary directory, all listening before it returns; `stop` ends them and
 * removes the directory.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer } from './proc.js';
import { freePort, waitPort } from '../test/helpers/net.js';

export interface RespPair {
  pithosPort: number;
  redisPort: number;
  /** The baseline's port, when one was asked for. */
  baselinePort?: number;
  /** Pithos's secret; redis-server takes none. */
  token: string;
  stop(): Promise<void>;
}

/** `server`: the Pithos build's entry point; the extra arguments go to each side. */
export async function startRespPair(o: { server: string; redisArgs: string[]; pithosArgs: string[]; baseline?: boolean }): Promise<RespPair> {
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
  const baselinePort = o.baseline === true ? await freePort() : undefined;
  const baseline =
    baselinePort === undefined
      ? undefined
      : spawn(
          process.execPath,
          [join(dirname(fileURLToPath(import.meta.url)), 'resp-baseline.js'), '--port', String(baselinePort), '--file', join(dir, 'baseline.log')],
          {
            stdio: 'ignore',
          },
        );
  const stop = async (): Promise<void> => {
    redis.kill('SIGKILL');
    baseline?.kill('SIGKILL');
    await pithos.stop();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await waitPort(redisPort);
    await waitPort(pithosPort);
    if (baselinePort !== undefined) await waitPort(baselinePort);
  } catch (err) {
    await stop();
    throw err;
  }
  return { pithosPort, redisPort, baselinePort, token, stop };
}
