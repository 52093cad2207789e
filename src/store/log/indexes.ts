/**
 * Secondary indexes on table rows (docs/query.md, "Secondary indexes").
 *
 * - A definition is one engine entry in the group `x\0` (key: table U+0001
 *   field) holding the table incarnation, the build cursor and whether the
 *   index is ready; it carries the table's expiry, as the index's entries
 *   do (a change of the table's lifetime rewrites them: expireTable).
 * - Every index entry is also an engine key, with an empty value, in the
 *   index's own group (`i\0table\0inc\0field\0`): the value's JSON and the
 *   t_id are in the key. Entries are written in the same batch as the row
 *   change they follow (Atomic's batch extender), so after a crash the
 *   entries agree with the rows; dropping an index or its table drops the
 *   group in one entry.
 * - In memory, each index is an ordered set of (value, t_id) for rows whose
 *   value at the path is a string, number, boolean or null, plus the t_ids
 *   whose value is an array or object (they matter only to `order`). At open
 *   it is rebuilt from the keys alone, one pass over the key directory and a
 *   sort; no row is read (except the rare value too long to sit in a key).
 * - Building walks t_ids 1..next in small write decisions (BUILD_STEP rows),
 *   each writing the entries and the advanced cursor, yielding between them.
 *   A row below the cursor is maintained by every batch, a row above it is
 *   left to the builder, so the two never disagree. Queries use an index
 *   only once it is ready.
 */
import { type Decoder, type Engine, type Logger, Op } from '../../engine/index.js';
import { conflict } from '../errors.js';
import { indexMissing } from '../messages.js';
import { SortedList } from '../sorted.js';
import { lookup, MISSING, type Row } from '../wheres.js';
import type { Atomic, Tx } from './atomic.js';
import {
  DEF_GROUP,
  defKey,
  ENTRY_OTHER,
  ENTRY_PREFIX,
  ENTRY_VALUE,
  entryCut,
  entrySep,
  longEntryKey,
  otherEntryKey,
  entryGroup,
  rowGroup,
  rowKey,
  tableKey,
  valueEntryKey,
} from './keys.js';
import { cmpEntry, isPrim, type IxEntry, type Prim, SecondaryIndex, sortedEntries, TableIndexes } from './secondary.js';

/** An index being filled from its keys: values and t_ids of its entries, t_ids of rows read instead. */
interface Fill {
  ix: SecondaryIndex;
  vals: Prim[];
  ids: number[];
  long: number[];
}

/** Rows a build step indexes in one decision: small enough that no request waits behind it for long. */
const BUILD_STEP = 500;
/** Values whose JSON is longer than this are not copied into keys; their rows are read at open instead. */
const MAX_KEY_VALUE = 1024;
const EMPTY = Buffer.alloc(0);

/** The key of a row's entry, or undefined when the row has no value at the path. */
function entryKey(group: string, v: unknown, id: number): string | undefined {
  if (v === MISSING) return undefined;
  if (!isPrim(v)) return otherEntryKey(group, id);
  const j = JSON.stringify(v);
  return j.length > MAX_KEY_VALUE ? longEntryKey(group, id) : valueEntryKey(group, j, id);
}

interface Def {
  table: string;
  inc: number;
  field: string;
  cursor: number;
  ready: boolean;
}

export { defKey };
const defDecoder: Decoder<Def> = (buf) => JSON.parse(buf.toString('utf8')) as Def;

/** The stored definition keys of a table's indexes (those of any incarnation), in a decision. */
function defKeysOf(tx: Tx, name: string): string[] {
  const prefix = defKey(name, '');
  const out: string[] = [];
  for (let after = prefix; ;) {
    const page = tx.groupKeys(DEF_GROUP, after, 64);
    if (page.length === 0) return out;
    for (const k of page) {
      if (!k.startsWith(prefix)) return out;
      out.push(k);
    }
    after = page[page.length - 1];
  }
}

/** Reads a table's incarnation and next t_id in a decision; undefined when it does not exist. */
export type MetaOf = (tx: Tx, name: string) => { inc: number; next: number } | undefined;
export type RowDecoder = Decoder<{ id: number; obj: Row; json: string }>;

