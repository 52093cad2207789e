/**
 * Data keys for encryption at rest (docs/format.md, "Encryption"): the
 * current key, which seals everything written from now on, and older keys
 * that segments and hints written before a rotation still need.
 *
 * A key is 32 random bytes (AES-256). Its id, stored in every sealed segment
 * header and hint, is the first 8 bytes of HMAC-SHA-256(key, "pithos key
 * id"): it names the key a file needs without revealing anything usable
 * about it, and a wrong key is recognised from the header alone, before
 * anything is read or written.
 */
import { createHmac } from 'node:crypto';
import * as fs from 'node:fs';

export const KEY_BYTES = 32;
export const KEY_ID_BYTES = 8;

export class DataKey {
  readonly id: Buffer;
  /** The id as 16 hex digits, as messages and `pithos keys` print it. */
  readonly idHex: string;
  constructor(readonly key: Buffer) {
    if (key.length !== KEY_BYTES) throw new KeyFileError(`a data key must be ${KEY_BYTES} bytes, got ${key.length}`);
    this.id = createHmac('sha256', key).update('pithos key id').digest().subarray(0, KEY_ID_BYTES);
    this.idHex = this.id.toString('hex');
  }
}

export class Keyring {
  private readonly byId = new Map<string, DataKey>();
  /** `current` seals new data; `old` keys only open what they sealed before. */
  constructor(
    readonly current: DataKey,
    old: readonly DataKey[] = [],
  ) {
    for (const k of [current, ...old]) this.byId.set(k.idHex, k);
  }

  get(idHex: string): DataKey | undefined {
    return this.byId.get(idHex);
  }

  get ids(): string[] {
    return [...this.byId.keys()];
  }
}

/** A key file that cannot be used; the message names the file and the reason. */
export class KeyFileError extends Error {
  readonly code = 'KEY_FILE';
}

/**
 * The key in a key file's text: 64 hex digits (what `openssl rand -hex 32`
 * prints) or the base64 of 32 bytes, surrounding whitespace ignored.
 */
export function parseKey(text: string): Buffer | string {
  const t = text.trim();
  if (/^[0-9a-fA-F]{64}$/.test(t)) return Buffer.from(t, 'hex');
  if (/^[A-Za-z0-9+/]{43}=$/.test(t)) {
    const b = Buffer.from(t, 'base64');
    if (b.length === KEY_BYTES) return b;
  }
  const hexLike = /^[0-9a-fA-F]+$/.test(t);
  return (
    `must hold one ${KEY_BYTES}-byte key as 64 hex digits (e.g. \`openssl rand -hex 32\`) or 44 base64 characters; ` +
    (t.length === 0 ? 'it is empty' : hexLike ? `it holds ${t.length} hex digits` : `it holds ${t.length} characters that are neither`)
  );
}

/**
 * Reads a key file. The file must be readable by its owner only (mode 0600 or
 * 0400): a key that others can read protects nothing, so a group- or
 * world-accessible file is refused unless `allowInsecure` is set.
 */
export function readKeyFile(file: string, allowInsecure: boolean): DataKey {
  let st: fs.Stats;
  let text: string;
  try {
    st = fs.statSync(file);
    if (!st.isFile()) throw new KeyFileError(`encryption key file ${file} is not a regular file`);
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    if (err instanceof KeyFileError) throw err;
    const code = (err as NodeJS.ErrnoException).code;
    throw new KeyFileError(`cannot read encryption key file ${file}: ${code === 'ENOENT' ? 'it does not exist' : (code ?? String(err))}`);
  }
  if ((st.mode & 0o077) !== 0 && !allowInsecure) {
    throw new KeyFileError(
      `encryption key file ${file} is accessible to other users (mode ${(st.mode & 0o777).toString(8).padStart(4, '0')}); ` +
        `run \`chmod 600 ${file}\`, or pass --allow-insecure-key-file to use it anyway`,
    );
  }
  const key = parseKey(text);
  if (typeof key === 'string') throw new KeyFileError(`encryption key file ${file} ${key}`);
  return new DataKey(key);
}

export interface KeySources {
  /** The key file of the current key. */
  keyFile?: string;
  /** Key files of older keys. */
  oldKeyFiles?: readonly string[];
  /** The current key given inline (the config file's `encryptor.secret`), and the file it came from. */
  secret?: { text: string; file: string };
  allowInsecure?: boolean;
}

/**
 * The keyring the sources describe; undefined when they give no current key.
 * An inline key is held to the same rule as a key file: the config file
 * holding it must be private to its owner.
 */
export function loadKeyring(src: KeySources): Keyring | undefined {
  const old = src.oldKeyFiles ?? [];
  const allow = src.allowInsecure === true;
  let current: DataKey | undefined;
  if (src.keyFile !== undefined) current = readKeyFile(src.keyFile, allow);
  else if (src.secret !== undefined) {
    const file = src.secret.file;
    let mode = 0;
    try {
      mode = fs.statSync(file).mode;
    } catch (err) {
      throw new KeyFileError(`cannot check config file ${file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
    }
    if ((mode & 0o077) !== 0 && !allow) {
      throw new KeyFileError(
        `config file ${file} holds the encryption key ('encryptor.secret') but other users can access it ` +
          `(mode ${(mode & 0o777).toString(8).padStart(4, '0')}); run \`chmod 600 ${file}\`, or pass --allow-insecure-key-file`,
      );
    }
    const key = parseKey(src.secret.text);
    if (typeof key === 'string') throw new KeyFileError(`config file key 'encryptor.secret' ${key}`);
    current = new DataKey(key);
  }
  if (current === undefined) {
    if (old.length > 0) throw new KeyFileError('--encryption-old-key-files needs --encryption-key-file (the key new data is sealed with)');
    return undefined;
  }
  return new Keyring(
    current,
    old.map((f) => readKeyFile(f, allow)),
  );
}
