import { test } from 'node:test';
import assert from 'node:assert/strict';
import { deepEqual, exceedsDepth, mergeFields } from '../../src/model/json.js';
import { parseBody } from '../../src/http/body.js';
import { PithosError } from '../../src/model/errors.js';

test('nesting depth is counted outside strings only', () => {
  assert.equal(exceedsDepth('[[[]]]', 3), false);
  assert.equal(exceedsDepth('[[[[]]]]', 3), true);
  assert.equal(exceedsDepth('{"a":"[[[[[[[["}', 1), false, 'brackets inside strings do not count');
  assert.equal(exceedsDepth('{"a":"\\"[[[["}', 1), false, 'escaped quotes do not end a string');
  assert.equal(exceedsDepth('{"a":{"b":{"c":1}}}', 3), false);
  assert.equal(exceedsDepth('{"a":{"b":{"c":{}}}}', 3), true);
});

test('parseBody: empty means no fields, deep or non-object bodies are 400', () => {
  assert.deepEqual(Object.keys(parseBody('')), []);
  assert.deepEqual(Object.keys(parseBody('  \n')), []);
  assert.deepEqual(parseBody('{"a":1}'), { a: 1 });
  const bad = (s: string) => assert.throws(() => parseBody(s), (e: unknown) => e instanceof PithosError && e.kind === 'invalid', s);
  bad('{"a":');
  bad('[1,2]');
  bad('"str"');
  bad('null');
  bad('a=1&b=2');
  bad('['.repeat(65) + ']'.repeat(65));
  bad('{"a":' + '['.repeat(100000) + ']'.repeat(100000) + '}');
  assert.doesNotThrow(() => parseBody('{"a":' + '['.repeat(63) + ']'.repeat(63) + '}'));
});

test('mergeFields writes __proto__ as data and leaves prototypes alone', () => {
  const row = JSON.parse('{"a":1,"__proto__":{"p":1}}') as Record<string, unknown>;
  const sets = JSON.parse('{"__proto__":{"polluted":true},"b":{"n":[1]}}') as Record<string, unknown>;
  const out = mergeFields(row, sets);
  assert.equal(Object.getPrototypeOf(out), Object.prototype);
  assert.equal(({} as Record<string, unknown>).polluted, undefined);
  assert.equal(JSON.stringify(out), '{"a":1,"__proto__":{"polluted":true},"b":{"n":[1]}}');
  assert.equal(JSON.stringify(row), '{"a":1,"__proto__":{"p":1}}', 'the input row is not modified');
});

test('deepEqual', () => {
  assert.equal(deepEqual({ a: [1, { b: 2 }] }, { a: [1, { b: 2 }] }), true);
  assert.equal(deepEqual({ a: 1 }, { b: 1 }), false);
  assert.equal(deepEqual([], {}), false);
  assert.equal(deepEqual(0, -0), true);
  assert.equal(deepEqual(null, {}), false);
});
