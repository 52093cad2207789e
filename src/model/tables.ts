/**
 * Table namespace. A table is one metadata entry (its incarnation and next
 * t_id) plus one engine entry per row, in the group of that incarnation.
 * Row inserts write the row and the 2-number metadata, never the table;
 * patch and row-delete are one batch each, so they are atomic across a crash;
 * drop is one batch that deletes the metadata and the whole row group.
 * Rows carry the table's expiry, so an expiring table takes its rows with it.
 */
import { type Decoder, type Engine, MISS, Op, type WriteOp } from '../engine/index.js';
import { conflict, notFound } from './errors.js';
import { mergeFields } from './json.js';
import { rowGroup, rowIdOf, rowKey, tableKey } from './keys.js';
import { expiryOf } from './validate.js';
import { compileWheres, matches, type Row } from './wheres.js';

interface TableMeta {
  inc: number;
  next: number;
}

interface RowMemo {
  id: number;
  obj: Row;
  json: string;
}

const metaDecoder: Decoder<TableMeta> = (buf) => {
  const s = buf.toString('latin1');
  const sp = s.indexOf(' ');
  return { inc: Number(s.slice(0, sp)), next: Number(s.slice(sp + 1)) };
};
const encodeMeta = (m: TableMeta): Buffer => Buffer.from(`${m.inc} ${m.next}`, 'latin1');

const rowDecoder: Decoder<RowMemo> = (buf, key) => {
  const json = buf.toString('utf8');
  return { id: rowIdOf(key), obj: JSON.parse(json) as Row, json };
};

const missing = (name: string) => notFound(`table '${name}' does not exist`);

export class Tables {
  constructor(private readonly engine: Engine, private readonly now: () => number) {}

  create(name: string, ttl: number): Promise<void> {
    const key = tableKey(name);
    if (this.engine.has(key)) return Promise.reject(conflict(`table '${name}' already exists`));
    const meta: TableMeta = { inc: this.engine.upcomingSeq, next: 1 };
    return this.engine.write([{
      op: Op.Put, key, value: encodeMeta(meta), expiresAt: expiryOf(ttl, this.now()), memo: meta, decoder: metaDecoder,
    }]);
  }

  /** The table's metadata, read from disk first if needed; undefined when the table does not exist. */
  private meta(name: string): TableMeta | undefined | Promise<unknown> {
    const m = this.engine.peek(tableKey(name), metaDecoder);
    return m === MISS ? this.engine.read(tableKey(name), metaDecoder) : m;
  }

  /** Rows of an incarnation in t_id order, or a promise to wait on before asking again. */
  private rows(name: string, inc: number): RowMemo[] | Promise<unknown> {
    return this.engine.scan(rowGroup(name, inc), rowDecoder);
  }

  async insert(name: string, row: Row): Promise<number> {
    const key = tableKey(name);
    let m = this.meta(name);
    while (m instanceof Promise) m = (await m, this.meta(name));
    if (m === undefined) throw missing(name);
    // From here to write() nothing awaits: the t_id is ours alone.
    const exp = this.engine.expiresAt(key) ?? 0;
    const id = m.next;
    const meta: TableMeta = { inc: m.inc, next: id + 1 };
    const json = JSON.stringify(row);
    const memo: RowMemo = { id, obj: row, json };
    await this.engine.write([
      { op: Op.Put, key, value: encodeMeta(meta), expiresAt: exp, memo: meta, decoder: metaDecoder },
      { op: Op.Put, key: rowKey(rowGroup(name, m.inc), id), value: Buffer.from(json), expiresAt: exp, memo, decoder: rowDecoder },
    ]);
    return id;
  }

  /** Every row as JSON text: an object from t_id to row. */
  async all(name: string): Promise<string> {
    const rows = await this.snapshot(name);
    let out = '{';
    for (let i = 0; i < rows.length; i++) {
      if (i > 0) out += ',';
      out += `"${rows[i].id}":${rows[i].json}`;
    }
    return out + '}';
  }

  /** Matching rows as JSON text: an array in t_id order. */
  async query(name: string, wheres: Record<string, unknown>): Promise<string> {
    const matcher = compileWheres(wheres);
    const rows = await this.snapshot(name);
    let out = '[';
    let first = true;
    for (let i = 0; i < rows.length; i++) {
      if (!matches(rows[i].obj, matcher)) continue;
      if (!first) out += ',';
      out += rows[i].json;
      first = false;
    }
    return out + ']';
  }

  private async snapshot(name: string): Promise<RowMemo[]> {
    for (;;) {
      const m = this.meta(name);
      if (m instanceof Promise) {
        await m;
        continue;
      }
      if (m === undefined) throw missing(name);
      const rows = this.rows(name, m.inc);
      if (rows instanceof Promise) {
        await rows;
        continue;
      }
      return rows;
    }
  }

  /**
   * Runs `fn` on the current rows with no await between reading them and
   * writing its batch, so the batch is computed from exactly the state it
   * replaces (DESIGN.md invariant 4).
   */
  private async mutate(name: string, wheres: Record<string, unknown>, sets: Record<string, unknown> | undefined): Promise<void> {
    const matcher = compileWheres(wheres);
    for (;;) {
      const m = this.meta(name);
      if (m instanceof Promise) {
        await m;
        continue;
      }
      if (m === undefined) throw missing(name);
      const rows = this.rows(name, m.inc);
      if (rows instanceof Promise) {
        await rows;
        continue;
      }
      const exp = this.engine.expiresAt(tableKey(name)) ?? 0;
      const group = rowGroup(name, m.inc);
      const ops: WriteOp[] = [];
      for (const r of rows) {
        if (!matches(r.obj, matcher)) continue;
        const key = rowKey(group, r.id);
        if (sets === undefined) {
          ops.push({ op: Op.Del, key, value: undefined, expiresAt: 0 });
        } else {
          const obj = mergeFields(r.obj, sets);
          const json = JSON.stringify(obj);
          ops.push({ op: Op.Put, key, value: Buffer.from(json), expiresAt: exp, memo: { id: r.id, obj, json }, decoder: rowDecoder });
        }
      }
      return this.engine.write(ops);
    }
  }

  patch(name: string, wheres: Record<string, unknown>, sets: Record<string, unknown>): Promise<void> {
    if (Object.keys(sets).length === 0) {
      // A no-op patch still checks its wheres and answers 404 for a missing table.
      compileWheres(wheres);
      return this.snapshot(name).then(() => undefined);
    }
    return this.mutate(name, wheres, sets);
  }

  deleteRows(name: string, wheres: Record<string, unknown>): Promise<void> {
    return this.mutate(name, wheres, undefined);
  }

  async drop(name: string): Promise<void> {
    for (;;) {
      const m = this.meta(name);
      if (m instanceof Promise) {
        await m;
        continue;
      }
      if (m === undefined) throw missing(name);
      return this.engine.write([
        { op: Op.Del, key: tableKey(name), value: undefined, expiresAt: 0 },
        { op: Op.DropGroup, key: rowGroup(name, m.inc), value: undefined, expiresAt: 0 },
      ]);
    }
  }
}
