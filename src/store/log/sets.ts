/**
 * Set namespace on the log (docs/api.md, "Sets"): a header plus one empty
 * engine key per member (collections.ts). Membership is one directory
 * lookup; the members of a page are read off the element group, whose key
 * order is the members' byte order, so no structure is kept beside the
 * engine's own key directory and nothing is rebuilt at open.
 *
 * The functions taking a Tx are the decisions; transactions (txns.ts) reuse them.
 */
import type { Decoder } from '../../engine/index.js';
import { collectionMissing, combineLimit, type SetOp } from '../collection.js';
import { batchesOf, keyBatches, mergeBatches } from '../elements.js';
import type { Batches, Elements, Precondition, SetStore, VersionOut } from '../store.js';
import { thenKeeping } from '../decided.js';
import { results } from '../txn.js';
import { copyMembers, unchanged } from './member-copy.js';
import type { Atomic, Tx } from './atomic.js';
import { fillFrom, STAGE_STEP, stagedWrite } from './staged.js';
import {
  checkCollection,
  dropCollection,
  elementGroup,
  existingHeader,
  expireCollection,
  type Header,
  headerForWrite,
  headerKey,
  memberKey,
  memberOfKey,
  readHeader,
  replaceCollection,
  writeHeader,
} from './collections.js';

const EMPTY = Buffer.alloc(0);
/** Staged combines that may see their inputs change before the last is made in one decision. */
const MAX_TRIES = 3;
/** Thrown by a staged combine's switch when an input changed since the copy: its group is dropped and it starts again. */
const INPUTS_CHANGED = new Error('the sets a combine read changed while its result was written');
/** A member's value is empty: the key is the member. */
const memberDecoder: Decoder<true> = () => true;

/** Members given as JSON text (they are checked strings: JSON.stringify is exact). */
const jsonList = (ms: readonly string[]): string => JSON.stringify(ms);

export function setPut(tx: Tx, name: string, members: readonly string[], ttl: number, pre?: Precondition): boolean {
  const { created, group, exp } = replaceCollection(tx, 'set', name, members.length, ttl, pre);
  for (const m of members) tx.put(memberKey(group, m), EMPTY, true, memberDecoder, exp);
  return created;
}

/** Adds members; returns [added, count]. */
export function setAdd(tx: Tx, name: string, members: readonly string[], create: boolean, pre?: Precondition): [number, number] {
  const h = headerForWrite(tx, 'set', name, create, pre);
  const group = elementGroup('set', name, h.inc);
  const exp = tx.expiry(headerKey('set', name));
  let added = 0;
  for (const m of members) {
    const k = memberKey(group, m);
    if (tx.has(k)) continue;
    tx.put(k, EMPTY, true, memberDecoder, exp);
    added++;
  }
  // Every member was there already (a new set gains at least one): a write that changes nothing writes nothing.
  if (added === 0) return [0, h.count];
  const next: Header = { inc: h.inc, count: h.count + added };
  writeHeader(tx, 'set', name, next, { op: 'add', json: `{"members":${jsonList(members)},"added":${added},"count":${next.count}}` });
  return [added, next.count];
}

/** Removes members; returns [removed, count]. The set stays, possibly empty. */
export function setRemove(tx: Tx, name: string, members: readonly string[], pre?: Precondition): [number, number] {
  const h = existingHeader(tx, 'set', name, pre);
  const group = elementGroup('set', name, h.inc);
  let removed = 0;
  for (const m of members) {
    const k = memberKey(group, m);
    if (!tx.has(k)) continue;
    tx.del(k);
    removed++;
  }
  if (removed === 0) return [0, h.count];
  const next: Header = { inc: h.inc, count: h.count - removed };
  writeHeader(tx, 'set', name, next, { op: 'remove', json: `{"members":${jsonList(members)},"removed":${removed},"count":${next.count}}` });
  return [removed, next.count];
}

/** Whether `member` is in the set; 404 when the set does not exist. */
export function setHas(tx: Tx, name: string, member: string): boolean {
  const h = existingHeader(tx, 'set', name, undefined);
  return tx.has(memberKey(elementGroup('set', name, h.inc), member));
}

export function setCount(tx: Tx, name: string): number {
  return existingHeader(tx, 'set', name, undefined).count;
}

