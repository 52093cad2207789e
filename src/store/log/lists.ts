/**
 * Lists on the log (docs/format.md, "Lists"). A list is a header entry
 * (`Q/<name>`: incarnation, head, tail, and the last operation for the change
 * feed) plus one engine entry per item in the group of that incarnation,
 * keyed by a signed position. Positions are dense: the items are exactly the
 * positions head … tail-1, so index i is the entry at head + i (no search),
 * a left push takes head-1 and a right push tail, and neither renumbers
 * anything. An element operation writes its items and the header, one batch;
 * only remove-by-value, which must scan the list anyway (Redis LREM is O(n)),
 * moves the items on the shorter side of the gap it makes, so positions stay
 * dense. Items carry the list's expiry, as rows carry their table's, so an
 * expiring list takes its items with it.
 *
 * The functions taking a Tx are the decisions; transactions (txns.ts) reuse
 * them. Blocking pops wait in a queue per list name (../list-waiters.ts),
 * woken here by the commit of any batch that writes that list's header.
 */
import { type Decoder, Op } from '../../engine/index.js';
import { NO_ITEMS, shuttingDown, type Waiter, WaitingPops } from '../list-waiters.js';
import { indexOf, listMissing, rangeOf, removals } from '../lists.js';
import { ELEMENT_BATCH } from '../elements.js';
import type { Elements, ListPatch, ListPop, ListSide, ListStore, Precondition, Sync, VersionOut } from '../store.js';
import { expiryOf } from '../validate.js';
import { checkPrecondition } from '../versions.js';
import type { Atomic, Tx } from './atomic.js';
import { isListKey, itemKey, listGroup, listKey, nameOfTop } from './keys.js';
import { listItems, type ListReads, type SharedCopies } from './list-copy.js';
import { snapshotBatches } from './snapshot-batches.js';
import { fillFrom, STAGE_STEP, stagedWrite } from './staged.js';

export interface ListHead {
  /** Sequence number of the batch that created this incarnation: names its item group. */
  inc: number;
  /** Position of the first item. */
  head: number;
  /** Position after the last item: length = tail - head. */
  tail: number;
}

/** The header's first line holds the numbers; what follows it (the operation, for the change feed) is never decoded here. */
export const headDecoder: Decoder<ListHead> = (buf) => {
  let nl = buf.indexOf(0x0a);
  if (nl < 0) nl = buf.length;
  const s = buf.toString('latin1', 0, nl);
  const a = s.indexOf(' ');
  const b = s.indexOf(' ', a + 1);
  return { inc: Number(s.slice(0, a)), head: Number(s.slice(a + 1, b)), tail: Number(s.slice(b + 1)) };
};

/** An item's cached form is its JSON text: answers are joined from it without serialising anything. */
export const itemDecoder: Decoder<string> = (buf) => buf.toString('utf8');

/**
 * `event` is `<op> <JSON of its arguments and result>` (changes.ts publishes
 * it), `put` for a whole-list write, '' for a lifetime change.
 */
function writeHead(tx: Tx, name: string, h: ListHead, exp: number, event: string): void {
  tx.put(listKey(name), Buffer.from(`${h.inc} ${h.head} ${h.tail}\n${event}`, 'utf8'), h, headDecoder, exp);
}

function putItem(tx: Tx, group: string, pos: number, text: string, exp: number): void {
  tx.put(itemKey(group, pos), Buffer.from(text, 'utf8'), text, itemDecoder, exp);
}

export function listHead(tx: Tx, name: string): ListHead | undefined {
  return tx.get(listKey(name), headDecoder);
}

function existing(tx: Tx, name: string): ListHead {
  const h = listHead(tx, name);
  if (h === undefined) throw listMissing(name);
  return h;
}

export function checkList(tx: Tx, name: string, pre: Precondition | undefined): void {
  if (pre !== undefined) checkPrecondition(`list '${name}'`, tx.version(listKey(name)), pre);
}

