/**
 * Sorted-set namespace on the log (docs/api.md, "Sorted sets"): a header
 * plus one engine key per member whose value is the score (collections.ts).
 * A member's score is one directory lookup (the engine caches it); ranks
 * and ranges come from an order-statistic structure on (score, member)
 * (ranked.ts) kept beside the engine per sorted set. The structure holds
 * each member encoded (collections.ts, encodeMember): its element key
 * without the group's prefix, which is how the key directory holds it, so a
 * structure built from the group shares those strings (no copy per member:
 * 32 bytes each for 16-byte members). It is decoded only for an answer:
 * encoded members compare as the members do (the members' UTF-8 byte order,
 * which is their code point order).
 *
 * That structure is derived state: it is built from the element group the
 * first time a sorted set is read (so nothing is rebuilt at open), tagged
 * with the version of the header it reflects, and kept current by the
 * writes that change it, applied as their batch enters the engine. A
 * structure whose tag is not the header's current version (a write it did
 * not see, or a failed write the engine undid) is rebuilt on the next read,
 * never trusted.
 *
 * The functions taking a Tx are the decisions; transactions (txns.ts) reuse them.
 */
import type { Decoder, Engine, GroupSnapshot } from '../../engine/index.js';
import { collectionMissing, memberCompare, scoreText, type ZMode, type ZRange, zaddEffect } from '../collection.js';
import { results } from '../txn.js';
import { thenKeeping } from '../decided.js';
import { incremented, memberAnswer, memberItem, notMember, zsetEvents } from '../zsets.js';
import { RankedPairs, scoreOrder } from '../ranked.js';
import { batchesOf, ELEMENT_BATCH } from '../elements.js';
import type { Elements, Precondition, VersionOut, ZBatch, ZsetStore } from '../store.js';
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
  decodeMember,
  encodeMember,
  readHeader,
  replaceCollection,
  writeHeader,
} from './collections.js';

export const scoreDecoder: Decoder<number> = (buf) => Number(buf.toString('latin1'));
const scoreBytes = (s: number): Buffer => Buffer.from(scoreText(s), 'latin1');

/**
 * A sorted set's order, and the header version and engine rollback count it
 * reflects. While it is being built from a snapshot (`order` undefined), the
 * changes of writes committed meanwhile are kept in `log`, in commit order,
 * and applied once the build is done.
 */
interface Index {
  seq: number;
  rollbacks: number;
  order: RankedPairs | undefined;
  log: Array<Map<string, [number | undefined, number | undefined]>>;
  ready: Promise<void> | undefined;
}

/** What one decision changed in one sorted set: encoded member → [score before the decision, score after]. */
interface Pending {
  /** Header version before the decision (undefined: there was no sorted set). */
  before: number | undefined;
  rollbacks: number;
  /** A whole-object write or a delete: the structure is rebuilt, not patched. */
  reset: boolean;
  changes: Map<string, [number | undefined, number | undefined]>;
}

/** Scores read per step when an order is built from a snapshot. */
const BUILD_STEP = 65_536;

/** The derived structures of every sorted set read so far, and the upkeep of them at commit. */
export class ZsetIndexes {
  private readonly cache = new Map<string, Index>();
  private readonly pending = new WeakMap<Tx, Map<string, Pending>>();

  constructor(private readonly engine: Engine) {}

  /** The record of this decision's changes to `name`; the first call registers their upkeep at commit. */
  track(tx: Tx, name: string): Pending {
    let byName = this.pending.get(tx);
    if (byName === undefined) this.pending.set(tx, (byName = new Map()));
    let p = byName.get(name);
    if (p !== undefined) return p;
    // Not tx.seq: asking for the batch's number would keep a pipeline's sorted-set writes out of a shared batch (GroupWriter.write).
    p = { before: tx.version(headerKey('zset', name)), rollbacks: this.engine.rollbacks, reset: false, changes: new Map() };
    byName.set(name, p);
    const rec = p;
    tx.onCommit((written) => this.apply(name, rec, written));
    return p;
  }