/** Every member of a set in byte order; an absent set is empty (combine's rule). Stored state only. */
function allMembers(tx: Tx, name: string): string[] {
  const h = readHeader(tx, 'set', name);
  if (h === undefined) return [];
  const group = elementGroup('set', name, h.inc);
  const keys = tx.groupKeys(group, '', Number.MAX_SAFE_INTEGER, true);
  const out: string[] = new Array(keys.length);
  for (let i = 0; i < keys.length; i++) out[i] = memberOfKey('', keys[i]);
  return out;
}

const decodeKey = (k: string): string => memberOfKey('', k);

/**
 * union / inter / diff of `name` with `others`, in byte order. A missing set
 * counts as empty. Reads only stored state, so it runs before any write of
 * the decision (the `store` of combine writes after it).
 */
export function setCombine(tx: Tx, name: string, op: SetOp, others: readonly string[]): string[] {
  const first = allMembers(tx, name);
  if (op === 'union') {
    const seen = new Set(first);
    for (const o of others) for (const m of allMembers(tx, o)) seen.add(m);
    const keys = Array.from(seen, (m) => memberKey('', m)).sort();
    return keys.map((k) => memberOfKey('', k));
  }
  const groups: Array<string | undefined> = others.map((o) => {
    const h = readHeader(tx, 'set', o);
    return h === undefined ? undefined : elementGroup('set', o, h.inc);
  });
  return first.filter((m) => {
    for (const g of groups) {
      const inOther = g !== undefined && tx.has(memberKey(g, m));
      if (op === 'inter' ? !inOther : inOther) return false;
    }
    return true;
  });
}

export class LogSets implements SetStore {
  constructor(private readonly atomic: Atomic) {}

  /** A set of more than STAGE_STEP members is written in slices and switched to in one batch (staged.ts). */
  put(name: string, members: readonly string[], ttl: number, pre?: Precondition): Promise<boolean> {
    if (members.length <= STAGE_STEP) return this.atomic.atomically(undefined, (tx) => setPut(tx, name, members, ttl, pre));
    return stagedWrite(this.atomic, {
      groupOf: (inc) => elementGroup('set', name, inc),
      ttl,
      check: (tx) => checkCollection(tx, 'set', name, pre),
      fill: fillFrom(members.length, (tx, s, i) => tx.put(memberKey(s.group, members[i]), EMPTY, true, memberDecoder, s.exp)),
      commit: (tx, s) => replaceCollection(tx, 'set', name, members.length, ttl, pre, s).created,
    });
  }

  get(name: string, limit: number | undefined, after: string | undefined, out?: VersionOut): Promise<string> {
    return this.atomic.read((tx) => {
      const h = readHeader(tx, 'set', name);
      if (h === undefined) throw collectionMissing('set', name);
      if (out !== undefined) out.version = tx.version(headerKey('set', name)) ?? 0;
      const group = elementGroup('set', name, h.inc);
      const from = after === undefined ? '' : memberKey(group, after);
      const want = limit === undefined ? Number.MAX_SAFE_INTEGER : limit + 1;
      const keys = tx.groupKeys(group, from, want, true);
      const more = limit !== undefined && keys.length > limit;
      if (more) keys.length = limit;
      let text = '{"members":[';
      for (let i = 0; i < keys.length; i++) text += (i === 0 ? '' : ',') + JSON.stringify(memberOfKey('', keys[i]));
      const next = more ? JSON.stringify(memberOfKey('', keys[keys.length - 1])) : 'null';
      return `${text}],"count":${h.count},"next":${next}}`;
    });
  }

  /**
   * The member keys are copied at one instant (member-copy.ts: in steps,
   * checked against the header's version) and decoded a batch per step
   * after: writes after that instant do not show in the answer
   * (docs/query.md, "Large collections").
   */
  async members(name: string): Promise<Elements<string[]>> {
    const c = await copyMembers(this.atomic, [name]);
    const h = c.heads[0];
    if (h === undefined) throw collectionMissing('set', name);
    return { count: h.count, version: h.version, ...batchesOf(keyBatches(c.keys[0], decodeKey), []) };
  }

  /** The inputs' member keys copied at one instant, then merged a batch per step (elements.ts). */
  async combineMembers(name: string, op: SetOp, others: readonly string[]): Promise<Batches<string[]>> {
    const c = await copyMembers(this.atomic, [name, ...others]);
    return batchesOf(mergeBatches(op, c.keys[0], c.keys.slice(1), decodeKey), []);
  }

