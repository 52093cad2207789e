/**
 * What every bare baseline server (bench/baseline.ts, rest-baseline.ts,
 * pg-baseline.ts) does around its handler: listen, print the line
 * bench/proc.ts's startServer waits for, and stop on SIGTERM or SIGINT,
 * closing its connections (and anything else `close` names) first.
 */
import type { Server } from 'node:http';

export function serveBare(server: Server, name: string, host: string, port: number, close: () => Promise<unknown> = () => Promise.resolve()): void {
  server.listen(port, host, () => {
    const a = server.address();
    process.stdout.write(`${name} listening on http://${host}:${typeof a === 'object' && a !== null ? a.port : port}\n`);
  });
  const stop = (): void => {
    server.close(() => void close().finally(() => process.exit(0)));
    server.closeAllConnections();
    setTimeout(() => process.exit(0), 2000).unref();
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}
