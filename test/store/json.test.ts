import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { deepEqual, exceedsDepth, mergeFields } from '../../src/store/json.js';
import { parseBody } from '../../src/http/request-body.js';
import { HttpError } from '../../src/http/errors.js';

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
  const bad = (s: string) =>
    assert.throws(
      () => parseBody(s),
      (e: unknown) => e instanceof HttpError && e.kind === 'invalid',
      s,
    );
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

test('numberText finds the source of a top-level number', async () => {
  const { numberText } = await import('../../src/store/json.js');
  assert.equal(numberText('{"variant":1.0}', 'variant'), '1.0');
  assert.equal(numberText('{ "variant" : -2e3 , "ttl":1}', 'variant'), '-2e3');
  assert.equal(numberText('{"x":{"variant":1.5},"variant":7}', 'variant'), '7', 'nested keys are not top-level');
  assert.equal(numberText('{"x":"\\"variant\\":1.5","variant":7}', 'variant'), '7', 'keys inside strings do not count');
  assert.equal(numberText('{"vari\\u0061nt":3.25}', 'variant'), '3.25', 'escaped key names are decoded');
  assert.equal(numberText('{"variant":1,"variant":2.5}', 'variant'), '2.5', 'the last duplicate wins, as in JSON.parse');
  assert.equal(numberText('{"other":1}', 'variant'), undefined);
});

/** Nesting depth of a parsed JSON value: 0 for scalars, 1 for [] or {}, ... */
function depthOf(v: unknown): number {
  if (typeof v !== 'object' || v === null) return 0;
  const kids = Array.isArray(v) ? v : Object.values(v);
  let d = 0;
  for (const k of kids) d = Math.max(d, depthOf(k));
  return d + 1;
}

test('exceedsDepth agrees with the real depth of any JSON text, for any limit', () => {
  // Strings full of brackets and quotes exercise both the counting shortcut and the exact scan.
  const tricky = fc.constantFrom('[', ']', '{', '}', '"', '\\', '[[[[', 'x');
  const str = fc.array(tricky, { maxLength: 30 }).map((a) => a.join(''));
  const value = fc.letrec((tie) => ({
    v: fc.oneof({ depthSize: 'small' }, str, fc.integer(), fc.array(tie('v'), { maxLength: 4 }), fc.dictionary(str, tie('v'), { maxKeys: 4 })),
  })).v;
  fc.assert(
    fc.property(value, fc.integer({ min: 0, max: 12 }), (v, limit) => {
      const text = JSON.stringify(v);
      assert.equal(exceedsDepth(text, limit), depthOf(v) > limit, `${text} limit ${limit}`);
    }),
    { numRuns: 2000 },
  );
});