  add(name: string, members: readonly string[], create: boolean, pre?: Precondition): Promise<string> {
    const p = this.atomic.atomically(undefined, (tx) => setAdd(tx, name, members, create, pre));
    return thenKeeping(p, ([added, count]) => results.added(added, count));
  }

  remove(name: string, members: readonly string[], pre?: Precondition): Promise<string> {
    const p = this.atomic.atomically(undefined, (tx) => setRemove(tx, name, members, pre));
    return thenKeeping(p, ([removed, count]) => results.removed(removed, count));
  }

  contains(name: string, members: readonly string[]): Promise<string> {
    return this.atomic.read((tx) => {
      const h = existingHeader(tx, 'set', name, undefined);
      const group = elementGroup('set', name, h.inc);
      let out = '{"contains":[';
      for (let i = 0; i < members.length; i++) out += (i === 0 ? '' : ',') + (tx.has(memberKey(group, members[i])) ? 'true' : 'false');
      return out + ']}';
    });
  }

  combine(name: string, op: SetOp, others: readonly string[], store: string | undefined, pre?: Precondition): Promise<string> {
    if (store === undefined) {
      return this.atomic.read((tx) => {
        const ms = setCombine(tx, name, op, others);
        return `{"members":${jsonList(ms)},"count":${ms.length}}`;
      });
    }
    return this.combineStore(name, op, others, store, pre);
  }

  /**
   * The result replaces `store` as if inputs and target were one decision:
   * the inputs are copied at one instant (member-copy.ts), merged a batch
   * per slice into a staged incarnation of the target (staged.ts), and the
   * switch happens only if no input changed since the copy; a combine that
   * sees a change starts again, and after MAX_TRIES is made in one decision,
   * which the limit on its inputs keeps bounded. The target keeps no expiry.
   */
  private async combineStore(name: string, op: SetOp, others: readonly string[], store: string, pre?: Precondition): Promise<string> {
    const names = [name, ...others];
    const total = (tx: Tx): number => {
      const counts = names.map((n) => readHeader(tx, 'set', n)?.count ?? 0);
      combineLimit(names, counts);
      return counts.reduce((a, b) => a + b, 0);
    };
    for (let attempt = 0; attempt < MAX_TRIES && (await this.atomic.read(total)) > STAGE_STEP; attempt++) {
      const c = await copyMembers(this.atomic, names);
      combineLimit(
        names,
        c.heads.map((h) => h?.count ?? 0),
      );
      const merged = mergeBatches(op, c.keys[0], c.keys.slice(1), (k) => k);
      let count = 0;
      try {
        return await stagedWrite(this.atomic, {
          groupOf: (inc) => elementGroup('set', store, inc),
          ttl: 0,
          check: (tx) => checkCollection(tx, 'set', store, pre),
          fill: (tx, s) => {
            const r = merged.next();
            if (r.done === true) return false;
            for (const k of r.value) tx.put(s.group + k, EMPTY, true, memberDecoder, s.exp);
            count += r.value.length;
            return true;
          },
          commit: (tx, s) => {
            if (!unchanged(tx, names, c)) throw INPUTS_CHANGED;
            replaceCollection(tx, 'set', store, count, 0, pre, s);
            return `{"count":${count}}`;
          },
        });
      } catch (err) {
        if (err !== INPUTS_CHANGED) throw err;
      }
    }
    // Small inputs, or inputs written without pause: inputs read and target replaced in one decision.
    return this.atomic.atomically(undefined, (tx) => {
      total(tx);
      const ms = setCombine(tx, name, op, others);
      setPut(tx, store, ms, 0, pre);
      return `{"count":${ms.length}}`;
    });
  }

  expire(name: string, ttl: number, pre?: Precondition): Promise<void> {
    return this.atomic.atomically(undefined, (tx) =>
      expireCollection(tx, 'set', name, ttl, pre, (keys, exp) => {
        for (const k of keys) tx.put(k, EMPTY, true, memberDecoder, exp);
      }),
    );
  }

  delete(name: string, pre?: Precondition): Promise<void> {
    return this.atomic.atomically(undefined, (tx) => dropCollection(tx, 'set', name, pre));
  }
}
