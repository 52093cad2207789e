/**
 * docs/redis.md against the code: its list of commands must be what the
 * command table declares, and its redis-cli session must answer as shown,
 * run through Debian's redis-cli against a fresh server.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { COMMANDS } from '../../src/redis/listener.js';
import { coverage } from '../../src/redis/table.js';
import { splitArgs } from '../../src/redis/resp.js';
import { ROOT, TOKEN, type PithosServer } from '../helpers/server.js';
import { startWithResp } from '../helpers/redis.js';

const DOC = readFileSync(path.join(ROOT, 'docs', 'redis.md'), 'utf8');

let srv: PithosServer;
let port: number;

before(async () => {
  ({ srv, port } = await startWithResp());
});

after(async () => {
  await srv?.close();
});

test("docs/redis.md lists exactly the command table's commands", () => {
  const start = DOC.indexOf('<!-- commands:start -->\n');
  const end = DOC.indexOf('<!-- commands:end -->');
  assert.ok(start >= 0 && end > start, 'the markers are there');
  const shown = DOC.slice(start + '<!-- commands:start -->\n'.length, end);
  assert.equal(shown, coverage(COMMANDS), 'regenerate the list from src/redis/table.ts coverage()');
});

test('the redis-cli session in docs/redis.md answers as shown', () => {
  const block = /```console\n([\s\S]*?)```/.exec(DOC.slice(DOC.indexOf('## A redis-cli session')));
  assert.ok(block !== null, 'the session is there');
  const lines = block[1]!.trimEnd().split('\n');
  let ran = 0;
  for (let i = 0; i < lines.length;) {
    const cmd = lines[i]!;
    assert.ok(cmd.startsWith('$ '), `line ${i} is a command: ${cmd}`);
    const want: string[] = [];
    for (i++; i < lines.length && !lines[i]!.startsWith('$ '); i++) want.push(lines[i]!);
    const args = splitArgs(cmd.slice(2)) as string[];
    const got = execFileSync('redis-cli', ['-p', String(port), '-a', TOKEN, '--no-auth-warning', '--no-raw', ...args], { encoding: 'utf8' }).trimEnd();
    assert.equal(got, want.join('\n'), cmd);
    ran++;
  }
  assert.ok(ran >= 10, `ran ${ran} commands`);
});