  private apply(name: string, p: Pending, written: Promise<void>): void {
    const ix = this.cache.get(name);
    if (ix === undefined) return;
    if (p.reset || ix.seq !== p.before || ix.rollbacks !== p.rollbacks) {
      this.cache.delete(name);
      return;
    }
    // The batch is in the directory now: the header's version is the number it took, shared or not.
    const after = this.engine.versionOf(headerKey('zset', name));
    if (after === undefined) {
      this.cache.delete(name);
      return;
    }
    if (ix.order === undefined) ix.log.push(p.changes);
    else patch(ix.order, p.changes);
    ix.seq = after;
    // An undone write leaves the structure ahead of the data: drop it (the rollback count also says so).
    written.catch(() => {
      if (this.cache.get(name) === ix) this.cache.delete(name);
    });
  }

  /**
   * Makes the order of `name` current before a read decision asks for it:
   * when it is missing or stale, it is built from a snapshot of the element
   * group, whose scores are read from the log in large batches when they are
   * not cached (after a restart, none are), without holding the event loop;
   * writes committed meanwhile are applied after. Concurrent readers wait for
   * the same build.
   */
  async prepare(atomic: Atomic, name: string): Promise<void> {
    for (let attempt = 0; attempt < 4; attempt++) {
      const plan = atomic.readNow((tx) => {
        const h = readHeader(tx, 'zset', name);
        if (h === undefined) return undefined; // the read decision answers 404
        const ver = tx.version(headerKey('zset', name)) ?? 0;
        const ix = this.cache.get(name);
        // Wrapped: a decision may not return a promise (atomic.ts), but it may hand one over.
        if (ix !== undefined && ix.seq === ver && ix.rollbacks === this.engine.rollbacks) return { building: ix.ready };
        const group = elementGroup('zset', name, h.inc);
        const b: Index = { seq: ver, rollbacks: this.engine.rollbacks, order: undefined, log: [], ready: undefined };
        b.ready = this.build(b, tx.snapshot(group, scoreDecoder), group);
        this.cache.set(name, b);
        return { building: b.ready };
      });
      const p = plan instanceof Promise ? await plan : plan;
      if (p === undefined) return;
      await p.building;
      const ix = this.cache.get(name);
      if (ix !== undefined && ix.order !== undefined) return;
      // Invalidated while it was built (a rollback, a whole-object write): build again.
    }
  }

  private async build(b: Index, snap: GroupSnapshot<number>, group: string): Promise<void> {
    const n = snap.length;
    const scores = new Float64Array(n);
    try {
      for (let from = 0; from < n; from += BUILD_STEP) {
        const to = Math.min(n, from + BUILD_STEP);
        // The order keeps every score: caching them too would cost a lookup and an insert per member.
        const part = snap.read(from, to, false);
        const vals = part instanceof Promise ? await part : part;
        // Elements carry their sorted set's expiry: all of a live one are live.
        if (vals.length !== to - from) throw new Error('a member of a live sorted set had expired');
        scores.set(vals, from);
        await new Promise<void>((r) => setImmediate(r));
      }
      const members: string[] = new Array(n);
      for (let i = 0; i < n; i++) members[i] = snap.member(i);
      const order = sortedOrder(scores, members);
      for (const changes of b.log) patch(order, changes);
      b.order = order;
      b.log = [];
    } catch {
      // A read that failed, or a snapshot that no longer matches: the next read builds again.
      for (const [k, v] of this.cache) if (v === b) this.cache.delete(k);
    } finally {
      snap.release();
    }
  }

  /**
   * The order of an existing sorted set as stored. Current when `prepare`
   * ran just before; otherwise (a write slipped in between that could not
   * be applied) built here from the cached scores. Only in read decisions.
   */
  order(tx: Tx, name: string, h: Header): RankedPairs {
    const ver = tx.version(headerKey('zset', name)) ?? 0;
    const ix = this.cache.get(name);
    if (ix !== undefined && ix.seq === ver && ix.rollbacks === this.engine.rollbacks && ix.order !== undefined) return ix.order;
    const group = elementGroup('zset', name, h.inc);
    const members = tx.groupKeys(group, '', Number.MAX_SAFE_INTEGER, true);
    const scores = tx.getMany(
      members.map((m) => group + m),
      scoreDecoder,
    ) as number[];
    const order = sortedOrder(scores, members);
    if (!tx.wrote && (ix === undefined || ix.order !== undefined)) {
      this.cache.set(name, { seq: ver, rollbacks: this.engine.rollbacks, order, log: [], ready: undefined });
    }
    return order;
  }
}

