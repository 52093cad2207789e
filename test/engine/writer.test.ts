/**
 * The group writer and the event loop: whatever a group's write costs, and
 * even when it settles at once (no I/O to wait for, as a write made in the
 * loop's own thread would), a writer that writes again as soon as it hears
 * back must leave room for timers and sockets between groups.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { open, put, rmDir, tmpDir } from './helpers.js';

for (const durability of ['never', 'everysec'] as const) {
  test(`a writer that writes again on every acknowledgement does not starve a timer (${durability})`, async () => {
    const dir = tmpDir('writer-turns');
    const e = await open(dir, { durability });
    try {
      let fired = false;
      const timer = setTimeout(() => {
        fired = true;
      }, 5);
      const started = Date.now();
      let writes = 0;
      // Bounded in count and time; a starved timer only fires after the loop.
      while (!fired && writes < 100_000 && Date.now() - started < 20_000) {
        await e.write([put(`k${writes % 100}`, 'v')]);
        writes++;
      }
      clearTimeout(timer);
      assert.ok(fired && writes < 100_000, `the timer did not fire during ${writes} writes (${Date.now() - started} ms)`);
    } finally {
      await e.close();
      rmDir(dir);
    }
  });
}
