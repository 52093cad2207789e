/** Unit tests of the config file, repeatable --cors-origin, --print-config's view, and log formats. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigError, effectiveConfig, MASK, parseConfig } from '../../src/config.js';
import { formatLine } from '../../src/log.js';

const files: Record<string, string> = {
  'a.json': JSON.stringify({
    port: 7000,
    'max-body-bytes': 1000,
    'cache-mb': 5,
    fsync: 'never',
    'allow-from': ['10.0.0.0/8'],
    'access-log': true,
    'cors-origin': ['https://a.example'],
  }),
  'unknown.json': JSON.stringify({ port: 1, prot: 2, auth_token: 'x' }),
  'type.json': JSON.stringify({ port: 'x' }),
  'bool.json': JSON.stringify({ repair: 'yes' }),
  'array.json': '[1]',
  'broken.json': '{"port": ',
};
const read = (f: string): string => {
  const t = files[f];
  if (t === undefined) throw new Error('ENOENT: no such file');
  return t;
};

test('precedence: flag > environment > config file > default', () => {
  const c = parseConfig(['--config', 'a.json', '--port', '9'], { PITHOS_PORT: '8', PITHOS_CACHE_MB: '6' }, read);
  assert.equal(c.port, 9, 'flag beats env and file');
  assert.equal(c.cacheMb, 6, 'env beats file');
  assert.equal(c.maxBodyBytes, 1000, 'file beats default');
  assert.equal(c.fsync, 'never');
  assert.deepEqual(c.allowFrom, ['10.0.0.0/8']);
  assert.equal(c.accessLog, true);
  assert.equal(c.segmentMb, 64, 'default');
  assert.equal(c.config, 'a.json');
  assert.equal(parseConfig([], { PITHOS_CONFIG: 'a.json' }, read).port, 7000, 'PITHOS_CONFIG names the file');
  assert.equal(parseConfig(['--config=a.json'], {}, read).port, 7000);
});

test('config file errors are one-line ConfigErrors naming the problem', () => {
  const cases: [string, RegExp][] = [
    ['unknown.json', /unknown key\(s\) 'prot', 'auth_token'/],
    ['type.json', /config file key 'port' must be an integer/],
    ['bool.json', /config file key 'repair' must be true or false/],
    ['array.json', /must hold one JSON object/],
    ['broken.json', /not valid JSON/],
    ['missing.json', /cannot read config file missing\.json/],
  ];
  for (const [f, re] of cases) {
    assert.throws(
      () => parseConfig(['--config', f], {}, read),
      (e: unknown) => e instanceof ConfigError && re.test(e.message) && !e.message.includes('\n'),
      f,
    );
  }
  assert.throws(() => parseConfig(['--config'], {}, read), /--config needs a file name/);
});

test('--cors-origin repeats; values must be origins; --tls-cert needs --tls-key', () => {
  assert.deepEqual(
    parseConfig(['--cors-origin', 'https://a.example', '--cors-origin=http://b.example:8080'], { PITHOS_CORS_ORIGIN: 'https://env.example' }).corsOrigin,
    ['https://a.example', 'http://b.example:8080'],
    'flags replace the env value, then add up',
  );
  assert.deepEqual(parseConfig([], { PITHOS_CORS_ORIGIN: 'https://a.example, https://b.example' }).corsOrigin, ['https://a.example', 'https://b.example']);
  for (const bad of ['https://a.example/', 'a.example', 'https://a.example/path', 'ftp://a.example', '*']) {
    assert.throws(() => parseConfig(['--cors-origin', bad], {}), ConfigError, bad);
  }
  assert.throws(() => parseConfig(['--tls-cert', 'c.pem'], {}), /--tls-cert and --tls-key go together/);
  assert.throws(() => parseConfig(['--log-format', 'xml'], {}), /--log-format must be text or json/);
});

test('effectiveConfig masks the main secret and reads back as the same configuration', () => {
  const c = parseConfig(['--config', 'a.json', '--auth-token', 'hunter2', '--print-config', '--tls-cert', 'c.pem', '--tls-key', 'k.pem'], {}, read);
  assert.equal(c.command, 'print-config');
  const e = effectiveConfig(c);
  assert.equal(e['auth-token'], MASK);
  assert.ok(!JSON.stringify(e).includes('hunter2'));
  assert.equal(e['tls-key'], 'k.pem');
  assert.equal(e['tokens-file'], null);
  assert.equal(e.port, 7000);
  // Fed back as a config file (with a real secret in place of the mask), it gives the same view.
  files['round.json'] = JSON.stringify({ ...e, 'auth-token': 'hunter2' });
  assert.deepEqual(effectiveConfig(parseConfig(['--config', 'round.json'], {}, read)), e);
});

test("effectiveConfig masks every secret: the metrics token and a store URL's password too", () => {
  const c = parseConfig(['--metrics-token', 'mt-secret', '--store', 'postgres://bob:hunter2@db.example:5432/pithos?sslmode=require', '--print-config'], {});
  const e = effectiveConfig(c);
  assert.equal(e['metrics-token'], MASK);
  assert.equal(e.store, `postgres://bob:${MASK}@db.example:5432/pithos?sslmode=require`);
  assert.ok(!JSON.stringify(e).includes('mt-secret') && !JSON.stringify(e).includes('hunter2'));
  // A URL without a password, and a plain setting, are shown as they are.
  assert.equal(effectiveConfig(parseConfig(['--store', 'postgres://db.example/pithos', '--print-config'], {})).store, 'postgres://db.example/pithos');
});

test('log lines: text key=value (quoted when needed) and one JSON object per line', () => {
  const t = '2026-01-01T00:00:00.000Z';
  assert.equal(formatLine('info', 'request', { id: 'a1', path: '/x y', status: 200 }, t, 'text'), `${t} INFO request id=a1 path="/x y" status=200\n`);
  assert.equal(formatLine('warn', 'plain', undefined, t, 'text'), `${t} WARN plain\n`);
  const j = formatLine('error', 'boom "x"', { ms: 1.5, time: 'not overwritten' }, t, 'json');
  assert.ok(j.endsWith('\n') && !j.slice(0, -1).includes('\n'));
  assert.deepEqual(JSON.parse(j), { time: t, level: 'error', msg: 'boom "x"', ms: 1.5 });
});
