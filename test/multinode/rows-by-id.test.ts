/**
 * Writes to one row by t_id racing on the shared store, driven on two
 * PgStores over one database (two nodes, no HTTP, so the calls overlap in
 * every round): a conditional PATCH has exactly one winner per version, a
 * DELETE removes the row once (every other answer is 404) and the listing's
 * row count moves by exactly one. Runs on the PostgreSQL pass of `npm test` only.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PgStore } from '../../src/store/postgres/index.js';
import { freshSchema } from '../helpers/postgres.js';
import { PG_URL } from '../helpers/server.js';

const skip = PG_URL === undefined ? 'needs PITHOS_TEST_STORE (the PostgreSQL pass of npm test)' : false;

const open = (url: string): Promise<PgStore> => PgStore.open({ url, poolSize: 10, statementTimeoutMs: 5000, offsetMs: () => 0, log: () => {} });

test('two nodes, 40 concurrent If-Match PATCHes and 40 DELETEs of one row per round, 10 rounds: one winner each', { skip }, async () => {
  const url = await freshSchema(PG_URL as string, `rowid${process.pid}`);
  const a = await open(url);
  const b = await open(url);
  try {
    await a.tables.create('t', 0);
    for (let round = 0; round < 10; round++) {
      const id = await a.tables.insert('t', { round, n: 0 });
      const out = { version: 0 };
      await b.tables.getRow('t', id, out);
      const v = out.version;
      const patches = await Promise.allSettled(
        Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? a : b).tables.patchRow('t', id, { n: i + 1 }, ['round'], { ifVersion: v })),
      );
      const won = patches.flatMap((x, i) => (x.status === 'fulfilled' ? [i] : []));
      assert.equal(won.length, 1, `round ${round}: ${won.length} conditional PATCHes won`);
      for (const x of patches) if (x.status === 'rejected') assert.equal((x.reason as { kind?: string }).kind, 'precondition', String(x.reason));
      assert.equal(await a.tables.getRow('t', id), JSON.stringify({ n: won[0]! + 1 }));

      const rows = async (): Promise<number> =>
        (JSON.parse(await a.list('tables', { prefix: 't', limit: 1, after: null })) as { items: Array<{ rows: number }> }).items[0]!.rows;
      const before = await rows();
      const deletes = await Promise.allSettled(Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? a : b).tables.deleteRow('t', id)));
      assert.equal(deletes.filter((x) => x.status === 'fulfilled').length, 1, `round ${round}: DELETE succeeded more than once`);
      for (const x of deletes) if (x.status === 'rejected') assert.equal((x.reason as { kind?: string }).kind, 'not_found', String(x.reason));
      assert.equal(await rows(), before - 1, `round ${round}: the row count moved by other than one`);
    }
  } finally {
    await a.close();
    await b.close();
  }
});