export class IndexRegistry {
  private readonly byTable = new Map<string, TableIndexes>();
  private readonly byGroup = new Map<string, TableIndexes>();
  private readonly building = new Set<Promise<void>>();
  private closed = false;
  /** Index entry keys collected at open (until load has used them); later fills read the directory. */
  private entryKeys: readonly string[] | undefined;

  constructor(
    private readonly engine: Engine,
    private readonly atomic: Atomic,
    private readonly metaOf: MetaOf,
    private readonly rowDecoder: RowDecoder,
    private readonly log: Logger,
  ) {
    atomic.extend(this.extendBatch);
    atomic.observe(this.onCommit);
  }

  /**
   * Loads every definition and its entries from the keys (one pass over the
   * key directory), then resumes unfinished builds in the background.
   */
  async load(entryKeys: readonly string[]): Promise<void> {
    this.entryKeys = entryKeys;
    const defs = await this.engine.scan(DEF_GROUP, defDecoder);
    if (defs.length === 0) {
      this.entryKeys = undefined;
      return;
    }
    await this.serve(defs);
  }

  /**
   * Serves the definitions whose table incarnation is current: registers
   * them, fills them from their keys, then marks each ready or resumes its
   * build. At open (load), before the store takes any request.
   */
  private async serve(defs: readonly Def[]): Promise<void> {
    // A definition outlived by its table incarnation is not served (drop deletes it in the same batch anyway).
    const current = await this.atomic.read((tx) => defs.filter((d) => this.metaOf(tx, d.table)?.inc === d.inc));
    const served: Array<[SecondaryIndex, Def]> = [];
    for (const d of current) {
      if (this.closed) continue;
      const ix = this.register(d.table, d.inc, d.field);
      ix.cursor = d.cursor;
      served.push([ix, d]);
    }
    await this.fill(served.map(([ix]) => ix));
    for (const [ix, d] of served) {
      if (ix.dropped) continue;
      if (d.ready) ix.ready = true;
      else this.startBuild(ix);
    }
  }

  /** Fills indexes from their engine keys; rows whose value was too long for a key are read. */
  private async fill(ixs: readonly SecondaryIndex[]): Promise<void> {
    if (ixs.length === 0) return;
    const byGroup = new Map<string, Fill>();
    for (const ix of ixs) byGroup.set(ix.group, { ix, vals: [], ids: [], long: [] });
    const keys = this.entryKeys ?? this.engine.keys(ENTRY_PREFIX);
    this.entryKeys = undefined;
    for (const k of keys) {
      const cut = entryCut(k);
      const slot = byGroup.get(k.slice(0, cut));
      if (slot === undefined) continue;
      const sep = entrySep(k);
      const id = Number(k.slice(sep + 1));
      const kind = k.charCodeAt(cut);
      if (kind === ENTRY_VALUE) {
        // A JSON number is also what Number() reads, to the same value; the rest is JSON.parse's.
        const c = k.charCodeAt(cut + 1);
        const text = k.slice(cut + 1, sep);
        slot.vals.push(c === 45 /* - */ || (c >= 48 && c <= 57) ? Number(text) : (JSON.parse(text) as Prim));
        slot.ids.push(id);
      } else if (kind === ENTRY_OTHER) slot.ix.other.add(id);
      else slot.long.push(id);
    }
    for (const { ix, vals, ids, long } of byGroup.values()) {
      ix.list = SortedList.fromSorted(cmpEntry, sortedEntries(vals, ids));
      if (long.length === 0) continue;
      const t = this.byTable.get(ix.table) as TableIndexes;
      await this.atomic.read((tx) => {
        const rows = tx.getMany(
          long.map((id) => rowKey(t.group, id)),
          this.rowDecoder,
        );
        for (const r of rows) if (r !== undefined) ix.add(r.id, r.obj);
      });
    }
  }

  tableIndexes(name: string, inc: number): TableIndexes | undefined {
    const t = this.byTable.get(name);
    return t !== undefined && t.inc === inc ? t : undefined;
  }

