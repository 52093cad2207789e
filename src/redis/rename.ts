/**
 * RENAME and RENAMENX (docs/redis.md, "Keys"). Pithos has no rename of an
 * object: the value is copied to the new name with the old one's lifetime,
 * then the old name is deleted under the version that was copied. A write to
 * the old name in between makes that delete fail, and the copy is made again
 * (retryOnRace), so no write to the old name is lost. It is two steps, not
 * Redis's one: a crash between them leaves both names (the command was not
 * acknowledged), and the copy costs time in the value's size.
 */
import type { Precondition, Store, VersionOut } from '../store/store.js';
import type { Call } from './command.js';
import { deleteIfUnchanged, readHash } from './hashes.js';
import { claim, deleteKey, keyInfo, type RType, ttlSeconds } from './keyspace.js';
import { range } from './lists.js';
import { lostRace, RACED, retryOnRace } from './races.js';
import { ErrorReply, OK, type Reply } from './resp.js';
import { members } from './sets.js';
import { getString, putString } from './strings.js';
import { allItems } from './zsets.js';

const NO_SUCH_KEY = new ErrorReply('ERR no such key');
const ABSENT: Precondition = { ifAbsent: true };

/** A value read under its version: written elsewhere (only where nothing is), and its original deleted if unchanged. */
interface Copy {
  write(dst: string, ttl: number): Promise<unknown>;
  removeOriginal(): Promise<unknown>;
}

/** The value of `key` as `type` with its version, or undefined when it is gone. */
async function copyOf(store: Store, type: RType, key: string): Promise<Copy | undefined> {
  const out: VersionOut = { version: 0 };
  switch (type) {
    case 'string': {
      const s = await getString(store, key, false);
      return (
        s && {
          write: (dst, ttl) => putString(store, dst, s.text, ttl, 0, false),
          removeOriginal: () => store.variants.delete(key, undefined, { ifVersion: s.version }),
        }
      );
    }
    case 'hash': {
      const h = await readHash(store, key, out);
      return h && { write: (dst, ttl) => store.records.put(dst, h, ttl, ABSENT), removeOriginal: () => deleteIfUnchanged(store, key, out.version) };
    }
    case 'list': {
      const l = await range(store, key, 0, -1, out);
      return (
        l && { write: (dst, ttl) => store.lists.put(dst, l.items, ttl, ABSENT), removeOriginal: () => store.lists.delete(key, { ifVersion: out.version }) }
      );
    }
    case 'set': {
      const ms = await members(store, key, out);
      return ms && { write: (dst, ttl) => store.sets.put(dst, ms, ttl, ABSENT), removeOriginal: () => store.sets.delete(key, { ifVersion: out.version }) };
    }
    case 'zset': {
      const items = await allItems(store, key, out);
      const pairs = items?.map((i): [string, number] => [i.member, i.score]);
      return (
        pairs && { write: (dst, ttl) => store.zsets.put(dst, pairs, ttl, ABSENT), removeOriginal: () => store.zsets.delete(key, { ifVersion: out.version }) }
      );
    }
  }
}

/** RENAME (`nx` false: whatever `dst` held goes) and RENAMENX (`nx`: 0 when `dst` exists). */
export async function rename(c: Call, nx: boolean): Promise<Reply> {
  const src = c.args[1]!;
  const dst = c.args[2]!;
  // Once this command has written `dst`, a later attempt replaces its own copy.
  let wrote = false;
  return retryOnRace(async () => {
    const info = await keyInfo(c.store, src);
    if (info === undefined) throw NO_SUCH_KEY;
    if (src === dst) return nx ? 0 : OK;
    const copy = await copyOf(c.store, info.type, src);
    if (copy === undefined) return RACED;
    if (nx && !wrote) {
      // Empty leftovers at `dst` go; any live type there answers 0.
      try {
        await claim(c.store, dst, info.type);
        if ((await keyInfo(c.store, dst)) !== undefined) return 0;
      } catch (err) {
        if (err instanceof ErrorReply) return 0;
        throw err;
      }
    } else await deleteKey(c.store, dst);
    const ttl = ttlSeconds(info);
    try {
      await copy.write(dst, ttl);
    } catch (err) {
      // Another writer created `dst` meanwhile: RENAMENX's answer; RENAME tries again.
      if (nx && !wrote && lostRace(err)) return 0;
      throw err;
    }
    wrote = true;
    await copy.removeOriginal();
    return nx ? 1 : OK;
  });
}