/** Items at offsets from..to (inclusive) from the left, as JSON texts. */
function itemsAt(tx: Tx, name: string, h: ListHead, from: number, to: number): string[] {
  if (to < from) return [];
  const group = listGroup(name, h.inc);
  const keys: string[] = new Array(to - from + 1);
  for (let i = from; i <= to; i++) keys[i - from] = itemKey(group, h.head + i);
  const got = tx.getMany(keys, itemDecoder);
  for (let i = 0; i < got.length; i++) {
    // Dense positions are the layout's invariant: a gap is a defect, never an answer.
    if (got[i] === undefined) throw new Error(`list '${name}' has no item at position ${h.head + from + i}`);
  }
  return got as string[];
}

/** Creates or replaces the list with `texts` (JSON); true when it is new. */
export function putList(tx: Tx, name: string, texts: readonly string[], ttl: number, pre: Precondition | undefined): boolean {
  checkList(tx, name, pre);
  const old = listHead(tx, name);
  if (old !== undefined) tx.dropGroup(listGroup(name, old.inc));
  // The incarnation is this batch's sequence number: unique forever, so the dropped group is never reused.
  const h: ListHead = { inc: tx.seq, head: 0, tail: texts.length };
  const exp = expiryOf(ttl, tx.now);
  const group = listGroup(name, h.inc);
  for (let i = 0; i < texts.length; i++) putItem(tx, group, i, texts[i], exp);
  writeHead(tx, name, h, exp, 'put');
  return old === undefined;
}

/** Pushes `texts` one at a time (a left push of [a, b] leaves b, a, …); resolves to the new length. */
export function pushItems(tx: Tx, name: string, texts: readonly string[], side: ListSide, create: boolean): number {
  const key = listKey(name);
  let h = tx.get(key, headDecoder);
  let exp = 0;
  if (h === undefined) {
    if (!create) throw listMissing(name);
    // A list created by a push has no expiry (docs/api.md).
    h = { inc: tx.seq, head: 0, tail: 0 };
  } else {
    exp = tx.expiry(key);
  }
  const group = listGroup(name, h.inc);
  let head = h.head;
  let tail = h.tail;
  if (side === 'right') for (let i = 0; i < texts.length; i++) putItem(tx, group, tail++, texts[i], exp);
  else for (let i = 0; i < texts.length; i++) putItem(tx, group, --head, texts[i], exp);
  const len = tail - head;
  writeHead(tx, name, { inc: h.inc, head, tail }, exp, `push {"side":"${side}","values":[${texts.join(',')}],"length":${len}}`);
  return len;
}

/** Up to `count` items from `side`, removed; undefined when the list does not exist. */
export function popItems(tx: Tx, name: string, side: ListSide, count: number): string[] | undefined {
  const key = listKey(name);
  const h = tx.get(key, headDecoder);
  if (h === undefined) return undefined;
  const n = Math.min(count, h.tail - h.head);
  if (n === 0) return [];
  const group = listGroup(name, h.inc);
  const left = side === 'left';
  // In pop order: from the head rightwards, or from the tail leftwards.
  const items = left ? itemsAt(tx, name, h, 0, n - 1) : itemsAt(tx, name, h, h.tail - h.head - n, h.tail - h.head - 1).reverse();
  for (let i = 0; i < n; i++) tx.del(itemKey(group, left ? h.head + i : h.tail - 1 - i));
  const next: ListHead = left ? { inc: h.inc, head: h.head + n, tail: h.tail } : { inc: h.inc, head: h.head, tail: h.tail - n };
  writeHead(tx, name, next, tx.expiry(key), `pop {"side":"${side}","count":${count},"items":[${items.join(',')}],"length":${next.tail - next.head}}`);
  return items;
}

/**
 * A pop as one decision: the items, moved to `p.to` when asked, as the
 * answer's JSON text; undefined when there is nothing to pop and `waiting`
 * (the caller waits), otherwise `{"items":[]}` or 404 for a missing list.
 */
