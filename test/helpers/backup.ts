/** GET /backup of a running server, read into memory (docs/operations.md, "Backups"). */
import http from 'node:http';

export interface Backup {
  status: number;
  type: string | undefined;
  body: Buffer;
  /** When the answer's headers arrived (performance.now()): the snapshot is older. */
  headersAt: number;
}

export function fetchBackup(s: { port: number; token: string }): Promise<Backup> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: s.port, path: '/backup', headers: { 'Auth-Token': s.token } }, (res) => {
      const headersAt = performance.now();
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, type: res.headers['content-type'], body: Buffer.concat(chunks), headersAt }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}