  private register(name: string, inc: number, field: string): SecondaryIndex {
    let t = this.byTable.get(name);
    if (t === undefined || t.inc !== inc) {
      if (t !== undefined) this.forget(t);
      t = new TableIndexes(name, inc, rowGroup(name, inc));
      this.byTable.set(name, t);
      this.byGroup.set(t.group, t);
    }
    const ix = new SecondaryIndex(name, inc, field);
    // One that it replaces (restore, over a create being rolled back) stops being maintained or built.
    const prev = t.byField.get(field);
    if (prev !== undefined) prev.dropped = true;
    t.byKey.set(ix.key, ix);
    t.byField.set(field, ix);
    return ix;
  }

  private forget(t: TableIndexes): void {
    for (const ix of t.byKey.values()) ix.dropped = true;
    if (this.byTable.get(t.name) === t) this.byTable.delete(t.name);
    this.byGroup.delete(t.group);
  }

  // ---- decisions (called inside atomically) ----------------------------------

  /** Declares an index; the build starts once the batch is in the engine. */
  create(tx: Tx, name: string, inc: number, field: string): void {
    const key = defKey(name, field);
    const old = tx.get(key, defDecoder);
    if (old !== undefined && old.inc === inc) throw conflict(`index on '${field}' of table '${name}' already exists`);
    // A definition of an earlier incarnation of the table is not an index of this one: replaced, with its entries.
    if (old !== undefined) tx.dropGroup(entryGroup(name, old.inc, field));
    const d: Def = { table: name, inc, field, cursor: 1, ready: false };
    tx.put(key, Buffer.from(JSON.stringify(d)), d, defDecoder, tx.expiry(tableKey(name)));
    tx.onCommit((written) => {
      const ix = this.register(name, inc, field);
      this.startBuild(ix);
      written.catch(() => this.unregister(ix));
    });
  }

  /**
   * What a drop deletes is taken from the stored definition, not from what is
   * served in memory: the entries go even of an index not served (a
   * definition left by an earlier incarnation of the table).
   */
  drop(tx: Tx, name: string, inc: number, field: string): void {
    const key = defKey(name, field);
    const d = tx.get(key, defDecoder);
    if (d === undefined) throw indexMissing(name, field);
    tx.del(key);
    tx.dropGroup(entryGroup(name, d.inc, field));
    const ix = this.tableIndexes(name, inc)?.byField.get(field);
    if (ix !== undefined) {
      tx.onCommit((written) => {
        this.unregister(ix);
        written.catch(() => this.restore([ix]));
      });
    }
  }

  /** Deletes the definitions and entries of a table being dropped, in the drop's batch: every stored one, served or not. */
  dropTable(tx: Tx, name: string, inc: number): void {
    for (const key of defKeysOf(tx, name)) {
      const d = tx.get(key, defDecoder);
      if (d === undefined) continue;
      tx.del(key);
      tx.dropGroup(entryGroup(name, d.inc, d.field));
    }
    const t = this.tableIndexes(name, inc);
    if (t === undefined) return;
    const ixs = [...t.byField.values()];
    tx.onCommit((written) => {
      this.forget(t);
      written.catch(() => this.restore(ixs));
    });
  }

  /**
   * Gives the definitions and entries of a table's indexes the table's new
   * expiry, in the batch that gives it to the table and its rows
   * (LogTables.expire). They carry the table's expiry so that they go with it:
   * left at the old one, an index would vanish at the next open once that had
   * passed (or, half built, be served without the entries written before the
   * change), and would outlive a table whose lifetime was shortened.
   */
  expireTable(tx: Tx, name: string, inc: number, exp: number): void {
    for (const key of defKeysOf(tx, name)) {
      const d = tx.get(key, defDecoder);
      // A definition of an earlier incarnation is not served, and goes when its index is created again.
      if (d === undefined || d.inc !== inc) continue;
      tx.put(key, Buffer.from(JSON.stringify(d)), d, defDecoder, exp);
      for (const k of tx.groupKeys(entryGroup(name, d.inc, d.field), '', Number.MAX_SAFE_INTEGER)) {
        tx.ops.push({ op: Op.Put, key: k, value: EMPTY, expiresAt: exp });
      }
    }
  }