export function popNow(tx: Tx, name: string, p: ListPop, pre: Precondition | undefined, waiting: boolean): string | undefined {
  checkList(tx, name, pre);
  const items = popItems(tx, name, p.side, p.count);
  if (items === undefined) {
    if (waiting) return undefined;
    throw listMissing(name);
  }
  if (items.length === 0) return waiting ? undefined : NO_ITEMS;
  if (p.to !== undefined) pushItems(tx, p.to, items, p.toSide, true);
  return `{"items":[${items.join(',')}]}`;
}

/** The range as GET answers it: {"items": [...], "length": n}. */
export function rangeText(tx: Tx, name: string, start: number, stop: number): string {
  const h = existing(tx, name);
  const len = h.tail - h.head;
  const { from, to } = rangeOf(len, start, stop);
  return `{"items":[${itemsAt(tx, name, h, from, to).join(',')}],"length":${len}}`;
}

/**
 * The range as batches of item texts: a range of at most ELEMENT_BATCH items
 * is read in the decision, as `rangeText` reads it; a longer one from a
 * snapshot of the item group taken as the decision's last step (one instant;
 * docs/query.md, "Large collections"), a batch per step after it.
 */
export function rangeItems(tx: Tx, name: string, start: number, stop: number): Elements<string[]> {
  const h = existing(tx, name);
  const len = h.tail - h.head;
  const version = tx.version(listKey(name)) ?? 0;
  const { from, to } = rangeOf(len, start, stop);
  if (to - from < ELEMENT_BATCH) return { count: len, version, first: itemsAt(tx, name, h, from, to), rest: undefined };
  const snap = tx.snapshot(listGroup(name, h.inc), itemDecoder);
  if (snap.length !== len) {
    snap.release();
    throw new Error(`list '${name}' has ${snap.length} item keys for its length ${len}`);
  }
  return { count: len, version, first: [], rest: snapshotBatches(snap, from, to) };
}

/** set / trim / remove and/or ttl in one batch; resolves to the new length. */
export function patchList(tx: Tx, name: string, p: ListPatch, pre: Precondition | undefined): number {
  checkList(tx, name, pre);
  const key = listKey(name);
  const h = existing(tx, name);
  const group = listGroup(name, h.inc);
  const exp = p.ttl !== undefined ? expiryOf(p.ttl, tx.now) : tx.expiry(key);
  const len = h.tail - h.head;
  let head = h.head;
  let tail = h.tail;
  let event = '';
  if (p.set !== undefined) {
    const i = indexOf(len, p.set.index, 'set.index');
    const text = JSON.stringify(p.set.value);
    putItem(tx, group, head + i, text, exp);
    event = `set {"index":${p.set.index},"value":${text},"length":${len}}`;
  } else if (p.trim !== undefined) {
    const { from, to } = rangeOf(len, p.trim.start, p.trim.stop);
    const keepFrom = to < from ? len : from;
    const keepTo = to < from ? len - 1 : to;
    for (let i = 0; i < keepFrom; i++) tx.del(itemKey(group, h.head + i));
    for (let i = keepTo + 1; i < len; i++) tx.del(itemKey(group, h.head + i));
    head = h.head + keepFrom;
    tail = h.head + keepTo + 1;
    event = `trim {"start":${p.trim.start},"stop":${p.trim.stop},"removed":${len - (tail - head)},"length":${tail - head}}`;
  } else if (p.remove !== undefined) {
    const items = itemsAt(tx, name, h, 0, len - 1);
    const gone = removals(items, p.remove.value, p.remove.count);
    const k = gone.length;
    if (k > 0) {
      const out = new Set(gone);
      const kept = items.filter((_, i) => !out.has(i));
      const first = gone[0];
      const last = gone[k - 1];
      // Close the gaps from the side with fewer items to move (docs/format.md, "Lists").
      if (len - first - k <= last - (k - 1)) {
        for (let j = first; j < kept.length; j++) putItem(tx, group, head + j, kept[j], exp);
        for (let pos = head + kept.length; pos < tail; pos++) tx.del(itemKey(group, pos));
        tail = head + kept.length;
      } else {
        const newHead = head + k;
        for (let j = 0; j < last - (k - 1); j++) putItem(tx, group, newHead + j, kept[j], exp);
        for (let pos = head; pos < newHead; pos++) tx.del(itemKey(group, pos));
        head = newHead;
      }
    }
    event = `remove {"value":${JSON.stringify(p.remove.value)},"count":${p.remove.count},"removed":${k},"length":${tail - head}}`;
  }
  if (p.ttl !== undefined) {
    // Items carry the list's expiry: a new lifetime rewrites each of them (O(n), as for tables).
    const now = { inc: h.inc, head, tail };
    const texts = itemsAt(tx, name, now, 0, tail - head - 1);
    for (let i = 0; i < texts.length; i++) putItem(tx, group, head + i, texts[i], exp);
  }
  writeHead(tx, name, { inc: h.inc, head, tail }, exp, event);
  return tail - head;
}

