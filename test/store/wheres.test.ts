import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compileWheres, matches } from '../../src/store/wheres.js';
import { StoreError } from '../../src/store/errors.js';

const m = (row: Record<string, unknown>, wheres: Record<string, unknown>): boolean => matches(row, compileWheres(wheres));

test('plain values compare by deep JSON equality', () => {
  assert.equal(m({ a: 1, b: 'x' }, { a: 1 }), true);
  assert.equal(m({ a: 1, b: 'x' }, { a: 1, b: 'y' }), false);
  assert.equal(m({ a: { x: 1, y: [1, 2] } }, { a: { y: [1, 2], x: 1 } }), true, 'key order ignored');
  assert.equal(m({ a: [1, 2] }, { a: [2, 1] }), false, 'array order matters');
  assert.equal(m({ a: { x: 1 } }, { a: { x: 1, y: 2 } }), false);
  assert.equal(m({ a: null }, { a: null }), true);
  assert.equal(m({ a: 1 }, { a: '1' }), false);
  assert.equal(m({}, {}), true, 'empty wheres matches every row');
});

test('a field the row lacks never matches, whatever the operator', () => {
  assert.equal(m({ b: 1 }, { a: null }), false);
  assert.equal(m({ b: 1 }, { a: { $ne: 5 } }), false);
  assert.equal(m({ b: 1 }, { a: { $nin: [5] } }), false);
  assert.equal(m({ b: 1 }, { a: { $exists: false } }), true);
  assert.equal(m({ a: 1 }, { a: { $exists: false } }), false);
  assert.equal(m({ a: 1 }, { a: { $exists: true } }), true);
});

test('prototype names are ordinary fields', () => {
  const row = JSON.parse('{"__proto__":{"x":1},"constructor":2}') as Record<string, unknown>;
  assert.equal(m(row, JSON.parse('{"__proto__":{"x":1}}')), true);
  assert.equal(m(row, { constructor: 2 }), true);
  assert.equal(m({ a: 1 }, { constructor: { $exists: true } }), false, 'inherited names are not fields');
  assert.equal(m({ a: 1 }, { toString: { $exists: true } }), false);
});

test('primitive where-values never match an inherited name, only an own field', () => {
  // Equality with a string, number or boolean skips the ownership check (one ===).
  const inherited = ['constructor', 'toString', 'valueOf', 'hasOwnProperty', '__proto__', '__defineGetter__'];
  for (const name of inherited) {
    for (const v of ['x', 0, 1, true, false, '']) {
      const where = JSON.parse(`{${JSON.stringify(name)}:${JSON.stringify(v)}}`) as Record<string, unknown>;
      assert.equal(m({ a: 1 }, where), false, `${name} = ${JSON.stringify(v)} on a row without it`);
      assert.equal(
        m(JSON.parse(`{"a":1,${JSON.stringify(name)}:${JSON.stringify(v)}}`) as Record<string, unknown>, where),
        true,
        `${name} = ${JSON.stringify(v)} on a row with it`,
      );
    }
  }
  assert.equal(m({ a: 0 }, { a: false }), false, 'no coercion');
  assert.equal(m({ a: '1' }, { a: 1 }), false, 'no coercion');
  assert.equal(m({ a: -0 }, { a: 0 }), true, 'JSON has one zero');
});

test('range operators compare numbers with numbers and strings with strings only', () => {
  assert.equal(m({ a: 5 }, { a: { $gt: 4 } }), true);
  assert.equal(m({ a: 5 }, { a: { $gt: 5 } }), false);
  assert.equal(m({ a: 5 }, { a: { $gte: 5, $lte: 5 } }), true);
  assert.equal(m({ a: 5 }, { a: { $lt: 5 } }), false);
  assert.equal(m({ a: 'b' }, { a: { $gt: 'a' } }), true);
  assert.equal(m({ a: '5' }, { a: { $gt: 4 } }), false, 'mixed types never match');
  assert.equal(m({ a: 5 }, { a: { $lt: '9' } }), false);
  assert.equal(m({ a: null }, { a: { $lt: 1 } }), false);
  // Code-point order: U+1F600 (a surrogate pair in UTF-16) sorts after U+FFFF.
  assert.equal(m({ a: '\u{1F600}' }, { a: { $gt: '\uffff' } }), true);
});

test('$eq $ne $in $nin use deep equality', () => {
  assert.equal(m({ a: { x: [1] } }, { a: { $eq: { x: [1] } } }), true);
  assert.equal(m({ a: 1 }, { a: { $ne: 2 } }), true);
  assert.equal(m({ a: 1 }, { a: { $ne: 1 } }), false);
  assert.equal(m({ a: [1, 2] }, { a: { $in: [[1, 2], 3] } }), true);
  assert.equal(m({ a: 4 }, { a: { $in: [1, 2, 3] } }), false);
  assert.equal(m({ a: 4 }, { a: { $nin: [1, 2, 3] } }), true);
});

test('an object with a non-$ key is a value, not an operator object', () => {
  assert.equal(m({ a: { $gt: 1, b: 2 } }, { a: { $gt: 1, b: 2 } }), true);
  assert.equal(m({ a: 5 }, { a: { $gt: 1, b: 2 } }), false);
});

test('unknown or ill-typed operators are 400s', () => {
  for (const w of [{ a: { $regex: 'x' } }, { a: { $in: 3 } }, { a: { $exists: 1 } }, { a: { $constructor: 1 } }, { a: { __proto__x: 1, $gt: 1 } }]) {
    if (Object.keys(w.a).some((k) => !k.startsWith('$'))) continue;
    assert.throws(
      () => compileWheres(w),
      (e: unknown) => e instanceof StoreError && e.kind === 'invalid',
      JSON.stringify(w),
    );
  }
  assert.throws(() => compileWheres({ a: { $toString: 1 } }), StoreError);
});
