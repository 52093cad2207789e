/** Black-box tests of the record namespace and its quick-start spelling /table/<key> (docs/api.md, "Records"). */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { PithosServer, expectError, expectSuccess, uniq } from '../helpers/server.js';

let srv: PithosServer;

before(async () => {
  srv = await PithosServer.start();
});
after(async () => {
  await srv?.close();
});

const R = (id: string) => `/records/${encodeURIComponent(id)}`;
const Q = (id: string) => `/table/${encodeURIComponent(id)}`;

test('record lifecycle: 201 new, 200 replaced, get, search, delete', async () => {
  const id = uniq('rec');
  const doc = { name: 'ann', age: 31, nested: { a: [1, { b: null }] }, ok: true, pi: 3.14, s: 'ünï ☃ 😀' };
  expectSuccess(await srv.req('PUT', R(id), { record: doc }), 201, 'record created successfully');
  expectSuccess(await srv.req('GET', R(id)), 200, 'record queried successfully', doc);

  expectSuccess(await srv.req('POST', R(id), { column: 'age' }), 200, 'search completed successfully', [31]);
  expectSuccess(await srv.req('POST', R(id), { column: 'nested' }), 200, 'search completed successfully', [doc.nested]);
  expectSuccess(await srv.req('POST', R(id), { column: 'nope' }), 200, 'search completed successfully', []);

  // replace whole: fields of the old record are gone
  expectSuccess(await srv.req('PUT', R(id), { record: { other: 1 } }), 200, 'record created successfully');
  expectSuccess(await srv.req('GET', R(id)), 200, 'record queried successfully', { other: 1 });
  expectSuccess(await srv.req('POST', R(id), { column: 'name' }), 200, 'search completed successfully', []);

  expectSuccess(await srv.req('DELETE', R(id)), 200, 'record deleted successfully');
  expectError(await srv.req('GET', R(id)), 404);
  expectError(await srv.req('POST', R(id), { column: 'other' }), 404);
  expectError(await srv.req('DELETE', R(id)), 404);
  // after delete, PUT creates again → 201
  expectSuccess(await srv.req('PUT', R(id), { record: {} }), 201, 'record created successfully');
  expectSuccess(await srv.req('GET', R(id)), 200, 'record queried successfully', {});
});

test('JSON values round-trip exactly (floats, exponents, unicode, escapes)', async () => {
  const id = uniq('rt');
  const text =
    '{"a":0.30000000000000004,"b":1e308,"c":-1.5e-300,"d":123456789012,"e":"tab\\t nl\\n quote\\" bs\\\\ \\u0000 \\u2028 😀","f":[true,false,null,{}],"g":-7}';
  expectSuccess(await srv.req('PUT', R(id), `{"record":${text}}`), 201, 'record created successfully');
  expectSuccess(await srv.req('GET', R(id)), 200, 'record queried successfully', JSON.parse(text));
});

test('search on fields holding null, false, 0, "" and arrays returns [value]', async () => {
  const id = uniq('falsy');
  const doc = { n: null, f: false, z: 0, e: '', a: [], o: {} };
  expectSuccess(await srv.req('PUT', R(id), { record: doc }), 201, 'record created successfully');
  for (const [k, v] of Object.entries(doc)) {
    expectSuccess(await srv.req('POST', R(id), { column: k }), 200, 'search completed successfully', [v]);
  }
});

test('missing records → 404 on GET, POST, DELETE (both spellings)', async () => {
  const id = uniq('ghost');
  expectError(await srv.req('GET', R(id)), 404);
  expectError(await srv.req('POST', R(id), { column: 'a' }), 404);
  expectError(await srv.req('DELETE', R(id)), 404);
  expectError(await srv.req('GET', Q(id)), 404);
  expectError(await srv.req('DELETE', Q(id)), 404);
  const r = await srv.req('GET', R(id));
  assert.ok(r.body.message.includes(id), `404 message should name the record: ${r.body.message}`);
});

test('missing or non-object record → 400, nothing stored and nothing replaced', async () => {
  const id = uniq('bad');
  for (const body of [
    undefined,
    {},
    { record: null },
    { record: [] },
    { record: [1] },
    { record: 'x' },
    { record: 1 },
    { record: true },
    { table: { a: 1 } },
  ]) {
    expectError(await srv.req('PUT', R(id), body), 400);
  }
  expectError(await srv.req('GET', R(id)), 404);
  expectSuccess(await srv.req('PUT', R(id), { record: { keep: 1 } }), 201, 'record created successfully');
  for (const body of [undefined, {}, { record: null }, { record: [] }, { record: 'x' }]) {
    expectError(await srv.req('PUT', R(id), body), 400);
  }
  expectSuccess(await srv.req('GET', R(id)), 200, 'record queried successfully', { keep: 1 });
});

test('search: missing or non-string column → 400', async () => {
  const id = uniq('col');
  expectSuccess(await srv.req('PUT', R(id), { record: { a: 1 } }), 201, 'record created successfully');
  for (const body of [undefined, {}, { column: null }, { column: 1 }, { column: ['a'] }, { column: { a: 1 } }, { column: true }]) {
    expectError(await srv.req('POST', R(id), body), 400);
  }
});

