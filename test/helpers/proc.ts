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
