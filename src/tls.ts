/**
 * TLS material for --tls-cert / --tls-key (docs/operations.md, "TLS"):
 * read both PEM files and check them by building a secure context, so a
 * bad pair is refused with a reason at start-up and on SIGHUP (when the
 * context in force is kept).
 */
import { readFileSync } from 'node:fs';
import { createSecureContext, type Server as TlsServer } from 'node:tls';

export interface TlsFiles {
  cert: string;
  key: string;
}

export interface TlsMaterial {
  cert: Buffer;
  key: Buffer;
}

export function loadTls(files: TlsFiles): TlsMaterial {
  let cert: Buffer;
  let key: Buffer;
  try {
    cert = readFileSync(files.cert);
  } catch (err) {
    throw new Error(`cannot read --tls-cert ${files.cert}: ${(err as Error).message}`);
  }
  try {
    key = readFileSync(files.key);
  } catch (err) {
    throw new Error(`cannot read --tls-key ${files.key}: ${(err as Error).message}`);
  }
  try {
    // Throws on unparsable PEM and on a key that does not match the certificate.
    createSecureContext({ cert, key });
  } catch (err) {
    throw new Error(`--tls-cert ${files.cert} / --tls-key ${files.key}: ${(err as Error).message}`);
  }
  return { cert, key };
}

/** New connections use the new pair; open ones keep theirs until they close. */
export function reloadTls(server: unknown, files: TlsFiles): void {
  const m = loadTls(files);
  (server as TlsServer).setSecureContext({ cert: m.cert, key: m.key });
}
