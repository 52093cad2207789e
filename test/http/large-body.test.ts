/**
 * Unit tests of src/http/large-body.ts and src/store/large-input.ts: a body
 * parsed in slices is what JSON.parse and the one-step checks make of it
 * (its collection field as an array, or as Entries in document order), and
 * what they refuse it refuses.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseInSlices } from '../../src/http/large-body.js';
import { parseBody } from '../../src/http/request-body.js';
import { Entries, scoresInSlices, setContentInSlices } from '../../src/store/large-input.js';
import { scoresOf, setContentOf } from '../../src/store/collection.js';

/** Deterministic values of every JSON kind, strings with the characters a scanner must step over. */
function value(i: number, depth = 0): unknown {
  const strs = ['a', 'with "quotes"', 'back\\slash\\', 'comma, and ] } [ {', 'é 😀', '\\"', ''];
  switch (i % 7) {
    case 0:
      return i;
    case 1:
      return strs[i % strs.length] + String(i);
    case 2:
      return i % 2 === 0;
    case 3:
      return null;
    case 4:
      return depth > 2 ? -i / 3 : [value(i + 1, depth + 1), value(i + 3, depth + 1)];
    case 5:
      return depth > 2 ? 'leaf' : { k: value(i + 2, depth + 1), 'x,y': [] };
    default:
      return strs[(i >> 1) % strs.length];
  }
}

test('a list body in slices is JSON.parse of it, with the other fields as given, and spacing anywhere', async () => {
  const list = Array.from({ length: 40_000 }, (_, i) => value(i));
  for (const text of [
    JSON.stringify({ ttl: 5, list, if_version: 3 }),
    JSON.stringify({ list, extra: { a: [1, { b: '}' }] } }, null, 2),
    ` {"__proto__": 1 , "list" : ${JSON.stringify(list, null, 1)} } `,
  ]) {
    const got = await parseInSlices(text, 'list');
    assert.deepEqual(got, parseBody(text));
  }
  assert.deepEqual(await parseInSlices('{"list":[]}', 'list'), { list: [] });
  assert.deepEqual(await parseInSlices('{}', 'list'), {});
});

test('an object field in slices is its entries in order, repeats kept; the checks then keep the last, as JSON.parse does', async () => {
  const zset: Record<string, number> = {};
  for (let i = 0; i < 30_000; i++) zset[`m${i}, "q" ${i % 10}`] = i / 4;
  const text = JSON.stringify({ zset }).slice(0, -2) + ',"m0, \\"q\\" 0":99}}';
  const got = (await parseInSlices(text, 'zset')).zset;
  assert.ok(got instanceof Entries);
  assert.equal(got.keys.length, 30_001);
  const want = scoresOf('zset', (JSON.parse(text) as { zset: unknown }).zset, false);
  const sorted = (ps: Array<[string, number]>): Array<[string, number]> => [...ps].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  assert.deepEqual(sorted(await scoresInSlices('zset', got)), sorted(want));
  const set = JSON.stringify({ set: Object.fromEntries(Array.from({ length: 20_000 }, (_, i) => [`s${i % 15_000}`, true])) });
  assert.deepEqual(await setContentInSlices('set', (await parseInSlices(set, 'set')).set), setContentOf('set', (JSON.parse(set) as { set: unknown }).set));
});

test('a large set array is checked and made distinct as the one-step check does it', async () => {
  const arr = Array.from({ length: 50_000 }, (_, i) => `m${(i * 7919) % 30_000}`);
  assert.deepEqual(await setContentInSlices('set', arr), setContentOf('set', arr));
  const bad = [...arr];
  bad[45_000] = 5 as unknown as string;
  await assert.rejects(setContentInSlices('set', bad), /field 'set' item 45000 must be a string/);
  const z = new Entries();
  z.keys.push('a', 'b');
  z.values.push(1, 'x');
  await assert.rejects(scoresInSlices('zset', z), /field 'zset' member "b" must be a finite number/);
});

test('what parseBody refuses, the sliced parse refuses, in the body and deep in the collection', async () => {
  const big = JSON.stringify(Array.from({ length: 20_000 }, (_, i) => `item ${i}`));
  const cases = [
    `{"list":${big.slice(0, -1)},]}`,
    `{"list":${big.replace('"item 16239",', '"item 16239",,')}}`,
    `{"list":${big.replace('"item 16239",', '"item 16239", ,')}}`,
    `{"list":${big}`,
    `{"list":${big}} x`,
    `{"list":${big.slice(0, -1)}}}`,
    `{"list":${big} "ttl": 1}`,
    `{"list":${big.replace('"item 19999"', 'item')}}`,
    `{"list":[${'['.repeat(70)}${']'.repeat(70)}]}`,
    `[${big}]`,
    `{"list":${big.replace('"item 5"', '"item\u0001"')}}`,
  ];
  for (const text of cases) {
    assert.throws(() => parseBody(text), /request body/);
    await assert.rejects(parseInSlices(text, 'list'), /request body (is not valid JSON|nests deeper than 64 levels)/, text.slice(0, 40));
  }
});