function patch(order: RankedPairs, changes: Map<string, [number | undefined, number | undefined]>): void {
  for (const [m, [old, now]] of changes) {
    if (old !== undefined) order.delete(old, m);
    if (now !== undefined) order.add(now, m);
  }
}

/** (score, member) order of encoded members given in key order with their scores: a stable sort by score. */
function sortedOrder(scores: ArrayLike<number>, keys: string[]): RankedPairs {
  const pos = scoreOrder(scores);
  const n = pos.length;
  const outS: number[] = new Array(n);
  const outM: string[] = new Array(n);
  for (let i = 0; i < n; i++) {
    outS[i] = scores[pos[i]];
    outM[i] = keys[pos[i]];
  }
  return RankedPairs.fromSorted(outS, outM);
}

export function zsetPut(ix: ZsetIndexes, tx: Tx, name: string, pairs: ReadonlyArray<[string, number]>, ttl: number, pre?: Precondition): boolean {
  ix.track(tx, name).reset = true;
  const { created, group, exp } = replaceCollection(tx, 'zset', name, pairs.length, ttl, pre);
  for (const [m, s] of pairs) tx.put(group + encodeMember(m), scoreBytes(s), s, scoreDecoder, exp);
  return created;
}

function record(p: { changes: Map<string, [number | undefined, number | undefined]> }, key: string, old: number | undefined, now: number | undefined): void {
  const c = p.changes.get(key);
  if (c === undefined) p.changes.set(key, [old, now]);
  else c[1] = now;
}

/** Adds or updates members under `mode`; returns [added, updated, count]. Writes nothing when nothing changes. */
export function zsetAdd(
  ix: ZsetIndexes,
  tx: Tx,
  name: string,
  pairs: ReadonlyArray<[string, number]>,
  mode: ZMode,
  create: boolean,
  pre?: Precondition,
): [number, number, number] {
  const h = headerForWrite(tx, 'zset', name, create, pre);
  const group = elementGroup('zset', name, h.inc);
  const exp = tx.expiry(headerKey('zset', name));
  const members = pairs.map(([m]) => encodeMember(m));
  const keys = members.map((m) => group + m);
  const cur = tx.getMany(keys, scoreDecoder);
  let added = 0;
  let updated = 0;
  let p: Pending | undefined;
  for (let i = 0; i < pairs.length; i++) {
    const s = pairs[i][1];
    const c = cur[i];
    const effect = zaddEffect(mode, c, s);
    if (effect === undefined) continue;
    if (effect === 'add') added++;
    else updated++;
    tx.put(keys[i], scoreBytes(s), s, scoreDecoder, exp);
    record((p ??= ix.track(tx, name)), members[i], c, s);
  }
  const count = h.count + added;
  if (p === undefined) return [0, 0, h.count];
  writeHeader(tx, 'zset', name, { inc: h.inc, count }, { op: 'add', json: zsetEvents.add(pairs, mode, added, updated, count) });
  return [added, updated, count];
}

/** Adds `delta` to a member's score (a missing member starts at 0); returns the new score. */
export function zsetIncr(ix: ZsetIndexes, tx: Tx, name: string, member: string, delta: number, create: boolean, pre?: Precondition): number {
  const h = headerForWrite(tx, 'zset', name, create, pre);
  const group = elementGroup('zset', name, h.inc);
  const enc = encodeMember(member);
  const key = group + enc;
  const cur = tx.get(key, scoreDecoder);
  const s = incremented(name, member, cur, delta);
  tx.put(key, scoreBytes(s), s, scoreDecoder, tx.expiry(headerKey('zset', name)));
  record(ix.track(tx, name), enc, cur, s);
  const count = h.count + (cur === undefined ? 1 : 0);
  writeHeader(tx, 'zset', name, { inc: h.inc, count }, { op: 'incr', json: zsetEvents.incr(member, delta, s) });
  return s;
}