test('quick-start /table/<key>: PUT takes `table`, same store as /records', async () => {
  const k = uniq('qs');
  const doc = { hello: 'world', n: [1, 2] };
  expectSuccess(await srv.req('PUT', Q(k), { table: doc }), 201, 'record created successfully');
  expectSuccess(await srv.req('GET', Q(k)), 200, 'record queried successfully', doc);
  // read through the other spelling
  expectSuccess(await srv.req('GET', R(k)), 200, 'record queried successfully', doc);
  expectSuccess(await srv.req('POST', R(k), { column: 'hello' }), 200, 'search completed successfully', ['world']);
  // replace through /table → 200
  expectSuccess(await srv.req('PUT', Q(k), { table: { v: 2 } }), 200, 'record created successfully');
  expectSuccess(await srv.req('GET', R(k)), 200, 'record queried successfully', { v: 2 });
  // replace through /records → 200, read through /table
  expectSuccess(await srv.req('PUT', R(k), { record: { v: 3 } }), 200, 'record created successfully');
  expectSuccess(await srv.req('GET', Q(k)), 200, 'record queried successfully', { v: 3 });
  // delete through /table, gone for /records
  expectSuccess(await srv.req('DELETE', Q(k)), 200, 'record deleted successfully');
  expectError(await srv.req('GET', R(k)), 404);
  expectError(await srv.req('GET', Q(k)), 404);

  // written through /records, deleted through... /records, read via /table
  const k2 = uniq('qs2');
  expectSuccess(await srv.req('PUT', R(k2), { record: { x: 1 } }), 201, 'record created successfully');
  expectSuccess(await srv.req('GET', Q(k2)), 200, 'record queried successfully', { x: 1 });
  expectSuccess(await srv.req('DELETE', R(k2)), 200, 'record deleted successfully');
  expectError(await srv.req('GET', Q(k2)), 404);

  // /table/<key> is not the table namespace
  expectError(await srv.req('GET', `/tables/${encodeURIComponent(k)}`), 404);
});

test('quick-start PUT: missing or non-object `table` → 400 (a `record` field is not accepted there)', async () => {
  const k = uniq('qsbad');
  for (const body of [undefined, {}, { table: null }, { table: [] }, { table: 'x' }, { table: 2 }, { record: { a: 1 } }]) {
    expectError(await srv.req('PUT', Q(k), body), 400);
  }
  expectError(await srv.req('GET', R(k)), 404);
});

test('record fields __proto__, constructor, $x are plain data', async () => {
  const id = uniq('proto');
  const text = '{"__proto__":{"polluted":1},"constructor":"c","$x":{"$y":2},"valueOf":0}';
  let r = await srv.req('PUT', R(id), `{"record":${text}}`);
  expectSuccess(r, 201, 'record created successfully');
  r = await srv.req('GET', R(id));
  expectSuccess(r, 200, 'record queried successfully', JSON.parse(text));
  assert.ok(Object.prototype.hasOwnProperty.call(r.body.data, '__proto__'), `__proto__ must come back as a field: ${r.raw}`);
  expectSuccess(await srv.req('POST', R(id), { column: '__proto__' }), 200, 'search completed successfully', [{ polluted: 1 }]);
  expectSuccess(await srv.req('POST', R(id), { column: '$x' }), 200, 'search completed successfully', [{ $y: 2 }]);
  expectSuccess(await srv.req('POST', R(id), { column: 'constructor' }), 200, 'search completed successfully', ['c']);
  expectSuccess(await srv.req('POST', R(id), { column: 'polluted' }), 200, 'search completed successfully', []);

  // a record without those fields: inherited properties are not fields
  const id2 = uniq('plain');
  expectSuccess(await srv.req('PUT', R(id2), { record: { a: 1 } }), 201, 'record created successfully');
  for (const c of ['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf', 'polluted']) {
    expectSuccess(await srv.req('POST', R(id2), { column: c }), 200, 'search completed successfully', []);
  }
  expectSuccess(await srv.req('GET', R(id2)), 200, 'record queried successfully', { a: 1 });

  // quick-start spelling stores them too
  const k = uniq('qsproto');
  expectSuccess(await srv.req('PUT', Q(k), `{"table":${text}}`), 201, 'record created successfully');
  expectSuccess(await srv.req('GET', R(k)), 200, 'record queried successfully', JSON.parse(text));
});

test('record ids "__proto__" / "constructor" are ordinary ids', async () => {
  for (const id of ['__proto__', 'constructor', 'toString']) {
    expectError(await srv.req('GET', R(id)), 404);
    expectSuccess(await srv.req('PUT', R(id), { record: { id } }), 201, 'record created successfully');
    expectSuccess(await srv.req('GET', Q(id)), 200, 'record queried successfully', { id });
    expectSuccess(await srv.req('DELETE', R(id)), 200, 'record deleted successfully');
  }
});

test('records survive a restart', async () => {
  const id = uniq('dur');
  expectSuccess(await srv.req('PUT', R(id), { record: { d: 1 } }), 201, 'record created successfully');
  const id2 = uniq('durq');
  expectSuccess(await srv.req('PUT', Q(id2), { table: { d: 2 } }), 201, 'record created successfully');
  await srv.restart('SIGKILL');
  expectSuccess(await srv.req('GET', R(id)), 200, 'record queried successfully', { d: 1 });
  expectSuccess(await srv.req('GET', R(id2)), 200, 'record queried successfully', { d: 2 });
  // a replace after restart is still a replace (200)
  expectSuccess(await srv.req('PUT', R(id), { record: { d: 3 } }), 200, 'record created successfully');
});
