/**
 * Transactions on the log (docs/api.md "Transactions"): every check on the
 * state before the first mutation, then every mutation in order on one Tx,
 * all in one decision and so one batch in the log: all or nothing, also
 * across a crash (docs/engine.md, atomic batches). What a check means and
 * what a mutation answers is shared with the other store (../txn.ts); this
 * file reads the facts from the Tx and writes through the log's primitives.
 */
import { listMissing } from '../lists.js';
import type { Check, Transaction } from '../store.js';
import { applyMutation, checkFailed, type CheckFacts, checkFailure, failedAt, results, type TxnWriter } from '../txn.js';
import { compileWheres } from '../wheres.js';
import type { Atomic, Tx } from './atomic.js';
import { deleteRecord, putRecord, recordVersion } from './records.js';
import { countRows, insertRow, removeRowById, removeRows, replaceRow, tableExists, updateRowById, updateRows } from './tables.js';
import { addVariant, currentVariant, setVariant } from './variants.js';
import { listHead, popItems, pushItems } from './lists.js';
import { readHeader } from './collections.js';
import { headerKey, listKey, variantKey } from './keys.js';
import { setAdd, setHas, setRemove } from './sets.js';
import { type ZsetIndexes, zsetAdd, zsetIncr, zsetRemove, zsetScore } from './zsets.js';

/** What check `c` reads, from the Tx (so from the state before the first mutation). */
function factsOf(tx: Tx, c: Check): CheckFacts {
  const f = factsWithoutVersion(tx, c);
  if (c.kind !== 'record' && c.kind !== 'table' && c.version !== undefined && f.present) f.version = tx.version(objectKey(c.kind, c.name));
  return f;
}

/** The key whose version is the object's (what GET reports as its ETag). */
const objectKey = (kind: 'variant' | 'list' | 'set' | 'zset', name: string): string =>
  kind === 'variant' ? variantKey(name) : kind === 'list' ? listKey(name) : headerKey(kind, name);

function factsWithoutVersion(tx: Tx, c: Check): CheckFacts {
  switch (c.kind) {
    case 'variant': {
      const cur = currentVariant(tx, c.name);
      return { present: cur !== undefined, value: cur?.v };
    }
    case 'record': {
      const version = recordVersion(tx, c.name);
      return { present: version !== undefined, version };
    }
    case 'list': {
      const h = listHead(tx, c.name);
      return { present: h !== undefined, size: h === undefined ? undefined : h.tail - h.head };
    }
    case 'table': {
      const present = tableExists(tx, c.name);
      return { present, size: present && c.where !== undefined ? countRows(tx, c.name, compileWheres(c.where)) : undefined };
    }
    case 'set':
    case 'zset': {
      const h = readHeader(tx, c.kind, c.name);
      if (h === undefined) return { present: false };
      const f: CheckFacts = { present: true, size: h.count };
      if (c.kind === 'set') {
        if (c.contains !== undefined) f.member = setHas(tx, c.name, c.contains);
      } else if (c.hasScore && c.member !== undefined) {
        f.member = zsetScore(tx, c.name, c.member);
      }
      return f;
    }
  }
}

/** The log's primitives, answering each mutation's entry of `results`. */
function writer(tx: Tx, zix: ZsetIndexes): TxnWriter<string> {
  return {
    insertRow: (t, values) => results.inserted(insertRow(tx, t, values)),
    updateRows: (t, where, values) => results.matched(updateRows(tx, t, compileWheres(where), values)),
    removeRows: (t, where) => results.matched(removeRows(tx, t, compileWheres(where))),
    updateRow: (t, id, values) => results.matched(updateRowById(tx, t, id, values)),
    removeRow: (t, id) => results.matched(removeRowById(tx, t, id)),
    replaceRow: (t, id, values) => {
      replaceRow(tx, t, id, values);
      return results.none;
    },
    addVariant: (name, delta) => addVariant(tx, name, delta).data,
    setVariant: (name, value, ttl, retype) => {
      setVariant(tx, name, value, ttl, undefined, retype);
      return results.none;
    },
    putRecord: (id, values, ttl) => {
      putRecord(tx, id, values, ttl);
      return results.none;
    },
    deleteRecord: (id) => {
      deleteRecord(tx, id);
      return results.none;
    },
    push: (list, values, side) =>
      results.length(
        pushItems(
          tx,
          list,
          values.map((v) => JSON.stringify(v)),
          side,
          true,
        ),
      ),
    pop: (list, side, count) => {
      const items = popItems(tx, list, side, count);
      if (items === undefined) throw listMissing(list);
      return results.items(items);
    },
    setAdd: (name, members) => results.added(...setAdd(tx, name, members, true)),
    setRemove: (name, members) => results.removed(...setRemove(tx, name, members)),
    zsetAdd: (name, members, mode) => results.addedOrUpdated(...zsetAdd(zix, tx, name, members, mode, true)),
    zsetIncr: (name, member, delta) => results.score(zsetIncr(zix, tx, name, member, delta, true)),
    zsetRemove: (name, members) => results.removed(...zsetRemove(zix, tx, name, members)),
  };
}

export function transact(atomic: Atomic, txn: Transaction, zix: ZsetIndexes): Promise<string> {
  return atomic.atomically(undefined, (tx) => {
    for (let i = 0; i < txn.checks.length; i++) {
      let why: string | undefined;
      try {
        why = checkFailure(txn.checks[i], factsOf(tx, txn.checks[i]));
      } catch (err) {
        throw failedAt(err, `transaction check ${i}`);
      }
      if (why !== undefined) throw checkFailed(i, why);
    }
    const w = writer(tx, zix);
    let out = '{"results":[';
    for (let i = 0; i < txn.mutations.length; i++) {
      let r: string;
      try {
        r = applyMutation(w, txn.mutations[i]);
      } catch (err) {
        throw failedAt(err, `mutation ${i}`);
      }
      out += i === 0 ? r : ',' + r;
    }
    return out + ']}';
  });
}