/** Removes members; returns [removed, count]. The sorted set stays, possibly empty. */
export function zsetRemove(ix: ZsetIndexes, tx: Tx, name: string, members: readonly string[], pre?: Precondition): [number, number] {
  const h = existingHeader(tx, 'zset', name, pre);
  const group = elementGroup('zset', name, h.inc);
  const encs = members.map((m) => encodeMember(m));
  const keys = encs.map((m) => group + m);
  const cur = tx.getMany(keys, scoreDecoder);
  let removed = 0;
  let p: Pending | undefined;
  for (let i = 0; i < keys.length; i++) {
    const c = cur[i];
    if (c === undefined || !tx.has(keys[i])) continue; // a duplicate in `members` was removed just now
    tx.del(keys[i]);
    record((p ??= ix.track(tx, name)), encs[i], c, undefined);
    removed++;
  }
  const count = h.count - removed;
  // None was a member: a write that changes nothing writes nothing.
  if (p === undefined) return [0, count];
  writeHeader(tx, 'zset', name, { inc: h.inc, count }, { op: 'remove', json: zsetEvents.remove(members, removed, count) });
  return [removed, count];
}

/** A member's score (undefined when not a member); 404 when the sorted set does not exist. */
export function zsetScore(tx: Tx, name: string, member: string): number | undefined {
  const h = existingHeader(tx, 'zset', name, undefined);
  return tx.get(elementGroup('zset', name, h.inc) + encodeMember(member), scoreDecoder);
}

export function zsetCount(tx: Tx, name: string): number {
  return existingHeader(tx, 'zset', name, undefined).count;
}

export class LogZsets implements ZsetStore {
  readonly indexes: ZsetIndexes;

  constructor(
    engine: Engine,
    private readonly atomic: Atomic,
  ) {
    this.indexes = new ZsetIndexes(engine);
  }

  /** A sorted set of more than STAGE_STEP members is written in slices and switched to in one batch (staged.ts). */
  put(name: string, pairs: ReadonlyArray<[string, number]>, ttl: number, pre?: Precondition): Promise<boolean> {
    if (pairs.length <= STAGE_STEP) return this.atomic.atomically(undefined, (tx) => zsetPut(this.indexes, tx, name, pairs, ttl, pre));
    return stagedWrite(this.atomic, {
      groupOf: (inc) => elementGroup('zset', name, inc),
      ttl,
      check: (tx) => checkCollection(tx, 'zset', name, pre),
      fill: fillFrom(pairs.length, (tx, st, i) => {
        const [m, s] = pairs[i];
        tx.put(st.group + encodeMember(m), scoreBytes(s), s, scoreDecoder, st.exp);
      }),
      commit: (tx, st) => {
        this.indexes.track(tx, name).reset = true;
        return replaceCollection(tx, 'zset', name, pairs.length, ttl, pre, st).created;
      },
    });
  }

  add(name: string, pairs: ReadonlyArray<[string, number]>, mode: ZMode, create: boolean, pre?: Precondition): Promise<string> {
    const p = this.atomic.atomically(undefined, (tx) => zsetAdd(this.indexes, tx, name, pairs, mode, create, pre));
    return thenKeeping(p, ([added, updated, count]) => results.addedOrUpdated(added, updated, count));
  }

  incr(name: string, member: string, delta: number, create: boolean, pre?: Precondition): Promise<string> {
    const p = this.atomic.atomically(undefined, (tx) => zsetIncr(this.indexes, tx, name, member, delta, create, pre));
    return thenKeeping(p, (s) => results.score(s));
  }

  async remove(name: string, members: readonly string[], pre?: Precondition): Promise<string> {
    const [removed, count] = await this.atomic.atomically(undefined, (tx) => zsetRemove(this.indexes, tx, name, members, pre));
    return results.removed(removed, count);
  }

  async range(name: string, q: ZRange, out?: VersionOut): Promise<string> {
    await this.indexes.prepare(this.atomic, name);
    return this.atomic.read((tx) => {
      const h = readHeader(tx, 'zset', name);
      if (h === undefined) throw collectionMissing('zset', name);
      if (out !== undefined) out.version = tx.version(headerKey('zset', name)) ?? 0;
      const order = this.indexes.order(tx, name, h);
      let text = '{"items":[';
      let first = true;
      const [from, to, desc] = windowOf(order, q);
      order.slice(from, to, desc, (sc: number, m: string): void => {
        text += (first ? '' : ',') + memberItem(sc, decodeMember(m));
        first = false;
      });
      return `${text}],"count":${h.count}}`;
    });
  }

