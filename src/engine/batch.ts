/**
 * One batch on its way into the log: the checks a batch must pass before it
 * is encoded, and its application to the key directory with what undoing it
 * takes. The group writer (writer.ts) queues the result until the log has it.
 */
import { BatchTooLargeError } from './errors.js';
import { batchTooLarge, ENTRY_HEADER_SIZE, entrySize, MAX_BATCH_BYTES, MAX_KEY_BYTES, Op, valueCrc } from './format.js';
import { Entry } from './entry.js';
import type { KeyDir } from './keydir.js';
import type { WriteOp } from './types.js';

export interface Pending {
  seq: number;
  /** The encoded batch; empty while the batch is open to later writes of the same turn (writer.ts, join). */
  buf: Buffer;
  /** The batch's writes in order, for the commit hook: one caller's, or several callers' when writes joined it. */
  ops: WriteOp[];
  /** Bytes the batch takes encoded (BATCH_HEADER_SIZE with no entry). */
  size: number;
  /** Settles when the log has the batch; every write that joined it is given this one. */
  promise: Promise<void>;
  /** Entries created by this batch, with their value offsets inside `buf`. */
  created: Entry[];
  createdOffsets: number[];
  /** In a sealed segment: where the batch's sealed unit starts, from the start of its group (seal.ts, sealGroup). */
  unitAt: number;
  /** (key, previous version) pairs in the order they were replaced. */
  undoKeys: string[];
  undoPrev: Array<Entry | undefined>;
  resolve: () => void;
  reject: (e: unknown) => void;
}

const isWellFormed = (String.prototype as unknown as { isWellFormed: (this: string) => boolean }).isWellFormed;

/** Why the batch cannot be written (nothing has changed then), or undefined when it can. */
export function checkOps(ops: readonly WriteOp[]): Error | undefined {
  for (let i = 0; i < ops.length; i++) {
    const o = ops[i];
    if (typeof o.key !== 'string' || o.key.length === 0 || (o.key.length * 3 > MAX_KEY_BYTES && Buffer.byteLength(o.key) > MAX_KEY_BYTES)) {
      return new RangeError(`key must be 1..${MAX_KEY_BYTES} bytes`);
    }
    // A lone surrogate would be stored as U+FFFD: the key read back at the
    // next start would differ from (and could collide with) the one written.
    if (!isWellFormed.call(o.key)) return new RangeError('key must be well-formed UTF-16 (no lone surrogates)');
    // Any other op byte would make the batch unreadable at the next start.
    if (o.op !== Op.Put && o.op !== Op.Del && o.op !== Op.DropGroup) return new RangeError(`unknown op ${String(o.op)}`);
    // NaN would never expire yet sit in the expiry heap, breaking its order.
    if (typeof o.expiresAt !== 'number' || Number.isNaN(o.expiresAt)) return new RangeError('expiresAt must be a number (0 = never)');
    if (o.op === Op.Put && !(o.value instanceof Buffer)) return new TypeError('put needs a Buffer value');
  }
  if (batchTooLarge(ops)) return new BatchTooLargeError(MAX_BATCH_BYTES);
  return undefined;
}

/**
 * Applies `ops`, which are being added to batch `p`, to the directory at
 * `now`: records in `p` the entries they create (with their value offsets
 * in the batch, from `valueOffsets`, which `layOut` computed) and every
 * version they replace, so failFrom (writer.ts) can undo them. `stored`
 * holds the values as the log holds them; the directory caches the caller's
 * values.
 */
export function applyBatch(
  kd: KeyDir,
  p: Pending,
  ops: readonly WriteOp[],
  stored: readonly WriteOp[],
  keyLens: readonly number[],
  valueOffsets: readonly number[],
  now: number,
): void {
  for (let i = 0; i < ops.length; i++) {
    const o = ops[i];
    if (o.op === Op.Put) {
      const value = o.value as Buffer;
      if (o.expiresAt !== 0 && o.expiresAt <= now) {
        // Already expired: logged for order's sake, invisible at once.
        if (kd.get(o.key) !== undefined) {
          p.undoKeys.push(o.key);
          p.undoPrev.push(kd.delete(o.key));
        }
        continue;
      }
      const sv = stored[i].value as Buffer;
      const e = new Entry(undefined, 0, sv.length, entrySize(keyLens[i], sv.length), o.expiresAt, valueCrc(sv, 0, sv.length), p.seq);
      kd.cache(e, value, o.memo, o.memo === undefined ? undefined : o.decoder);
      p.undoKeys.push(o.key);
      p.undoPrev.push(kd.set(o.key, e));
      p.created.push(e);
      p.createdOffsets.push(valueOffsets[i]);
    } else if (o.op === Op.Del) {
      const prev = kd.delete(o.key);
      if (prev !== undefined) {
        p.undoKeys.push(o.key);
        p.undoPrev.push(prev);
      }
    } else {
      for (const [k, e] of kd.dropGroup(o.key)) {
        p.undoKeys.push(k);
        p.undoPrev.push(e);
      }
    }
  }
}

/**
 * Where `ops` go when appended to a batch of `size` bytes, as encodeBatch
 * lays them out (format.ts): each key's UTF-8 length into `keyLens`, each
 * value's offset from the batch's start into `valueOffsets`. Returns the
 * batch's new size.
 */
export function layOut(ops: readonly WriteOp[], size: number, keyLens: number[], valueOffsets: number[]): number {
  for (let i = 0; i < ops.length; i++) {
    const o = ops[i];
    const kl = Buffer.byteLength(o.key, 'utf8');
    keyLens[i] = kl;
    valueOffsets[i] = size + ENTRY_HEADER_SIZE + kl;
    size = valueOffsets[i] + (o.value === undefined ? 0 : o.value.length);
  }
  return size;
}
