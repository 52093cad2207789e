/** How Pithos serves the console's static files: no auth, content types, nothing outside dist/console. */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { JSON_CT, PithosServer, rawRequest } from '../helpers/server.js';

let server: PithosServer;
before(async () => {
  server = await PithosServer.start();
});
after(async () => {
  await server?.close();
});

const get = (path: string, method = 'GET') => rawRequest({ port: server.port, method, path, headers: {} });

test('the console loads without a token, with the right content types', async () => {
  const index = await get('/console/');
  assert.equal(index.status, 200);
  assert.equal(index.headers['content-type'], 'text/html; charset=utf-8');
  assert.match(index.raw, /<script type="module" src="app\.js"><\/script>/);
  assert.match(String(index.headers['content-security-policy']), /default-src 'self'/);
  assert.equal(index.headers['x-content-type-options'], 'nosniff');

  // One bundle (web/build.mjs): the UI library, the charts and the client, nothing loaded from elsewhere.
  const js = await get('/console/app.js');
  assert.equal(js.status, 200);
  assert.equal(js.headers['content-type'], 'text/javascript; charset=utf-8');
  assert.doesNotMatch(js.raw, /^import |https?:\/\/(?!www\.w3\.org)[a-z]/m);
  for (const f of ['uplot.css', 'favicon.svg']) assert.equal((await get(`/console/${f}`)).status, 200, f);
  const css = await get('/console/style.css');
  assert.equal(css.headers['content-type'], 'text/css; charset=utf-8');
  assert.equal(Number(css.headers['content-length']), Buffer.byteLength(css.raw));

  const head = await get('/console/style.css', 'HEAD');
  assert.equal(head.status, 200);
  assert.equal(head.raw, '');

  const bare = await get('/console?x=1');
  assert.equal(bare.status, 308);
  assert.equal(bare.headers.location, '/console/?x=1');
});

test('nothing else is served without a token; nothing outside the console directory at all', async () => {
  for (const p of ['/consoles', '/console.html', '/health', '/tables/x']) {
    const r = await get(p);
    assert.equal(r.status, 401, `${p}: ${r.status}`);
  }
  for (const p of [
    '/console/../package.json',
    '/console/%2e%2e/package.json',
    '/console/..%2fsrc%2fmain.ts',
    '/console/nope.js',
    '/console/web/app.ts',
    '/console/%E0%A4%A',
  ]) {
    const r = await get(p);
    assert.ok(r.status === 404 || r.status === 400, `${p}: ${r.status} ${r.raw.slice(0, 80)}`);
    assert.equal(r.headers['content-type'], JSON_CT);
    assert.equal(r.body.status, 'error');
  }
  // Browsers ask for /favicon.ico by themselves: an empty answer, not a 401.
  const fav = await get('/favicon.ico');
  assert.equal(fav.status, 204);
  assert.equal(fav.raw, '');
  assert.equal((await get('/favicon.icon')).status, 401);
  const post = await get('/console/', 'POST');
  assert.equal(post.status, 405);
  assert.equal(post.headers.allow, 'GET, HEAD');
});