export function deleteList(tx: Tx, name: string, pre: Precondition | undefined): void {
  checkList(tx, name, pre);
  const h = existing(tx, name);
  tx.del(listKey(name));
  tx.dropGroup(listGroup(name, h.inc));
}

const LIST_READS: ListReads = { head: listHead, decoder: itemDecoder, oneStep: rangeItems };

export class LogLists implements ListStore {
  private readonly waiting = new WaitingPops();
  /** Lists whose first waiter's pop is being decided after a read from disk: later ones wait their turn. */
  private readonly serving = new Set<string>();
  /** Copies of long ranges that concurrent readers of one instant share (list-copy.ts). */
  private readonly copies: SharedCopies = new Map();

  constructor(private readonly atomic: Atomic) {
    atomic.observe(this.onCommit);
  }

  /**
   * Commit observer: a batch that writes a list's header may have given it
   * items; its waiters are served right after this turn's synchronous work,
   * before any other request is read, one decision each, in arrival order.
   */
  private readonly onCommit = (tx: Tx): void => {
    if (this.waiting.empty) return;
    const ops = tx.ops;
    for (let i = 0; i < ops.length; i++) {
      const o = ops[i];
      if (o.op !== Op.Put || !isListKey(o.key)) continue;
      const name = nameOfTop(o.key);
      if (this.waiting.has(name)) queueMicrotask(() => this.serve(name));
    }
  };

  /** A list of more than STAGE_STEP items is written in slices and switched to in one batch (staged.ts). */
  put(name: string, items: unknown[], ttl: number, pre?: Precondition): Promise<boolean> {
    if (items.length <= STAGE_STEP) {
      const texts = items.map((v) => JSON.stringify(v));
      return this.atomic.atomically(undefined, (tx) => putList(tx, name, texts, ttl, pre));
    }
    return stagedWrite(this.atomic, {
      groupOf: (inc) => listGroup(name, inc),
      ttl,
      check: (tx) => checkList(tx, name, pre),
      fill: fillFrom(items.length, (tx, s, i) => putItem(tx, s.group, i, JSON.stringify(items[i]), s.exp)),
      commit: (tx, s) => {
        checkList(tx, name, pre);
        const old = listHead(tx, name);
        if (old !== undefined) tx.dropGroup(listGroup(name, old.inc));
        writeHead(tx, name, { inc: s.inc, head: 0, tail: items.length }, s.exp, 'put');
        return old === undefined;
      },
    });
  }

  /** A long range is copied in steps (list-copy.ts); a short one is read in one decision. */
  items(name: string, start: number, stop: number): Sync<Elements<string[]>> {
    return listItems(this.atomic, this.copies, name, start, stop, LIST_READS);
  }

  range(name: string, start: number, stop: number, out?: VersionOut): Sync<string> {
    return this.atomic.readNow((tx) => {
      const text = rangeText(tx, name, start, stop);
      if (out !== undefined) out.version = tx.version(listKey(name)) ?? 0;
      return text;
    });
  }

