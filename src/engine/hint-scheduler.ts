/**
 * When hint files get built (hints.ts): a segment that stops being appended
 * to gets its hint after a delay, in the background. A hint only speeds up the
 * next open, and in an overwrite-heavy log the segment is often compacted
 * away before the delay ends, which saves reading it again. Under compression
 * the same delay comes before the segment is rewritten compressed (recode.ts),
 * for the same reason: compaction compresses what it copies.
 */
import type { Logger } from '../log.js';
import type { FileOps } from './fileops.js';
import { buildHint } from './hints.js';
import type { Segment } from './segment.js';

export class HintScheduler {
  /** Hint files being built; wait() resolves once none is, so no file is written after close. */
  private readonly builds = new Set<Promise<void>>();
  /** Builds waiting out the delay; stop() drops them. */
  private readonly timers = new Set<NodeJS.Timeout>();
  /** Of those, the ones that do something else than build a hint, with what they do. */
  private readonly waiting = new Map<NodeJS.Timeout, () => void>();
  private stopped = false;

  constructor(
    private readonly fs: FileOps,
    private readonly log: Logger,
    private readonly delayMs: number,
  ) {}

  /**
   * A segment has stopped being appended to: build its hint once the delay
   * has passed, or do `instead` then (compression rewrites the segment and
   * writes its hint itself, recode.ts).
   */
  later(seg: Segment, instead?: () => void): void {
    const run = instead ?? (() => this.now(seg));
    if (this.delayMs === 0) {
      run();
      return;
    }
    const t = setTimeout(() => {
      this.timers.delete(t);
      this.waiting.delete(t);
      if (!seg.retired && !this.stopped) run();
    }, this.delayMs).unref();
    this.timers.add(t);
    if (instead !== undefined) this.waiting.set(t, run);
  }

  /** Runs now every `instead` still waiting out its delay (Engine.recodesDone). */
  hurry(): void {
    for (const [t, run] of this.waiting) {
      clearTimeout(t);
      this.timers.delete(t);
      run();
    }
    this.waiting.clear();
  }

  /** Builds a segment's hint in the background now; wait() waits for it. */
  now(seg: Segment): void {
    const p: Promise<void> = buildHint(this.fs, seg)
      .catch((err) => this.log('warn', `hint for ${seg.name}: ${String(err)}`))
      .finally(() => this.builds.delete(p));
    this.builds.add(p);
  }

  /** Drops every build still waiting out its delay; none starts after this. */
  stop(): void {
    this.stopped = true;
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    this.waiting.clear();
  }

  /** Resolves once no hint is being built. */
  async wait(): Promise<void> {
    while (this.builds.size > 0) await Promise.all(this.builds);
  }
}
