/**
 * The change feed of the log store (docs/api.md, "Change feed"): the
 * engine's committed batches and expirations, turned from keys and bytes
 * into changes of tables, rows, records, variants and locks (keys.ts names
 * the layout). Live batches come from the engine's commit hook, which is set
 * only while someone listens, so writes pay nothing without watchers; older
 * ones are replayed from the log's segments.
 */
import type { Engine } from '../../engine/index.js';
import { Op } from '../../engine/index.js';
import type { Change, ChangeFeed, ChangeKind } from '../store.js';
import { variantValue } from '../variant.js';
import { opOfHeader } from './collections.js';
import { kindOfTop, listGroup, nameOfTop, rowOfKey } from './keys.js';

interface EntryLike {
  op: Op;
  key: string;
  value: Buffer | undefined;
}

class LogChange implements Change {
  private text: string | undefined = undefined;
  constructor(
    readonly type: 'put' | 'delete' | 'expire',
    readonly kind: ChangeKind,
    readonly name: string,
    readonly version: number,
    readonly tId: number | undefined,
    public id: string,
    /** Stored bytes of a put; decoded to JSON text only if a watcher asks for values. */
    private readonly raw: Buffer | undefined,
    readonly op?: string,
  ) {}

  get value(): string | undefined {
    if (this.raw === undefined) return undefined;
    if (this.text === undefined) {
      const s = this.raw.toString('utf8');
      // A variant is stored as a type letter and its JSON (docs/format.md, key layout);
      // sent as GET sends it, so a double keeps its fraction.
      this.text = this.kind === 'variant' ? variantValue(s) : s;
    }
    return this.text;
  }
}

/** kind, name and t_id of a key; undefined for keys that are no object of their own. */
function objectOf(key: string): [ChangeKind, string, number | undefined] | undefined {
  const kind = kindOfTop(key);
  if (kind !== undefined) return [kind, nameOfTop(key), undefined];
  const row = rowOfKey(key);
  return row === undefined ? undefined : ['table', row[0], row[1]];
}

/** The incarnation at the start of a table's metadata value (`<inc> <next>`, tables.ts). */
function incarnationOf(v: Buffer | undefined): number | undefined {
  if (v === undefined) return undefined;
  const sp = v.indexOf(0x20);
  const inc = Number(v.toString('latin1', 0, sp < 0 ? v.length : sp));
  return Number.isSafeInteger(inc) && inc > 0 ? inc : undefined;
}

/**
 * The changes of one batch, in batch order. A table's metadata entry is a
 * change only when it creates the table (its incarnation is this batch's
 * number, tables.ts); otherwise it is the t_id counter or a new expiry,
 * whose rows report themselves. DropGroup is reported by the table's delete.
 * Lock values hold the lease token and are never published.
 */
export function changesOf(seq: number, entries: readonly EntryLike[]): LogChange[] {
  const out: LogChange[] = [];
  for (let i = 0; i < entries.length; i++) {
    const e = entries[i];
    if (e.op === Op.DropGroup) continue;
    const o = objectOf(e.key);
    if (o === undefined) continue;
    const [kind, name, tId] = o;
    const put = e.op === Op.Put;
    if (kind === 'table' && tId === undefined && put) {
      if (incarnationOf(e.value) !== seq) continue;
    }
    if (kind === 'list') {
      out.push(put ? listChange(seq, name, e.value as Buffer, entries) : new LogChange('delete', kind, name, seq, undefined, '', undefined));
      continue;
    }
    if (put && (kind === 'set' || kind === 'zset')) {
      // A collection's header: an element operation carries its record (collections.ts); a whole-object write has no value.
      const rec = opOfHeader(e.value as Buffer);
      out.push(new LogChange('put', kind, name, seq, undefined, '', rec === undefined ? undefined : Buffer.from(rec.json), rec?.op));
      continue;
    }
    const raw = put && kind !== 'lock' && !(kind === 'table' && tId === undefined) ? e.value : undefined;
    out.push(new LogChange(put ? 'put' : 'delete', kind, name, seq, tId, '', raw));
  }
  for (let i = 0; i < out.length; i++) out[i].id = i === out.length - 1 ? String(seq) : `${seq}:${i}`;
  return out;
}

/**
 * A list header's put (lists.ts): its second line names the operation and
 * holds its arguments and result; `put` (a whole-list write) is published
 * with the items the same batch wrote into the new incarnation's group; an
 * empty line (a new lifetime) is a put with no value.
 */
function listChange(seq: number, name: string, v: Buffer, entries: readonly EntryLike[]): LogChange {
  const nl = v.indexOf(0x0a);
  if (nl < 0 || nl === v.length - 1) return new LogChange('put', 'list', name, seq, undefined, '', undefined);
  const sp = v.indexOf(0x20, nl);
  if (sp < 0) {
    const group = listGroup(name, Number(v.toString('latin1', 0, v.indexOf(0x20))));
    const items: Buffer[] = [Buffer.from('[')];
    for (const e of entries) {
      if (e.op !== Op.Put || !e.key.startsWith(group)) continue;
      if (items.length > 1) items.push(Buffer.from(','));
      items.push(e.value as Buffer);
    }
    items.push(Buffer.from(']'));
    return new LogChange('put', 'list', name, seq, undefined, '', Buffer.concat(items));
  }
  return new LogChange('put', 'list', name, seq, undefined, '', v.subarray(sp + 1), v.toString('latin1', nl + 1, sp));
}

export class LogChanges implements ChangeFeed {
  private readonly listeners = new Set<(batch: readonly Change[]) => void>();

  constructor(private readonly engine: Engine) {}

  get lastVersion(): number {
    return this.engine.committedSeq;
  }

  subscribe(fn: (batch: readonly Change[]) => void): () => void {
    this.listeners.add(fn);
    if (this.listeners.size === 1) {
      this.engine.onCommit = (seq, ops) => {
        const batch = changesOf(seq, ops);
        if (batch.length > 0) this.publish(batch);
      };
      this.engine.onExpire = (key, seq, value) => {
        const o = objectOf(key);
        if (o === undefined) return;
        const [kind, name, tId] = o;
        // Rows carry their table's expiry and go with it: the table's own
        // event reports them, as a drop does (docs/api.md, "Change feed").
        if (tId !== undefined) return;
        // A table's version is its incarnation (the version of its put), not
        // that of the t_id counter's last write; the shared store sends the same.
        const version = kind === 'table' ? (incarnationOf(value()) ?? seq) : seq;
        this.publish([new LogChange('expire', kind, name, version, undefined, '', undefined)]);
      };
    }
    return () => {
      this.listeners.delete(fn);
      if (this.listeners.size === 0) {
        this.engine.onCommit = undefined;
        this.engine.onExpire = undefined;
      }
    };
  }

  private publish(batch: readonly Change[]): void {
    for (const fn of this.listeners) fn(batch);
  }

  replay(after: number, upto: number, fn: (batch: readonly Change[]) => void): Promise<boolean> {
    return this.engine.replay(after, upto, (seq, entries, buf) => {
      const es: EntryLike[] = entries.map((e) => ({
        op: e.op,
        key: e.key,
        value: e.op === Op.Put ? buf.subarray(e.valueOffset, e.valueOffset + e.valueLength) : undefined,
      }));
      const batch = changesOf(seq, es);
      if (batch.length > 0) fn(batch);
    });
  }
}
