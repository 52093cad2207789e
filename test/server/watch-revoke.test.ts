/**
 * Black-box: a reload of the tokens file (SIGHUP) ends the /watch streams of
 * tokens it removed, and only those; a stream whose token keeps a role that
 * may watch goes on.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { PithosServer, sleep, uniq } from '../helpers/server.js';
import { watch } from '../helpers/sse.js';

let tmp: string;
before(() => {
  tmp = mkdtempSync(path.join(os.tmpdir(), 'pithos-revoke-'));
});
after(() => {
  rmSync(tmp, { recursive: true, force: true });
});

const KEPT = 'kept-token-0123456789ab';
const GONE = 'gone-token-0123456789ab';
const DEMOTED = 'demoted-token-012345678';

test('SIGHUP ends the /watch stream of a removed token; streams of tokens that may still watch go on', async () => {
  const file = path.join(tmp, 'tokens');
  writeFileSync(file, `kept read ${KEPT}\ngone read ${GONE}\nboss admin ${DEMOTED}\n`, { mode: 0o600 });
  const s = await PithosServer.start({ env: { PITHOS_TOKENS_FILE: file } });
  const watchers = [KEPT, GONE, DEMOTED, s.token].map((token) => watch({ port: s.port, token, query: 'kind=record&values=true' }));
  const [kept, gone, demoted, main] = watchers;
  try {
    for (const w of watchers) {
      await w.opened;
      assert.equal(w.status, 200);
    }
    const before = uniq('before');
    assert.equal((await s.req('PUT', `/records/${before}`, { record: { secret: 1 } })).status, 201);
    for (const w of watchers) await w.until(() => w.events.some((e) => e.data.includes(before)), 20_000, `the event of ${before}`);

    // 'gone' is removed, 'boss' is demoted from admin to read (which may still watch).
    writeFileSync(file, `kept read ${KEPT}\nboss read ${DEMOTED}\n`);
    s.signal('SIGHUP');
    const deadline = Date.now() + 10_000;
    while (!/SIGHUP: ended 1 \/watch stream\(s\)/.test(s.stdout)) {
      assert.ok(Date.now() < deadline, `no line about ended streams; stdout:\n${s.stdout}`);
      await sleep(20);
    }
    await Promise.race([gone.done, sleep(10_000)]);
    assert.equal(gone.ended, true, 'the stream of the removed token is still open');

    const afterName = uniq('after');
    assert.equal((await s.req('PUT', `/records/${afterName}`, { record: { secret: 2 } })).status, 201);
    for (const w of [kept, demoted, main]) await w.until(() => w.events.some((e) => e.data.includes(afterName)), 20_000, `the event of ${afterName}`);
    assert.equal(
      gone.events.some((e) => e.data.includes(afterName)),
      false,
      'the removed token received a change after the reload',
    );

    // Reconnecting with it, as EventSource does, is refused.
    const again = watch({ port: s.port, token: GONE, query: 'kind=record' });
    await again.opened;
    assert.equal(again.status, 401);
    again.close();
  } finally {
    for (const w of watchers) w.close();
    await s.close();
  }
});
