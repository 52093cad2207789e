/** Ports on 127.0.0.1 for the processes tests and benchmarks start (servers, redis-server, PostgreSQL). */
import type { ChildProcess } from 'node:child_process';
import net from 'node:net';

/** A port nothing listens on now (the kernel's pick; another process may take it before it is used). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

/**
 * Waits until something accepts TCP connections on the port, at most `ms`;
 * with `child`, fails at once when that process exits first. `name` says
 * what was expected in the error.
 */
export async function waitPort(port: number, o: { ms?: number; child?: ChildProcess; name?: string } = {}): Promise<void> {
  const ms = o.ms ?? 15_000;
  const name = o.name ?? 'a process';
  const until = Date.now() + ms;
  for (;;) {
    const c = o.child;
    if (c !== undefined && (c.exitCode !== null || c.signalCode !== null)) throw new Error(`${name} exited (${c.exitCode ?? c.signalCode}) before listening`);
    const ok = await new Promise<boolean>((resolve) => {
      const sock = net.connect(port, '127.0.0.1');
      sock.once('connect', () => {
        sock.destroy();
        resolve(true);
      });
      sock.once('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > until) throw new Error(`${name} did not listen on port ${port} within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
