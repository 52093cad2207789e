/** Certificates for the TLS tests (docs/operations.md, "TLS"), made with openssl at test time. */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

/** A self-signed P-256 certificate for 127.0.0.1 with common name `cn`, written to cert/key (one day); returns the PEM certificate. */
export function makeCert(cert: string, key: string, cn: string): string {
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      key,
      '-out',
      cert,
      '-days',
      '1',
      '-subj',
      `/CN=${cn}`,
      '-addext',
      'subjectAltName=IP:127.0.0.1',
    ],
    { stdio: 'ignore' },
  );
  return readFileSync(cert, 'utf8');
}
