/**
 * One deadline per store operation (src/store/postgres/deadline.ts): what
 * the budget a database step sees is, inside an operation, nested in one,
 * after it answered, and apart from it.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Operations } from '../../src/store/postgres/deadline.js';

const tick = (): Promise<void> => new Promise((r) => setTimeout(r, 5));

test('an operation has one budget; calls it makes share it; none outside', async () => {
  const ops = new Operations(1000);
  assert.equal(ops.current, undefined);
  const before = Date.now();
  const seen = await ops.run(async () => {
    const first = ops.current;
    await tick();
    const nested = await ops.run(async () => {
      await tick();
      return ops.current;
    });
    return { first, nested };
  });
  assert.ok(seen.first !== undefined);
  assert.equal(seen.nested, seen.first, 'a nested operation shares its caller budget');
  assert.ok(seen.first.until >= before + 1000 && seen.first.until <= Date.now() + 1000);
  assert.equal(ops.current, undefined);
});

test('a budget closes when its operation answers, also on failure; work left running then has none', async () => {
  const ops = new Operations(1000);
  let late: Promise<unknown> | undefined;
  await ops.run(async () => {
    late = (async () => {
      await tick();
      await tick();
      return ops.current;
    })();
    await tick();
  });
  assert.equal(await late, undefined, 'work that outlived its operation saw its budget');
  let kept: unknown;
  await assert.rejects(
    ops.run(async () => {
      kept = ops.current;
      await tick();
      throw new Error('boom');
    }),
    /boom/,
  );
  assert.equal((kept as { open: boolean }).open, false);
});

test('apart: no budget inside, and an operation started there has its own', async () => {
  const ops = new Operations(1000);
  await ops.run(async () => {
    const outer = ops.current;
    const inner = await ops.apart(async () => {
      await tick();
      assert.equal(ops.current, undefined);
      return ops.run(async () => ops.current);
    });
    assert.ok(inner !== undefined && inner !== outer);
  });
});

test('bound: calls from outside are operations; a method calling another on its own object stays in the caller operation', async () => {
  const ops = new Operations(1000);
  class Ns {
    value = 3;
    async a(): Promise<[unknown, unknown]> {
      const mine = ops.current;
      return [mine, await this.b()];
    }
    async b(): Promise<unknown> {
      await tick();
      return ops.current;
    }
  }
  const ns = ops.bound(new Ns());
  const [a, b] = await ns.a();
  assert.ok(a !== undefined);
  assert.equal(b, a);
  const c = await ns.b();
  assert.ok(c !== undefined && c !== a, 'each outside call is an operation of its own');
  assert.equal(ns.value, 3);
  assert.equal(ns.a, ns.a, 'the wrapper of a method is made once');
});
