/**
 * Both stores speak one error vocabulary (src/store/errors.ts): a full disk
 * is the same StoreError, hence the same status and message, whether it is
 * the log's disk or the database's; the engine's failures never reach HTTP
 * as engine classes.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { BatchTooLargeError, EngineClosedError, StorageFullError } from '../../src/engine/errors.js';
import { toStatus } from '../../src/http/errors.js';
import { DISK_FULL_MESSAGE, StoreError } from '../../src/store/errors.js';
import { fromEngine } from '../../src/store/log/errors.js';
import { classify } from '../../src/store/postgres/sql.js';

test('a full disk is one StoreError on both stores: 507 with one message', () => {
  const log = fromEngine(new StorageFullError(Object.assign(new Error('ENOSPC'), { code: 'ENOSPC' })));
  const pg = classify({ severity: 'ERROR', code: '53100', message: 'could not extend file: No space left on device' }, 5000, false)?.error;
  for (const e of [log, pg]) {
    assert.ok(e instanceof StoreError);
    assert.equal(e.kind, 'storage_full');
    assert.deepEqual(toStatus(e), [507, DISK_FULL_MESSAGE, false]);
  }
});

test("the engine's other failures become StoreError kinds inside the log store", () => {
  assert.deepEqual(toStatus(fromEngine(new BatchTooLargeError(1024))), [413, 'the change is too large: one batch may hold at most 1024 bytes', false]);
  assert.deepEqual(toStatus(fromEngine(new EngineClosedError())), [503, 'server is shutting down', false]);
  const other = new Error('EIO');
  assert.equal(fromEngine(other), other);
  assert.equal(toStatus(other)[0], 500);
});

test('other PostgreSQL resource errors are the database unable to serve now (503)', () => {
  const e = classify({ severity: 'FATAL', code: '53300', message: 'too many connections' }, 5000, false)?.error;
  assert.ok(e instanceof StoreError);
  assert.equal(e.kind, 'unreachable');
  assert.equal(toStatus(e)[0], 503);
});
