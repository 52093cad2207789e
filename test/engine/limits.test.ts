import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BatchTooLargeError } from '../../src/engine/index.js';
import { open, put, rmDir, str, tmpDir } from './helpers.js';

test('a batch over 1 GiB is refused before it is encoded, and changes nothing', async () => {
  const dir = tmpDir('limits');
  const e = await open(dir);
  try {
    await e.write([put('k0', 'before')]);
    const big = Buffer.alloc(300 * 1024 * 1024);
    const ops = [0, 1, 2, 3].map((i) => put(`k${i}`, big));
    await assert.rejects(e.write(ops), BatchTooLargeError);
    assert.equal(str((await e.read('k0', (b) => b)) as Buffer), 'before');
    assert.equal(e.has('k1'), false);
    await e.write([put('k1', 'after')]); // the engine still writes
    assert.equal(e.has('k1'), true);
  } finally {
    await e.close();
    rmDir(dir);
  }
});
