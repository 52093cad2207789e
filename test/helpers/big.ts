/** Requests with large answers, for tests that watch the server stay responsive meanwhile. */
import http from 'node:http';

export interface Big {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  /** From the request's start to the answer's last byte. */
  ms: number;
}

/**
 * A request on its own connection whose answer is only collected (parsed
 * later, if at all), so the test's own event loop stays free for the
 * probes that run meanwhile.
 */
export function bigRequest(s: { port: number; token: string }, method: string, path: string, body?: unknown): Promise<Big> {
  const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
  const start = performance.now();
  return new Promise((resolve, reject) => {
    const r = http.request(
      {
        host: '127.0.0.1',
        port: s.port,
        method,
        path,
        agent: false,
        headers: { 'Auth-Token': s.token, ...(payload ? { 'Content-Type': 'application/json', 'Content-Length': payload.length } : {}) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks), ms: performance.now() - start }));
      },
    );
    r.on('error', reject);
    r.end(payload);
  });
}