  /**
   * After a drop whose write failed. The engine undid its batch and every
   * batch after it before this runs (GroupWriter.failFrom), so the
   * definitions and entries are back as they were: the same indexes are
   * served again here, synchronously, before any other decision can run. A
   * row change decided while they were missing would have written no entries
   * for them, and a drop decided meanwhile would have found nothing to undo
   * should it fail too. Each is refilled from its keys (the failed batch may
   * have held row changes already applied in memory), and is not used by
   * queries until that is done; an index that was still building resumes.
   */
  private restore(olds: readonly SecondaryIndex[]): void {
    if (this.closed) return;
    const back = olds.map((old) => {
      const ix = this.register(old.table, old.inc, old.field);
      // A build step undone with the drop has set these back already (its handler ran first).
      ix.cursor = old.cursor;
      ix.ready = old.ready;
      ix.loading = true;
      return ix;
    });
    const what = `serving the indexes of table '${olds[0].table}' again after a failed drop`;
    this.background(
      what,
      this.fill(back).then(() => {
        for (const ix of back) {
          ix.loading = false;
          if (!ix.ready && !ix.dropped) this.startBuild(ix);
        }
      }),
    );
  }

  private unregister(ix: SecondaryIndex): void {
    ix.dropped = true;
    const t = this.tableIndexes(ix.table, ix.inc);
    if (t === undefined || t.byField.get(ix.field) !== ix) return;
    t.byField.delete(ix.field);
    t.byKey.delete(ix.key);
    if (t.byField.size === 0) this.forget(t);
  }

  /** `[{"field","ready"}]` in field order, as JSON text. */
  describe(name: string, inc: number): string {
    const t = this.tableIndexes(name, inc);
    if (t === undefined) return '[]';
    const fields = [...t.byField.keys()].sort();
    return JSON.stringify(fields.map((f) => ({ field: f, ready: (t.byField.get(f) as SecondaryIndex).ready })));
  }

  // ---- maintenance ------------------------------------------------------------

  /** Adds the index entries that follow from the decision's row changes to its batch. */
  private readonly extendBatch = (tx: Tx): void => {
    if (this.byGroup.size === 0) return;
    const changes = tx.rowChanges;
    if (changes === undefined) return;
    for (const [group, rows] of changes) {
      const t = this.byGroup.get(group);
      if (t === undefined) continue;
      const exp = tx.expiry(tableKey(t.name));
      for (const [id, memo] of rows) {
        const old = tx.oldRow(group, id);
        for (const ix of t.byKey.values()) {
          if (!ix.covers(id)) continue;
          const was = old === undefined ? undefined : entryKey(ix.group, lookup(old, ix.path), id);
          const now = memo === null ? undefined : entryKey(ix.group, lookup(memo.obj, ix.path), id);
          if (was === now) continue;
          if (was !== undefined) tx.ops.push({ op: Op.Del, key: was, value: undefined, expiresAt: 0 });
          if (now !== undefined) tx.ops.push({ op: Op.Put, key: now, value: EMPTY, expiresAt: exp });
        }
      }
    }
  };

  /** Applies the same changes to the in-memory indexes once the batch is in the engine. */
  private readonly onCommit = (tx: Tx, written: Promise<void>): void => {
    if (this.byGroup.size === 0) return;
    const changes = tx.rowChanges;
    if (changes !== undefined) {
      let touched: SecondaryIndex[] | undefined;
      for (const [group, rows] of changes) {
        const t = this.byGroup.get(group);
        if (t === undefined) continue;
        for (const ix of t.byKey.values()) (touched ??= []).push(ix);
        for (const [id, memo] of rows) {
          const old = tx.oldRow(group, id);
          for (const ix of t.byKey.values()) {
            if (!ix.covers(id)) continue;
            if (old !== undefined) ix.remove(id, old);
            if (memo !== null) ix.add(id, memo.obj);
          }
        }
      }
      if (touched !== undefined) {
        const ixs = touched;
        // The engine undid the batch (entries included): reload these indexes from their keys.
        written.catch(() => this.reload(ixs));
      }
    }
  };

