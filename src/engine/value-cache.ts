/**
 * The key directory's value cache: values (and their decoded forms) kept on
 * their entries under a byte budget, evicted by CLOCK. The queue holds the
 * cached entries in the order they were cached; eviction walks it from the
 * head, giving an entry used since its last visit (FLAG_REF) a second chance.
 */
import { type Decoder, decoderId, type Entry, FLAG_QUEUED, FLAG_REF } from './entry.js';

/** Cost charged against the cache budget for one cached value (object overheads included). */
function cacheCost(e: Entry): number {
  return (e.val === undefined ? 0 : e.vlen + 96) + (e.memo === undefined ? 0 : 2 * e.vlen + 64);
}

export class ValueCache {
  // Invariant: an entry has FLAG_QUEUED exactly when queue[e.qpos - queueBase]
  // is that entry, at or after head.
  private queue: Entry[] = [];
  private head = 0;
  private queueBase = 0;
  /** Entries whose val or memo is set (the queue may also hold slots of dropped ones). */
  private cachedEntries = 0;
  bytes = 0;
  budget: number;

  /** Decides whether an entry's value may leave memory (false while its bytes are not in the file). */
  evictable: (e: Entry) => boolean = () => true;

  constructor(budget: number) {
    this.budget = budget;
  }

  /**
   * A write caches its new version (queued last) and then retires the old
   * one, whose slot would stay behind, dead, until a prune: the new version
   * takes that slot instead, so a key rewritten N times holds one slot, not
   * N (a table's meta key is rewritten by every row insert: without this,
   * every inserted row kept a dead entry alive).
   */
  takeSlot(prev: Entry, e: Entry): void {
    const q = this.queue;
    if ((e.flags & FLAG_QUEUED) === 0 || q[q.length - 1] !== e) return;
    q[prev.qpos - this.queueBase] = e;
    e.qpos = prev.qpos;
    prev.flags &= ~FLAG_QUEUED;
    q.pop();
  }

  /**
   * Attaches a value (and optionally its decoded form) to an entry. The bytes
   * are kept only while they are the entry's only form, or not yet in the log
   * (see dropBytes, which applies the same rule once they are).
   */
  cache(e: Entry, val: Buffer | undefined, memo: unknown, dec: Decoder<unknown> | undefined): void {
    // A decoded form is only of use with its decoder's number (entry.ts, decoderId).
    if (memo !== undefined && decoderId(dec) === 0) memo = undefined;
    if (memo !== undefined && e.seg !== undefined) val = undefined;
    // Nothing to hold (a decoder that returned undefined and no bytes): counting the
    // entry as cached would leave it counted forever, as uncache() sees nothing to drop.
    if (val === undefined && memo === undefined) return;
    const before = cacheCost(e);
    const wasCached = e.val !== undefined || e.memo !== undefined;
    e.hold(val, memo);
    e.dec = dec;
    this.bytes += cacheCost(e) - before;
    if (!wasCached) {
      this.cachedEntries++;
      if ((e.flags & FLAG_QUEUED) === 0) {
        e.flags |= FLAG_QUEUED;
        e.qpos = this.queueBase + this.queue.length;
        this.queue.push(e);
        // Versions replaced or deleted while under budget leave their slots
        // behind; drop them once they outnumber the cached entries, or the
        // queue would grow with every overwrite.
        if (this.queue.length - this.head > 2 * this.cachedEntries + 1024) this.prune();
      }
    }
    e.flags |= FLAG_REF;
    if (this.bytes > this.budget) this.evict();
  }

  private prune(): void {
    const q = this.queue;
    const kept: Entry[] = [];
    for (let i = this.head; i < q.length; i++) {
      const e = q[i];
      if (e.val !== undefined || e.memo !== undefined) {
        e.qpos = kept.length;
        kept.push(e);
      } else e.flags &= ~FLAG_QUEUED;
    }
    this.queue = kept;
    this.head = 0;
    this.queueBase = 0;
  }

  /**
   * Lets go of the stored bytes of an entry whose decoded form is cached,
   * once its bytes are in the log file (the engine calls it when the write
   * lands): reads use the decoded form, and a read with another decoder
   * reads the file. Rows and documents so hold one copy in memory, not two
   * (and no slice pins an 8 KiB buffer pool).
   */
  dropBytes(e: Entry): void {
    if (e.val === undefined) return;
    if (e.val.length === 0) {
      // An empty value (a set member, a secondary index entry: the key is all
      // there is) would hold a queue slot and 96-160 bytes of the budget to
      // remember nothing; once in the log, reading it back reads nothing.
      this.uncache(e);
      return;
    }
    if (e.memo === undefined) return;
    const before = cacheCost(e);
    e.val = undefined;
    this.bytes += cacheCost(e) - before;
  }

  /** Whether a value of `vlen` bytes (and its decoded form) can be cached without evicting anything. */
  hasRoom(vlen: number): boolean {
    return this.bytes + 3 * vlen + 160 <= this.budget;
  }

  /** Changes an entry's stored value length (compaction re-encoded it), keeping the cache's charge right. */
  resize(e: Entry, vlen: number): void {
    const before = cacheCost(e);
    e.vlen = vlen;
    this.bytes += cacheCost(e) - before;
  }

  uncache(e: Entry): void {
    if (e.val === undefined && e.memo === undefined) return;
    this.cachedEntries--;
    this.bytes -= cacheCost(e);
    e.hold(undefined, undefined);
    e.dec = undefined;
  }

  private evict(): void {
    const q = this.queue;
    // Two passes over the queue at most: the first may only clear ref bits.
    let budget = 2 * (q.length - this.head) + 1;
    while (this.bytes > this.budget && this.head < q.length && budget-- > 0) {
      const e = q[this.head];
      (q as Array<Entry | undefined>)[this.head] = undefined;
      this.head++;
      if (e.val === undefined && e.memo === undefined) {
        e.flags &= ~FLAG_QUEUED; // already dropped
        continue;
      }
      if ((e.flags & FLAG_REF) !== 0 || !this.evictable(e)) {
        e.flags &= ~FLAG_REF;
        e.qpos = this.queueBase + q.length;
        q.push(e);
        continue;
      }
      e.flags &= ~FLAG_QUEUED;
      this.uncache(e);
    }
    if (this.head > 4096 && this.head * 2 > q.length) {
      this.queue = q.slice(this.head);
      this.queueBase += this.head;
      this.head = 0;
    }
  }
}
