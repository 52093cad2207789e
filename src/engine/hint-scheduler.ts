/**
 * When hint files get built (hints.ts): a segment that stops being appended
 * to gets its hint after a delay, in the background. A hint only speeds up the
 * next open, and in an overwrite-heavy log the segment is often compacted
 * away before the delay ends, which saves reading it again.
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
  private stopped = false;

  constructor(
    private readonly fs: FileOps,
    private readonly log: Logger,
    private readonly delayMs: number,
  ) {}

  /** A segment has stopped being appended to: build its hint once the delay has passed. */
  later(seg: Segment): void {
    if (this.delayMs === 0) {
      this.now(seg);
      return;
    }
    const t = setTimeout(() => {
      this.timers.delete(t);
      if (!seg.retired && !this.stopped) this.now(seg);
    }, this.delayMs).unref();
    this.timers.add(t);
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
  }

  /** Resolves once no hint is being built. */
  async wait(): Promise<void> {
    while (this.builds.size > 0) await Promise.all(this.builds);
  }
}
