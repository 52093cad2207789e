/**
 * The table rows one decision has written, kept beside its ops so that a
 * later step of the same decision sees them (a transaction's INSERT then
 * UPDATE of the same row) and so that index upkeep knows each changed row's
 * stored version (indexes.ts). A Tx (atomic.ts) queues the writes and asks
 * this memo what its own reads must see; keys other than rows are the Tx's.
 */

/** One row: the decoded object and its JSON text (what answers are built from). */
export interface RowMemo {
  id: number;
  obj: Record<string, unknown>;
  json: string;
}

export class RowWrites {
  /** Rows written, by group and t_id; null = removed. A dropped group is an empty map. */
  readonly changes = new Map<string, Map<number, RowMemo | null>>();
  /** The stored version of each row changed (absent for rows inserted), for index upkeep. */
  private olds: Map<string, Map<number, Record<string, unknown>>> | undefined;

  /** `old` is the row as stored before this decision (absent for an insert). */
  put(group: string, memo: RowMemo, old: Record<string, unknown> | undefined): void {
    const slots = this.slots(group);
    if (old !== undefined && !slots.has(memo.id)) this.rememberOld(group, memo.id, old);
    slots.set(memo.id, memo);
  }

  del(group: string, id: number, old: Record<string, unknown>): void {
    const slots = this.slots(group);
    if (!slots.has(id)) this.rememberOld(group, id, old);
    slots.set(id, null);
  }

  /** Every row of the group is gone: what it wrote to the group before goes with them. */
  dropGroup(group: string): void {
    this.changes.set(group, new Map());
  }

  /** A row as written here (null: removed), or undefined when this decision has not written it. */
  slot(group: string, id: number): RowMemo | null | undefined {
    return this.changes.get(group)?.get(id);
  }

  /** The stored version of a row changed here; undefined when it was inserted here. */
  oldRow(group: string, id: number): Record<string, unknown> | undefined {
    return this.olds?.get(group)?.get(id);
  }

  /** `base`, the group's stored rows in t_id order, with this decision's writes to the group applied. */
  over(group: string, base: RowMemo[]): RowMemo[] {
    const over = this.changes.get(group);
    if (over === undefined || over.size === 0) return base;
    const out: RowMemo[] = [];
    for (const r of base) {
      const o = over.get(r.id);
      if (o === undefined) out.push(r);
      else if (o !== null) out.push(o);
    }
    // Rows this decision inserted have ids above every stored one; Map order is insertion (id) order.
    const top = base.length === 0 ? 0 : base[base.length - 1].id;
    for (const [id, o] of over) if (id > top && o !== null) out.push(o);
    return out;
  }

  private rememberOld(group: string, id: number, old: Record<string, unknown>): void {
    const os = (this.olds ??= new Map());
    let m = os.get(group);
    if (m === undefined) os.set(group, (m = new Map()));
    m.set(id, old);
  }

  private slots(group: string): Map<number, RowMemo | null> {
    let m = this.changes.get(group);
    if (m === undefined) this.changes.set(group, (m = new Map()));
    return m;
  }
}
