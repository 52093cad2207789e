/**
 * GET /health data (docs/api.md, "Health"). Operating-system figures come from
 * Node's own fs.statfs and os, asynchronously, and are cached for a second so
 * polling stays cheap and never blocks the event loop.
 */
import { statfs } from 'node:fs/promises';
import * as os from 'node:os';
import type { Store } from './store/store.js';

const GB = 2 ** 30;
const gb = (bytes: number): string => `${(bytes / GB).toFixed(2)}GB`;

interface OsFigures {
  disk: string; // the part of the JSON that only changes with the OS figures
  at: number;
}

export class Health {
  private cached: OsFigures | undefined;
  private refreshing: Promise<OsFigures> | undefined;

  constructor(
    private readonly dataDir: string,
    private readonly db: Store,
    private readonly maxAgeMs = 1000,
  ) {}

  private async refresh(): Promise<OsFigures> {
    const s = await statfs(this.dataDir);
    const total = s.blocks * s.bsize;
    const free = s.bavail * s.bsize;
    const used = (s.blocks - s.bfree) * s.bsize;
    const pct = total === 0 ? 0 : (used / total) * 100;
    const disk =
      `"disk_free":"${gb(free)}","disk_used":"${gb(used)}","disk_total":"${gb(total)}",` +
      `"mem_free":"${gb(os.freemem())}","mem_total":"${gb(os.totalmem())}","disk_percent":"${pct.toFixed(2)}%"`;
    this.cached = { disk, at: Date.now() };
    return this.cached;
  }

  private async figures(): Promise<OsFigures> {
    const c = this.cached;
    if (c !== undefined && Date.now() - c.at < this.maxAgeMs) return c;
    // One statfs at a time however many health requests arrive together.
    this.refreshing ??= this.refresh().finally(() => {
      this.refreshing = undefined;
    });
    return this.refreshing;
  }

  /** The data object as JSON text. */
  async data(): Promise<string> {
    const [f, s] = await Promise.all([this.figures(), this.db.stats()]);
    const a = this.db.availability?.();
    // A database store adds what it knows of the database (cached, no query): docs/scaling.md.
    const store =
      a === undefined
        ? ''
        : `,"store":{"ready":${a.ready},"state":"${a.state}","primary":${JSON.stringify(a.primary ?? null)},` +
          `"failovers":${a.failovers},"unavailable":${a.unavailable}}`;
    return `{"key_count":${s.keyCount},"gc_state":${s.gcState},${f.disk},"space_total":"${gb(s.liveBytes)}","space_bytes":${s.liveBytes}${store}}`;
  }
}