  /**
   * The range in batches: at most ELEMENT_BATCH items are copied in the
   * decision; a longer range is read from a snapshot of the order taken in
   * it (RankedPairs.snapshot: copy on write, one instant), a batch per step.
   */
  async items(name: string, q: ZRange): Promise<Elements<ZBatch>> {
    await this.indexes.prepare(this.atomic, name);
    return this.atomic.read((tx) => {
      const h = readHeader(tx, 'zset', name);
      if (h === undefined) throw collectionMissing('zset', name);
      const version = tx.version(headerKey('zset', name)) ?? 0;
      const order = this.indexes.order(tx, name, h);
      const [from, to, desc] = windowOf(order, q);
      const view = to - from < ELEMENT_BATCH ? order : order.snapshot();
      return { count: h.count, version, ...batchesOf(zsetBatches(view, from, to, desc), { members: [], scores: [] }) };
    });
  }

  async member(name: string, member: string): Promise<string> {
    await this.indexes.prepare(this.atomic, name);
    return this.atomic.read((tx) => {
      const h = existingHeader(tx, 'zset', name, undefined);
      const enc = encodeMember(member);
      const s = tx.get(elementGroup('zset', name, h.inc) + enc, scoreDecoder);
      if (s === undefined) throw notMember(name, member);
      const order = this.indexes.order(tx, name, h);
      const r = order.rank(s, enc);
      return memberAnswer(s, r, order.size);
    });
  }

  expire(name: string, ttl: number, pre?: Precondition): Promise<void> {
    return this.atomic.atomically(undefined, (tx) => {
      this.indexes.track(tx, name);
      expireCollection(tx, 'zset', name, ttl, pre, (keys, exp) => {
        const scores = tx.getMany(keys, scoreDecoder);
        for (let i = 0; i < keys.length; i++) {
          const s = scores[i] as number;
          tx.put(keys[i], scoreBytes(s), s, scoreDecoder, exp);
        }
      });
    });
  }

  delete(name: string, pre?: Precondition): Promise<void> {
    return this.atomic.atomically(undefined, (tx) => {
      this.indexes.track(tx, name).reset = true;
      dropCollection(tx, 'zset', name, pre);
    });
  }
}

export { memberCompare };

/** Ranks from..to (ascending positions, inclusive) and direction of a range query over `order`. */
function windowOf(order: RankedPairs, q: ZRange): [number, number, boolean] {
  const [from, to, desc] = unclamped(order, q);
  const a = Math.max(0, from);
  const b = Math.min(order.size - 1, to);
  return a > b ? [0, -1, false] : [a, b, desc];
}

function unclamped(order: RankedPairs, q: ZRange): [number, number, boolean] {
  const n = order.size;
  if (q.by === 'rank') {
    let start = q.start < 0 ? q.start + n : q.start;
    let stop = q.stop < 0 ? q.stop + n : q.stop;
    if (start < 0) start = 0;
    if (stop >= n) stop = n - 1;
    if (start > stop) return [0, -1, false];
    // With rev, ranks count from the highest: rank i is ascending position n - 1 - i.
    return q.rev ? [n - 1 - stop, n - 1 - start, true] : [start, stop, false];
  }
  const lo = order.countBelow(q.min.score, q.min.open);
  const hi = order.countBelow(q.max.score, !q.max.open); // ranks lo .. hi - 1 are in range
  const limit = q.limit ?? Number.MAX_SAFE_INTEGER;
  if (q.rev) return [Math.max(lo, hi - q.offset - limit), hi - 1 - q.offset, true];
  return [lo + q.offset, Math.min(hi - 1, lo + q.offset + limit - 1), false];
}

/** Positions from..to of `order` (descending from `to` when `desc`), decoded, ELEMENT_BATCH per batch. */
function* zsetBatches(order: RankedPairs, from: number, to: number, desc: boolean): Generator<ZBatch, undefined> {
  for (let done = 0; done <= to - from; done += ELEMENT_BATCH) {
    const k = Math.min(ELEMENT_BATCH, to - from + 1 - done);
    const members: string[] = [];
    const scores: number[] = [];
    const visit = (sc: number, m: string): void => {
      scores.push(sc);
      members.push(decodeMember(m));
    };
    if (desc) order.slice(to - done - k + 1, to - done, true, visit);
    else order.slice(from + done, from + done + k - 1, false, visit);
    yield { members, scores };
  }
  return undefined;
}
