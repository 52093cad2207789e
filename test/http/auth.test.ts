/** Unit tests of src/http/auth.ts: token parsing, 401/403 decisions, the interim method-based roles. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Authenticator, parseTokens, TokensFileError } from '../../src/http/auth.js';
import { ROUTES } from '../../src/http/routes.js';
import { route } from '../../src/http/router.js';

const FILE = `# comment
reader   read  r-token-0123456789

writer	write w-token-0123456789
boss admin a-token-0123456789
short read s1
`;

test('parseTokens: names, roles, comments, blank lines', () => {
  assert.deepEqual(
    parseTokens(FILE).map((e) => [e.name, e.role, e.token]),
    [
      ['reader', 'read', 'r-token-0123456789'],
      ['writer', 'write', 'w-token-0123456789'],
      ['boss', 'admin', 'a-token-0123456789'],
      ['short', 'read', 's1'],
    ],
  );
  assert.deepEqual(parseTokens(''), []);
});

test('parseTokens: every malformed line is refused naming its line', () => {
  const bad: [string, RegExp][] = [
    ['a read', /line 1: expected '<name> <role> <token>', got 2/],
    ['a read t extra', /line 1: .*got 4/],
    ['\n\nbad/name read t', /line 3: name 'bad\/name'/],
    ['a owner t', /role of 'a' must be read, write or admin, got 'owner'/],
    ['a read t\na write u', /line 2: token name 'a' appears twice/],
    ['a read t\nb write t', /line 2: the token of 'b' is already used/],
    ['main admin t', /reserved for the main secret/],
  ];
  for (const [text, re] of bad)
    assert.throws(
      () => parseTokens(text),
      (e: unknown) => e instanceof TokensFileError && re.test(e.message),
      text,
    );
  assert.throws(() => parseTokens('x read SECRET', 'SECRET'), /already used by another name or is the main secret/);
});

test('check: 401 missing vs wrong; the main secret is admin; public needs nothing', () => {
  const a = new Authenticator('SECRET');
  assert.deepEqual(a.check(undefined, 'read', 'GET', '/x'), { ok: false, status: 401, message: 'missing Auth-Token header' });
  assert.deepEqual(a.check('', 'read', 'GET', '/x'), { ok: false, status: 401, message: 'missing Auth-Token header' });
  assert.deepEqual(a.check('SECRE', 'read', 'GET', '/x'), { ok: false, status: 401, message: 'wrong Auth-Token' });
  assert.deepEqual(a.check('SECRET!', 'read', 'GET', '/x'), { ok: false, status: 401, message: 'wrong Auth-Token' });
  assert.deepEqual(a.check('SECREX', 'read', 'GET', '/x'), { ok: false, status: 401, message: 'wrong Auth-Token' });
  assert.deepEqual(a.check(['SECRET', 'SECRET'], 'read', 'GET', '/x'), { ok: false, status: 401, message: 'wrong Auth-Token' });
  for (const role of ['read', 'write', 'admin'] as const) assert.deepEqual(a.check('SECRET', role, 'PUT', '/x'), { ok: true, name: 'main', role: 'admin' });
  assert.deepEqual(a.check(undefined, 'public', 'GET', '/livez'), { ok: true, name: '', role: 'public' });
  // The same answer object every time: the main-secret path allocates no result.
  assert.equal(a.check('SECRET', 'write', 'PUT', '/x'), a.check('SECRET', 'read', 'GET', '/y'));
});

test('check: roles of named tokens, 403 naming token, method and path (no query string)', () => {
  const a = new Authenticator('SECRET');
  assert.equal(a.reload(FILE), 4);
  const ok = (t: string, role: 'read' | 'write' | 'admin') => a.check(t, role, 'X', '/p').ok;
  assert.equal(ok('r-token-0123456789', 'read'), true);
  assert.equal(ok('r-token-0123456789', 'write'), false);
  assert.equal(ok('r-token-0123456789', 'admin'), false);
  assert.equal(ok('w-token-0123456789', 'read'), true);
  assert.equal(ok('w-token-0123456789', 'write'), true);
  assert.equal(ok('w-token-0123456789', 'admin'), false);
  assert.equal(ok('a-token-0123456789', 'admin'), true);
  assert.equal(ok('s1', 'read'), true);
  assert.deepEqual(a.check('r-token-0123456789', 'write', 'PUT', '/records/a?x=1'), {
    ok: false,
    status: 403,
    message: "token 'reader' may not PUT /records/a",
  });
  assert.deepEqual(a.check('w-token-0123456789', 'admin', 'GET', '/backup'), { ok: false, status: 403, message: "token 'writer' may not GET /backup" });
  assert.deepEqual(a.check('w-token-0123456789', 'write', 'PUT', '/x'), { ok: true, name: 'writer', role: 'write' });
  // same length as a named token, different bytes
  assert.equal(a.check('r-token-0123456788', 'read', 'GET', '/').ok, false);
  assert.equal(a.check('SECRET', 'admin', 'GET', '/').ok, true);
});

test('reload: a bad file keeps the tokens in force; a good one replaces them all', () => {
  const a = new Authenticator('SECRET');
  a.reload('one read token-one');
  assert.throws(() => a.reload('two read token-two\nbroken'));
  assert.equal(a.check('token-one', 'read', 'GET', '/').ok, true, 'old token kept after a failed reload');
  assert.equal(a.check('token-two', 'read', 'GET', '/').ok, false, 'nothing of the bad file taken');
  assert.equal(a.reload('two write token-two'), 1);
  assert.equal(a.check('token-one', 'read', 'GET', '/').ok, false, 'removed token refused');
  assert.equal(a.check('token-two', 'write', 'PUT', '/').ok, true);
  assert.equal(a.size, 1);
});

test('non-ASCII tokens compare as their UTF-8 bytes (node:http delivers headers as latin1)', () => {
  const a = new Authenticator('pässwort');
  a.reload('u read ключ-токен');
  const wire = (t: string) => Buffer.from(t, 'utf8').toString('latin1');
  assert.equal(a.check(wire('pässwort'), 'admin', 'GET', '/').ok, true);
  assert.equal(a.check(wire('ключ-токен'), 'read', 'GET', '/').ok, true);
  assert.equal(a.check('pässwort', 'read', 'GET', '/').ok, false);
});

test('route table roles (docs/operations.md, "Roles"): reads are read, the query alias is read, data changes write, backup and test clock admin', () => {
  const role = (m: string, p: string): string => ROUTES.find((r) => r.method === m && r.path === p)!.role;
  for (const r of ROUTES) {
    // The operations endpoints (docs/operations.md): metrics and backup are admin, the OpenAPI document is public.
    if (r.path === '/metrics' || r.path === '/backup') assert.equal(r.role, 'admin');
    else if (r.path === '/openapi.json') assert.equal(r.role, 'public');
    else if (r.method === 'GET') assert.equal(r.role, 'read', `${r.method} ${r.path}`);
    else if (r.method === 'PUT' || r.method === 'PATCH' || r.method === 'DELETE') assert.ok(r.role === 'write' || r.role === 'admin', `${r.method} ${r.path}`);
  }
  assert.equal(role('POST', '/tables/{name}/query'), 'read');
  assert.equal(role('POST', '/tables/{name}/rows'), 'write');
  assert.equal(role('POST', '/variants/{name}'), 'write');
  assert.equal(role('POST', '/txns'), 'write');
  assert.equal(role('POST', '/_test/clock'), 'admin');
  // the route a request matches is what server.ts authorises against
  assert.equal(route('POST', '/tables/t/query?x=1', false).route.def.role, 'read');
  assert.equal(route('PATCH', '/locks/l', false).route.def.role, 'write');
});
