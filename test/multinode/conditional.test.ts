/**
 * Conditional creates racing on the shared store, driven on PgStore
 * directly (a real PostgreSQL, no HTTP): 50 concurrent `if_absent` PUTs of
 * a name no row exists for, 20 rounds. The window this guards (no row to
 * lock, then the INSERT) is one round trip; requests through HTTP rarely
 * overlap in it, calls on the store do in every round. Exactly one create
 * may win; every other answer is a precondition failure. Runs on the
 * PostgreSQL pass of `npm test` only.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PgStore } from '../../src/store/postgres/index.js';
import { freshSchema } from '../helpers/postgres.js';
import { PG_URL } from '../helpers/server.js';

const skip = PG_URL === undefined ? 'needs PITHOS_TEST_STORE (the PostgreSQL pass of npm test)' : false;

test('50 concurrent if_absent creates of one name, 20 rounds, records and variants: exactly one winner each round', { skip }, async () => {
  const url = await freshSchema(PG_URL as string, `cond${process.pid}`);
  const s = await PgStore.open({ url, poolSize: 10, statementTimeoutMs: 5000, offsetMs: () => 0, log: () => {} });
  try {
    for (let round = 0; round < 20; round++) {
      const rec = await Promise.allSettled(Array.from({ length: 50 }, (_, i) => s.records.put(`r${round}`, { i }, 0, { ifAbsent: true })));
      const vars = await Promise.allSettled(
        Array.from({ length: 50 }, (_, i) => s.variants.put(`v${round}`, { value: i, text: String(i) }, 0, { ifAbsent: true })),
      );
      for (const [what, all] of [
        ['record', rec],
        ['variant', vars],
      ] as const) {
        assert.equal(all.filter((x) => x.status === 'fulfilled').length, 1, `${what}, round ${round}`);
        for (const x of all) {
          if (x.status === 'rejected') assert.equal((x.reason as { kind?: string }).kind, 'precondition', String(x.reason));
        }
      }
      const winner = rec.findIndex((x) => x.status === 'fulfilled');
      assert.equal(await s.records.get(`r${round}`), JSON.stringify({ i: winner }));
    }
  } finally {
    await s.close();
  }
});
