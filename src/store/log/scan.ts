/**
 * A table's rows at one instant as a RowSource (src/store/stream.ts), over
 * the engine's group snapshot (src/engine/snapshot.ts): the versions current
 * at that instant, each taken from the cache if it is there when its batch
 * is read, else read from the log with the rest of its batch. So a large
 * answer is one point in time whether its table is cached or not, and a
 * cold table is never held in memory whole.
 */
import type { GroupSnapshot } from '../../engine/index.js';
import type { IdRow } from '../query.js';
import { batchEnd, type RowSource } from '../stream.js';
import type { RowMemo } from './atomic.js';
import { rowIdOf } from './keys.js';

export class SnapshotRows implements RowSource {
  constructor(private readonly snap: GroupSnapshot<RowMemo>) {}

  get length(): number {
    return this.snap.length;
  }

  firstAbove(after: number): number {
    if (after <= 0) return 0;
    let lo = 0;
    let hi = this.snap.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (rowIdOf(this.snap.key(mid)) <= after) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  batchEnd(from: number, end: number): number {
    return batchEnd(from, end, (i) => this.snap.size(i));
  }

  read(from: number, to: number): IdRow[] | Promise<IdRow[]> {
    return this.snap.read(from, to);
  }

  release(): void {
    this.snap.release();
  }
}