  private reload(ixs: readonly SecondaryIndex[]): void {
    const live = ixs.filter((ix) => !ix.dropped);
    for (const ix of live) {
      ix.loading = true;
      ix.list = new SortedList<IxEntry>(cmpEntry);
      ix.other = new Set();
    }
    this.fill(live).then(
      () => {
        for (const ix of live) ix.loading = false;
      },
      (err: unknown) => {
        // Entries missing from an index would make queries miss rows; while
        // loading stays set, queries scan the table instead (still correct),
        // until the next open loads the index from its keys.
        for (const ix of live)
          this.log(
            'warn',
            `index on '${ix.field}' of table '${ix.table}' is out of service until restart: reloading it failed: ${String((err as Error)?.message ?? err)}`,
          );
      },
    );
  }

  // ---- building -----------------------------------------------------------------

  private startBuild(ix: SecondaryIndex): void {
    this.background(`building the index on '${ix.field}' of table '${ix.table}'`, this.build(ix));
  }

  /**
   * Work settled() waits for. A failure is logged: an index that is not
   * ready or not served leaves queries to scan (still correct), and the next
   * open resumes a build from its cursor and serves every definition.
   */
  private background(what: string, work: Promise<void>): void {
    const p: Promise<void> = work
      .catch((err: unknown) => {
        if (!this.closed) this.log('warn', `${what} stopped: ${String((err as Error)?.message ?? err)}; it resumes at the next open`);
      })
      .finally(() => this.building.delete(p));
    this.building.add(p);
  }

  private async build(ix: SecondaryIndex): Promise<void> {
    let failures = 0;
    while (!ix.dropped && !this.closed) {
      let done: boolean;
      try {
        done = await this.atomic.atomically(undefined, (tx) => this.step(tx, ix));
        failures = 0;
      } catch (err) {
        // Busy (the data kept changing under a read), a failed write or closing: try again a little later.
        if (++failures > 100 || this.closed) throw err;
        await new Promise((r) => setTimeout(r, 10));
        continue;
      }
      if (done) return;
      await new Promise((r) => setImmediate(r));
    }
  }

  /**
   * One build step, a write decision: indexes the rows [cursor, cursor +
   * BUILD_STEP), writing their entries and the new cursor in one batch; true
   * when the index is ready or gone.
   */
  private step(tx: Tx, ix: SecondaryIndex): boolean {
    if (ix.dropped) return true;
    const m = this.metaOf(tx, ix.table);
    if (m === undefined || m.inc !== ix.inc) {
      ix.dropped = true;
      return true;
    }
    const end = Math.min(ix.cursor + BUILD_STEP, m.next);
    const t = this.byTable.get(ix.table) as TableIndexes;
    const keys: string[] = [];
    for (let id = ix.cursor; id < end; id++) keys.push(rowKey(t.group, id));
    const rows = tx.getMany(keys, this.rowDecoder);
    const exp = tx.expiry(tableKey(ix.table));
    for (const r of rows) {
      if (r === undefined) continue;
      const k = entryKey(ix.group, lookup(r.obj, ix.path), r.id);
      if (k !== undefined) tx.ops.push({ op: Op.Put, key: k, value: EMPTY, expiresAt: exp });
    }
    const ready = end >= m.next;
    const d: Def = { table: ix.table, inc: ix.inc, field: ix.field, cursor: end, ready };
    tx.put(defKey(ix.table, ix.field), Buffer.from(JSON.stringify(d)), d, defDecoder, exp);
    const from = ix.cursor;
    tx.onCommit((written) => {
      if (ix.dropped) return;
      for (const r of rows) if (r !== undefined) ix.add(r.id, r.obj);
      ix.cursor = end;
      if (ready) ix.ready = true;
      written.catch(() => {
        // The engine undid this step: index these rows again, starting from what the keys say.
        ix.cursor = from;
        ix.ready = false;
        this.reload([ix]);
      });
    });
    return ready;
  }

  /** Resolves when every build in progress has finished (tests, benchmarks). */
  async settled(): Promise<void> {
    while (this.building.size > 0) await Promise.all([...this.building]);
  }

  close(): void {
    this.closed = true;
  }
}
