/** What a server process holds, read from /proc: for tests that bound descriptors and memory under attack. */
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

/** Sockets the process has open (the listener and stdio pipes included). */
export function serverSockets(pid: number): number {
  let n = 0;
  for (const f of readdirSync(`/proc/${pid}/fd`)) {
    try {
      if (readlinkSync(`/proc/${pid}/fd/${f}`).startsWith('socket:')) n++;
    } catch {
      /* closed meanwhile */
    }
  }
  return n;
}

/** Resident memory of a process, MiB (whole). */
export function rssMiB(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Math.round(Number(m[1]) / 1024) : -1;
}

/**
 * The kernel's queues of the IPv4 TCP connection from `localPort` to `remotePort` (both on
 * this machine, so both ends are in /proc/net/tcp): bytes sent but not yet taken by the
 * other end (tx) and bytes received but not yet read by the process holding it (rx).
 * Undefined when there is no such connection (not yet made, or closed).
 */
export function tcpQueues(localPort: number, remotePort: number): { tx: number; rx: number } | undefined {
  for (const line of readFileSync('/proc/net/tcp', 'utf8').split('\n').slice(1)) {
    const f = line.trim().split(/\s+/);
    if (f.length < 5) continue;
    const port = (addr: string): number => parseInt(addr.split(':')[1] ?? '', 16);
    if (port(f[1]) !== localPort || port(f[2]) !== remotePort) continue;
    const [tx, rx] = f[4].split(':').map((h) => parseInt(h, 16));
    return { tx, rx };
  }
  return undefined;
}
