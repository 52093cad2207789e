/**
 * The rules both stores share for one row by t_id (src/store/rows.ts): which
 * path segments are t_ids, and the PATCH merge (sets, then unset), including
 * field names that mean something to JavaScript.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { StoreError } from '../../src/store/errors.js';
import { checkUnset, isRowId, MAX_ROW_ID, patchedRow, rowIdOfText } from '../../src/store/rows.js';

const invalid = (f: () => unknown, message: string): void => {
  assert.throws(f, (e: unknown) => e instanceof StoreError && e.kind === 'invalid' && e.message === message);
};

test('rowIdOfText: positive decimal integers up to 2^53 - 1, nothing else', () => {
  for (const [text, id] of [
    ['1', 1],
    ['42', 42],
    ['9007199254740991', MAX_ROW_ID],
  ] as const)
    assert.equal(rowIdOfText(text), id);
  for (const text of ['', '0', '00', '01', '-1', '+1', '1.0', '1.5', '1e3', ' 1', '1 ', '0x10', 'Infinity', 'NaN', '١', '１']) {
    invalid(() => rowIdOfText(text), `t_id must be a positive integer in decimal, not '${text}'`);
  }
  invalid(() => rowIdOfText('9007199254740992'), "t_id must be at most 9007199254740991, not '9007199254740992'");
  invalid(() => rowIdOfText('9'.repeat(40)), `t_id must be at most 9007199254740991, not '${'9'.repeat(32)}…'`);
  assert.ok(isRowId(1) && isRowId(MAX_ROW_ID));
  for (const v of [0, -1, 1.5, MAX_ROW_ID + 1, '1', null, undefined, NaN, Infinity]) assert.equal(isRowId(v), false, String(v));
});

test('patchedRow: sets replace top-level fields whole, null is a value, unset removes; the input is not changed', () => {
  const row = { a: 1, b: { c: 1, d: 2 }, e: 'x' };
  const out = patchedRow(row, { b: { c: 9 }, n: null }, ['e', 'absent']);
  assert.deepEqual(out, { a: 1, b: { c: 9 }, n: null });
  assert.deepEqual(row, { a: 1, b: { c: 1, d: 2 }, e: 'x' });
  assert.equal(JSON.stringify(out), '{"a":1,"b":{"c":9},"n":null}', "key order: the row's, then new fields");
});

test('patchedRow: __proto__ and constructor are plain field names, set and unset like any other', () => {
  const row = JSON.parse('{"__proto__":{"admin":true},"constructor":1,"k":2}') as Record<string, unknown>;
  const out = patchedRow(row, JSON.parse('{"__proto__":{"x":1}}') as Record<string, unknown>, ['constructor']);
  assert.equal(JSON.stringify(out), '{"__proto__":{"x":1},"k":2}');
  assert.equal(Object.getPrototypeOf(out), Object.prototype, 'the prototype is untouched');
  assert.equal(({} as Record<string, unknown>).x, undefined);
  assert.equal(JSON.stringify(patchedRow(out, {}, ['__proto__'])), '{"k":2}');
});

test('checkUnset: an array of distinct strings, none also in sets', () => {
  assert.deepEqual(checkUnset([], {}), []);
  assert.deepEqual(checkUnset(['a', '', '__proto__'], { b: 1 }), ['a', '', '__proto__']);
  invalid(() => checkUnset('a', {}), "field 'unset' must be an array of field names");
  invalid(() => checkUnset(['a', 2], {}), "field 'unset' must hold field names (strings); element 1 is not a string");
  invalid(() => checkUnset(['a', 'a'], {}), "field 'unset' names 'a' twice");
  invalid(() => checkUnset(['a'], { a: 1 }), "field 'a' is both in 'sets' and in 'unset'");
  invalid(() => checkUnset(['__proto__'], JSON.parse('{"__proto__":1}') as Record<string, unknown>), "field '__proto__' is both in 'sets' and in 'unset'");
});
