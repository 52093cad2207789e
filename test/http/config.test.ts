import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigError, parseConfig } from '../../src/config.js';
import { route } from '../../src/http/router.js';

test('defaults, env and flags, flags win', () => {
  const d = parseConfig([], {});
  assert.equal(d.host, '127.0.0.1');
  assert.equal(d.port, 2668);
  assert.equal(d.dataDir, './data');
  assert.equal(d.fsync, 'always');
  assert.equal(d.authToken, undefined);
  const e = parseConfig(['--port', '9', '--fsync=never'], { PITHOS_PORT: '7', PITHOS_AUTH_TOKEN: 't', PITHOS_FSYNC: 'everysec' });
  assert.equal(e.port, 9);
  assert.equal(e.authToken, 't');
  assert.equal(e.fsync, 'never');
  assert.equal(parseConfig(['repair', '--data-dir', 'x'], {}).command, 'repair');
  assert.equal(parseConfig(['--help'], {}).command, 'help');
});

test('bad values are one-line ConfigErrors', () => {
  for (const argv of [['--fsync', 'sometimes'], ['--port', '-1'], ['--port', '70000'], ['--port'], ['--bogus'], ['--max-body-bytes', '0']]) {
    assert.throws(
      () => parseConfig(argv, {}),
      (e: unknown) => e instanceof ConfigError && !e.message.includes('\n'),
      argv.join(' '),
    );
  }
  assert.throws(() => parseConfig([], { PITHOS_PORT: 'x' }), ConfigError);
});

test('router: shapes, 404, 405 with Allow, names', () => {
  assert.equal(route('GET', '/tables/a%2Fb/rows?x=1', false).name, 'a/b');
  assert.equal(route('GET', '/health', false).name, '');
  const kind = (f: () => unknown): string => {
    try {
      f();
      return 'ok';
    } catch (e) {
      return (e as { kind: string }).kind;
    }
  };
  assert.equal(
    kind(() => route('GET', '/nope', false)),
    'not_found',
  );
  assert.equal(
    kind(() => route('GET', '/tables/a/b', false)),
    'not_found',
  );
  assert.equal(
    kind(() => route('POST', '/_test/clock', false)),
    'not_found',
  );
  assert.equal(
    kind(() => route('POST', '/_test/clock', true)),
    'ok',
  );
  assert.equal(
    kind(() => route('POST', '/locks/a', false)),
    'method',
  );
  assert.equal(
    kind(() => route('toString', '/locks/a', false)),
    'method',
  );
  assert.equal(
    kind(() => route('GET', '/records/..', false)),
    'invalid',
  );
  assert.equal(
    kind(() => route('GET', '/records/%2e', false)),
    'invalid',
  );
  assert.equal(
    kind(() => route('GET', '/records/a%00b', false)),
    'invalid',
  );
  assert.equal(
    kind(() => route('GET', '/records/%E0%A4%A', false)),
    'invalid',
  );
  assert.equal(
    kind(() => route('GET', '/records/' + encodeURIComponent('é'.repeat(127)), false)),
    'ok',
  );
  assert.equal(
    kind(() => route('GET', '/records/' + encodeURIComponent('é'.repeat(128)), false)),
    'invalid',
    '256 bytes',
  );
  // node:http gives raw (unencoded) UTF-8 path bytes one per char: they still mean UTF-8.
  assert.equal(route('GET', '/records/' + Buffer.from('zoë日本', 'utf8').toString('latin1'), false).name, 'zoë日本');
  assert.equal(
    kind(() => route('GET', '/records/' + 'x'.repeat(255), false)),
    'ok',
  );
  assert.equal(
    kind(() => route('GET', '/records/' + 'x'.repeat(256), false)),
    'invalid',
  );
  assert.equal(
    kind(() => route('GET', '/records/', false)),
    'invalid',
  );
});

test('--allow-from takes addresses and CIDR subnets', () => {
  assert.deepEqual(parseConfig(['--allow-from', '127.0.0.1, 10.0.0.0/8,::1'], {}).allowFrom, ['127.0.0.1', '10.0.0.0/8', '::1']);
  assert.deepEqual(parseConfig([], {}).allowFrom, []);
  for (const bad of ['300.1.1.1', '10.0.0.0/33', 'host.example', '10.0.0.0/x']) {
    assert.throws(() => parseConfig(['--allow-from', bad], {}), ConfigError, bad);
  }
});
