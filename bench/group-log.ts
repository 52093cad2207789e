/**
 * The bare baselines' log (bench/resp-baseline.ts, bench/rest-baseline.ts):
 * lines appended to one file and `fdatasync`ed, one flush for every line
 * that arrived while the previous flush ran, as the log's group commit does.
 * A failed write or sync ends the process: a baseline has no recovery.
 */
import { fdatasync, write } from 'node:fs';

export class GroupLog {
  /** Lines waiting for the next flush, and what to do once they are on disk. */
  private lines: string[] = [];
  private waiting: Array<() => void> = [];
  private flushing = false;

  constructor(private readonly fd: number) {}

  /** Queues a line for the next flush. */
  line(text: string): void {
    this.lines.push(text);
  }

  /** Runs `done` once every line queued so far is on disk, and starts a flush if none runs. */
  then(done: () => void): void {
    this.waiting.push(done);
    this.flush();
  }

  private flush(): void {
    if (this.flushing) return;
    if (this.lines.length === 0) {
      // Nothing left to write: whatever waits is on disk already.
      const done = this.waiting;
      this.waiting = [];
      for (const f of done) f();
      return;
    }
    this.flushing = true;
    const buf = Buffer.from(this.lines.join(''));
    const done = this.waiting;
    this.lines = [];
    this.waiting = [];
    write(this.fd, buf, 0, buf.length, null, (err) => {
      if (err) throw err;
      fdatasync(this.fd, (err2) => {
        if (err2) throw err2;
        this.flushing = false;
        for (const f of done) f();
        this.flush();
      });
    });
  }
}