  push(name: string, values: unknown[], side: ListSide, create: boolean, pre?: Precondition): Promise<string> {
    const texts = values.map((v) => JSON.stringify(v));
    return this.atomic.atomically(undefined, (tx) => {
      checkList(tx, name, pre);
      return `{"length":${pushItems(tx, name, texts, side, create)}}`;
    });
  }

  patch(name: string, p: ListPatch, pre?: Precondition): Promise<string> {
    return this.atomic.atomically(undefined, (tx) => `{"length":${patchList(tx, name, p, pre)}}`);
  }

  delete(name: string, pre?: Precondition): Promise<void> {
    return this.atomic.atomically(undefined, (tx) => deleteList(tx, name, pre));
  }

  /**
   * A pop that finds nothing and may wait joins the list's queue in the same
   * decision that found nothing, so no push can slip in between. A pop that
   * arrives while others wait (or one is being served) queues behind them.
   */
  pop(name: string, p: ListPop, pre?: Precondition): Promise<string> {
    if (p.waitMs === 0) return this.atomic.atomically(undefined, (tx) => popNow(tx, name, p, pre, false) as string);
    if (this.waiting.closed) return Promise.reject(shuttingDown());
    let w: Waiter | undefined;
    const first = this.atomic.atomically(undefined, (tx) => {
      if (!this.waiting.has(name) && !this.serving.has(name)) {
        const r = popNow(tx, name, p, pre, true);
        if (r !== undefined) return r;
      } else {
        checkList(tx, name, pre);
      }
      // Decided after a read from disk that outlasted the start of shutdown: nothing was popped, and nothing waits any more.
      if (this.waiting.closed) throw shuttingDown();
      w ??= this.waiting.enqueue(name, p, undefined);
      return undefined;
    });
    return first.then((r) => (r !== undefined ? r : (w as Waiter).promise));
  }

  /** Serves the list's waiters in arrival order while it has items. */
  private serve(name: string): void {
    if (this.serving.has(name)) return;
    for (;;) {
      const w = this.waiting.next(name);
      if (w === undefined) return;
      // Set by the decision: 0 while it waits for a read from disk, 1 nothing to pop, 2 popped.
      const state = { v: 0 };
      w.taken = true;
      const pr = this.atomic.atomically(undefined, (tx) => {
        const r = popNow(tx, name, w.p, undefined, true);
        state.v = r === undefined ? 1 : 2;
        return r;
      });
      if (state.v === 1) {
        w.taken = false;
        // A decision that found nothing to pop wrote nothing: its outcome changes nothing, and the waiter stays queued.
        void pr.catch(nothingTaken);
        return;
      }
      if (state.v === 2) {
        this.answer(w, pr);
        continue;
      }
      // The decision reads from disk first: the next waiter waits for it, so order holds.
      this.serving.add(name);
      pr.then(
        (r) => {
          this.serving.delete(name);
          if (r !== undefined) this.answer(w, pr);
          else {
            w.taken = false;
            if (w.lapsed) this.waiting.giveUp(w);
          }
          this.serve(name);
        },
        (err) => {
          this.serving.delete(name);
          this.waiting.settle(w, undefined, err);
          this.serve(name);
        },
      );
      return;
    }
  }

  /** Leaves the queue now; answers once the pop is durable. */
  private answer(w: Waiter, pr: Promise<string | undefined>): void {
    this.waiting.leave(w);
    pr.then(
      (r) => w.resolve(r ?? NO_ITEMS),
      (err) => w.reject(err),
    );
  }

  /** Shutdown has begun (WaitingPops.stop); a pop being decided is one that reads from disk. */
  stopWaiting(): void {
    this.waiting.stop();
  }
}

function nothingTaken(): void {
  // A pop decision that found nothing wrote nothing: whatever becomes of it, no item was taken and the waiter stays queued.
}
