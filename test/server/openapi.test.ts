/**
 * GET /openapi.json: valid OpenAPI 3.1 (checked by a real validator), generated
 * from the route table (every served route, nothing else), reachable without a
 * token while every other unauthenticated request still gets 401, and every
 * operation it documents is answered by the live server.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Validator } from '@seriousme/openapi-schema-validator';
import { ROUTES } from '../../src/http/routes.js';
import { servedRoutes } from '../../src/http/router.js';
import { PROBES } from '../../src/http/openapi.js';
import { KIND_NAMES, KINDS } from '../../src/store/kinds.js';
import http from 'node:http';
import { PithosServer, expectError } from '../helpers/server.js';

let srv: PithosServer;
// eslint-disable-next-line @typescript-eslint/no-explicit-any
let doc: any;

before(async () => {
  srv = await PithosServer.start(); // test clock on: /_test/clock is served, so it must be documented
  const r = await srv.req('GET', '/openapi.json', undefined, { 'Auth-Token': null });
  assert.equal(r.status, 200, r.raw.slice(0, 300));
  assert.equal(r.headers['content-type'], 'application/json; charset=utf-8');
  doc = JSON.parse(r.raw);
});
after(async () => {
  await srv?.close();
});

test('the document is valid OpenAPI 3.1 according to @seriousme/openapi-schema-validator', async () => {
  assert.ok(Validator.supportedVersions.has('3.1'));
  const v = new Validator();
  const res = await v.validate(structuredClone(doc));
  assert.equal(res.valid, true, JSON.stringify(res.errors, null, 1)?.slice(0, 2000));
  assert.equal(v.version, '3.1');
  assert.equal(doc.openapi, '3.1.0');
});

test('the validator is not a rubber stamp: a broken copy is refused', async () => {
  const broken = structuredClone(doc);
  broken.paths['/health'].get.responses = 'none';
  const res = await new Validator().validate(broken);
  assert.equal(res.valid, false);
});

test('the description names every kind of the table of kinds, each by its path', () => {
  const d = doc.info.description as string;
  assert.match(d, new RegExp(`^Named objects of ${KIND_NAMES.length} kinds `));
  for (const k of KIND_NAMES) assert.ok(d.includes(`/${KINDS[k].plural}`), `${k} missing from: ${d}`);
  assert.ok(d.includes('/zsets') && d.includes('/lists'), d);
});

test('every route the server serves is documented, and nothing else', () => {
  const documented = new Set<string>();
  for (const [p, item] of Object.entries(doc.paths as Record<string, Record<string, unknown>>)) {
    for (const m of Object.keys(item)) documented.add(`${m.toUpperCase()} ${p}`);
  }
  const served = new Set(servedRoutes(true).map((r) => `${r.method} ${r.path}`));
  // the probes are answered before routing, outside the table
  for (const p of PROBES) served.add(`GET ${p.path}`);
  assert.deepEqual([...documented].sort(), [...served].sort());
  // The table is what the server serves: a route added to ROUTES shows up here.
  assert.ok(served.has('GET /openapi.json') && served.has('GET /metrics') && served.has('POST /txns'));
  assert.equal(served.size, ROUTES.length + PROBES.length);
});

test('bodies, statuses, messages, envelope and security come from the route table', () => {
  assert.deepEqual(doc.components.securitySchemes.authToken, {
    type: 'apiKey',
    in: 'header',
    name: 'Auth-Token',
    description: 'the server secret (--auth-token)',
  });
  assert.deepEqual(doc.security, [{ authToken: [] }]);
  for (const p of PROBES) assert.deepEqual(doc.paths[p.path].get.security, [], p.path);
  for (const r of servedRoutes(true)) {
    const op = doc.paths[r.path][r.method.toLowerCase()];
    const label = `${r.method} ${r.path}`;
    assert.equal(op.summary, r.summary, label);
    for (const st of r.ok.status) {
      const resp = op.responses[String(st)];
      assert.ok(resp, `${label}: ${st}`);
      assert.equal(resp.description, r.ok.message, label);
      // Streams and text formats are documented with their own media type, never as the envelope.
      const types = Object.keys(resp.content);
      assert.deepEqual(types, [r.ok.type === undefined ? 'application/json' : r.ok.type.split(';')[0]], label);
    }
    if (r.role === 'public') {
      assert.deepEqual(op.security, [], label);
      assert.equal(op.responses['401'], undefined, label);
    } else {
      assert.equal(op.security, undefined, label);
      assert.deepEqual(op.responses['401'], { $ref: '#/components/responses/E401' }, label);
    }
    for (const st of ['400', '413', '503']) assert.ok(op.responses[st], `${label} ${st}`);
    if (r.role === 'write') assert.ok(op.responses['507'], `${label} 507`);
    if (r.path.includes('{name}')) {
      assert.equal(op.parameters[0].name, 'name', label);
      assert.ok(op.responses['404'], `${label} 404`);
    }
    const fields = Object.entries(r.body ?? {});
    if (fields.length === 0) continue;
    const schema = op.requestBody.content['application/json'].schema;
    assert.deepEqual(
      Object.keys(schema.properties),
      fields.map(([k]) => k),
      label,
    );
    assert.deepEqual(
      schema.required ?? [],
      fields.filter(([, f]) => f.required === true).map(([k]) => k),
      label,
    );
    assert.equal(schema.additionalProperties, r.strict !== true, label);
  }
  // FieldType → JSON Schema, spot checks of each kind
  const put = doc.paths['/variants/{name}'].put.requestBody.content['application/json'].schema;
  assert.deepEqual(put.properties.variant.type, ['string', 'number', 'boolean']);
  assert.deepEqual([put.properties.ttl.type, put.properties.ttl.minimum, put.properties.ttl.maximum], ['integer', 0, 2147483647]);
  const lock = doc.paths['/locks/{name}'].put.requestBody.content['application/json'].schema;
  assert.equal(lock.properties.ttl.minimum, 1);
  assert.deepEqual(lock.properties.holder.type, ['string', 'null']);
  assert.equal(doc.paths['/records/{name}'].post.requestBody.content['application/json'].schema.properties.column.type, 'string');
  assert.deepEqual(doc.components.schemas.Error.required, ['status', 'message']);
  assert.deepEqual(doc.components.schemas.Success.properties.status, { const: 'success' });
  assert.deepEqual(doc.paths['/locks/{name}'].put.responses['423'], { $ref: '#/components/responses/E423' });
  assert.deepEqual(Object.keys(doc.paths['/watch'].get.responses['200'].content), ['text/event-stream']);
  assert.deepEqual(Object.keys(doc.paths['/backup'].get.responses['200'].content), ['application/octet-stream']);
  assert.deepEqual(Object.keys(doc.paths['/metrics'].get.responses['200'].content), ['text/plain']);
  assert.equal(doc.paths['/watch'].get.requestBody, undefined, 'a GET takes no body');
});

/** One request; a streaming answer (the change feed) is cut after its headers. */
function probe(method: string, url: string): Promise<{ status: number; raw: string; body: { message?: string } | undefined }> {
  return new Promise((resolve, reject) => {
    const body = Buffer.from('{}');
    const req = http.request(
      {
        host: '127.0.0.1',
        port: srv.port,
        method,
        path: url,
        agent: false,
        headers: { 'Auth-Token': srv.token, 'Content-Type': 'application/json', 'Content-Length': body.length },
      },
      (res) => {
        if (String(res.headers['content-type']).startsWith('text/event-stream')) {
          req.destroy();
          return resolve({ status: res.statusCode ?? 0, raw: '', body: undefined });
        }
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const raw = Buffer.concat(chunks).toString('utf8');
          let parsed: { message?: string } | undefined;
          try {
            parsed = JSON.parse(raw) as { message?: string };
          } catch {
            parsed = undefined;
          }
          resolve({ status: res.statusCode ?? 0, raw, body: parsed });
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

test('every documented operation is answered by the live server (never "no endpoint", never 405)', async () => {
  let n = 0;
  for (const [p, item] of Object.entries(doc.paths as Record<string, Record<string, unknown>>)) {
    for (const m of Object.keys(item)) {
      const url = p.replace('{name}', 'probe');
      const r = await probe(m.toUpperCase(), url);
      n++;
      assert.notEqual(r.status, 405, `${m} ${url}: ${r.raw.slice(0, 200)}`);
      assert.ok(!(r.status === 404 && /^no endpoint at /.test(r.body?.message ?? '')), `${m} ${url}: ${r.raw.slice(0, 200)}`);
    }
  }
  assert.equal(n, servedRoutes(true).length + PROBES.length);
  for (const p of PROBES) assert.equal((await srv.req('GET', p.path, undefined, { 'Auth-Token': null })).status, 200, p.path);
  // and the probe can tell: a path outside the table is the router's 404
  const r = await srv.req('GET', '/not/documented');
  expectError(r, 404, 'no endpoint at GET /not/documented');
});

test('only the public route skips the token; every other unauthenticated request is still 401', async () => {
  const noToken = { 'Auth-Token': null };
  // A query string does not change the route: still public (not 401), and its unknown parameter is named, as on every strict endpoint.
  expectError(await srv.req('GET', '/openapi.json?x=1', undefined, noToken), 400, "unknown query parameter 'x': this endpoint takes none");
  assert.equal((await srv.req('GET', '/openapi.json', undefined, { 'Auth-Token': 'wrong' })).status, 200);
  assert.equal((await srv.req('GET', '/openapi.json', undefined)).status, 200); // with the right token too
  for (const [m, p] of [
    ['POST', '/openapi.json'],
    ['GET', '/openapi.json/'],
    ['GET', '/openapi.jso'],
    ['GET', '/nope'],
    ['GET', '/metrics'],
    ['GET', '/health'],
    ['GET', '/OPENAPI.JSON'],
  ]) {
    const r = await srv.req(m, p, undefined, noToken);
    expectError(r, 401, 'missing Auth-Token header');
  }
  // With a token, the wrong method on the public path is the usual 405.
  expectError(await srv.req('POST', '/openapi.json'), 405, 'method POST is not allowed on /openapi.json; allowed: GET, HEAD');
});

test('without the test clock the test route is neither served nor documented', async () => {
  const s = await PithosServer.start({ testClock: false });
  try {
    const r = await s.req('GET', '/openapi.json');
    const d = JSON.parse(r.raw);
    assert.equal(d.paths['/_test/clock'], undefined);
    assert.equal(Object.keys(d.paths).length, new Set(servedRoutes(false).map((x) => x.path)).size + PROBES.length);
  } finally {
    await s.close();
  }
});
