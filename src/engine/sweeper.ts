/**
 * Expiry: the sweep that removes keys whose ttl ended from the directory, in
 * slices that yield to the event loop between them, and the key directory
 * that reports each such removal to the expiry hook (the store's change
 * feed hears of expirations through it).
 */
import * as fs from 'node:fs';
import { valueCrc } from './format.js';
import type { Entry } from './entry.js';
import { KeyDir } from './keydir.js';
import type { ExpireHook } from './core.js';

/** Keys removed per slice of a sweep. */
const SLICE = 10_000;

/**
 * The key directory with an expiry hook: KeyDir.sweep removes a key through
 * delete(), so deletions made while `sweeping` are the keys whose ttl ended.
 */
export class SweptKeyDir extends KeyDir {
  sweeping = false;
  onExpire: ExpireHook | undefined = undefined;

  override delete(key: string): Entry | undefined {
    const e = super.delete(key);
    if (this.sweeping && e !== undefined && this.onExpire !== undefined) this.onExpire(key, e.seq, () => valueNow(e));
    return e;
  }
}

export class Sweeper {
  private running = false;

  constructor(
    private readonly keydir: SweptKeyDir,
    private readonly now: () => number,
  ) {}

  /** Removes expired keys from the directory in slices that yield between them; one sweep at a time. */
  async sweep(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      const kd = this.keydir;
      for (;;) {
        // Only deletions made by the sweep itself are expirations.
        kd.sweeping = true;
        let n: number;
        try {
          n = kd.sweep(this.now(), SLICE);
        } finally {
          kd.sweeping = false;
        }
        if (n !== SLICE) break;
        await new Promise((r) => setImmediate(r));
      }
    } finally {
      this.running = false;
    }
  }
}

/**
 * An entry's value at once: cached, or read synchronously from its segment
 * (the sweep runs inside one turn, and what it reports must not be
 * overtaken by later changes). Undefined when it cannot be read or fails its
 * checksum; the caller then does without it.
 */
function valueNow(e: Entry): Buffer | undefined {
  if (e.val !== undefined) return e.val;
  const seg = e.seg;
  if (seg === undefined || seg.fd < 0) return undefined;
  const buf = Buffer.allocUnsafe(e.vlen);
  try {
    if (fs.readSync(seg.fd, buf, 0, e.vlen, e.vpos) !== e.vlen) return undefined;
  } catch {
    return undefined;
  }
  return valueCrc(buf, 0, e.vlen) === e.crc ? buf : undefined;
}
