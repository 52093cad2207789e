/**
 * The shared store's connection settings in libpq's form: several hosts,
 * target_session_attrs, the separate settings, and the password kept out of
 * what --print-config shows.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError, effectiveConfig, parseConfig } from '../../src/config.js';
import { Locator, acceptable } from '../../src/store/postgres/hosts.js';
import { parsePgUrl } from '../../src/store/postgres/url.js';

test('a multi-host URL: every host in order, the first given to the driver, target_session_attrs taken out', () => {
  const t = parsePgUrl('postgres://u:p%40ss@h1:5433,h2,[::1]:6000/db?options=-c%20search_path%3Ds&target_session_attrs=primary');
  assert.deepEqual(t.hosts, [
    { host: 'h1', port: 5433 },
    { host: 'h2', port: 5432 },
    { host: '::1', port: 6000 },
  ]);
  assert.equal(t.target, 'primary');
  assert.equal(t.url, 'postgres://u:p%40ss@h1:5433/db?options=-c+search_path%3Ds');
  assert.equal(new URL(t.url).password, 'p%40ss');
});

test('one host: unchanged but for the default target, which is read-write (every node writes)', () => {
  const t = parsePgUrl('postgresql://u@db.internal:5432/pithos');
  assert.deepEqual(t.hosts, [{ host: 'db.internal', port: 5432 }]);
  assert.equal(t.target, 'read-write');
  assert.equal(t.url, 'postgresql://u@db.internal:5432/pithos');
});

test("the separate settings replace the URL's hosts and target", () => {
  const t = parsePgUrl('postgres://u@h1/db?target_session_attrs=any', 'a:1,b:2', 'read-write');
  assert.deepEqual(t.hosts, [
    { host: 'a', port: 1 },
    { host: 'b', port: 2 },
  ]);
  assert.equal(t.target, 'read-write');
  assert.equal(t.url, 'postgres://u@a:1/db');
});

test('bad hosts and targets are refused naming the setting', () => {
  assert.throws(() => parsePgUrl('postgres://u@h1:99999/db'), /the store URL: 'h1:99999' is not host or host:port/);
  assert.throws(() => parsePgUrl('postgres://u@h1,,h2/db'), /the store URL: '' is not host or host:port/);
  assert.throws(
    () => parsePgUrl('postgres://u@h1/db?target_session_attrs=standby'),
    /target_session_attrs in the store URL must be read-write, primary, any, got 'standby'/,
  );
  assert.throws(
    () => parseConfig(['--pg-hosts', 'a:x'], {}),
    (e: unknown) => e instanceof ConfigError && /--pg-hosts: 'a:x' is not host or host:port/.test(e.message),
  );
  assert.throws(
    () => parseConfig(['--pg-target-session-attrs', 'prefer-standby'], {}),
    (e: unknown) => e instanceof ConfigError && /--pg-target-session-attrs must be read-write, primary, any/.test(e.message),
  );
  assert.throws(
    () => parseConfig([], { PITHOS_STORE: 'postgres://u:hunter2@h1:0,h2/db' }),
    (e: unknown) => e instanceof ConfigError && /PITHOS_STORE: the store URL: 'h1:0'/.test(e.message) && !e.message.includes('hunter2'),
  );
});

test('--print-config masks the password of a multi-host URL', () => {
  const cfg = parseConfig(['--store', 'postgres://u:hunter2@h1:5432,h2:5432/db?password=x2&target_session_attrs=any', '--pg-hosts', 'h3:5432'], {});
  const shown = JSON.stringify(effectiveConfig(cfg));
  assert.ok(!shown.includes('hunter2') && !shown.includes('x2'), shown);
  assert.match(shown, /"store":"postgres:\/\/u:\*{8}@h1:5432,h2:5432\/db\?password=\*{8}&target_session_attrs=any"/);
  assert.match(shown, /"pg-hosts":"h3:5432"/);
});

test('the locator keeps a host that works and moves past one that failed, wrapping', () => {
  const l = new Locator(
    [
      { host: 'a', port: 1 },
      { host: 'b', port: 1 },
      { host: 'c', port: 1 },
    ],
    'read-write',
  );
  assert.equal(l.pick()?.host, 'a');
  l.failed({ host: 'b', port: 1 }); // not the preferred one: no move
  assert.equal(l.pick()?.host, 'a');
  l.failed({ host: 'a', port: 1 });
  assert.equal(l.pick()?.host, 'b');
  l.failed({ host: 'b', port: 1 });
  l.failed({ host: 'c', port: 1 });
  assert.equal(l.pick()?.host, 'a');
});

test('target_session_attrs: which servers are acceptable', () => {
  const primary = { recovery: false, readOnly: false };
  const standby = { recovery: true, readOnly: true };
  const readOnlyPrimary = { recovery: false, readOnly: true };
  assert.deepEqual(
    [primary, standby, readOnlyPrimary].map((r) => acceptable('read-write', r)),
    [true, false, false],
  );
  assert.deepEqual(
    [primary, standby, readOnlyPrimary].map((r) => acceptable('primary', r)),
    [true, false, true],
  );
  assert.deepEqual(
    [primary, standby, readOnlyPrimary].map((r) => acceptable('any', r)),
    [true, true, true],
  );
});
