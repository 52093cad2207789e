/**
 * MULTI / EXEC / DISCARD / WATCH / UNWATCH (docs/redis.md, "Transactions").
 * Commands after MULTI are checked and queued; EXEC first compares every
 * watched key's type and version with what WATCH saw (any change by anyone,
 * on any node, over either protocol: EXEC answers the null array and runs
 * nothing), then runs the queue in order and answers every reply.
 */
import type { Store, VersionOut } from '../store/store.js';
import type { Call, Command } from './command.js';
import { StoreError } from '../store/errors.js';
import { isMissing, keyInfo } from './keyspace.js';
import { compilable, plan, results, watchPins } from './multi-txn.js';
import { ErrorReply, Issued, NULL_ARRAY, OK, QUEUED, type Reply } from './resp.js';

interface Queued {
  cmd: Command;
  args: string[];
}

/** A key's type and version, as WATCH records it ('none' when absent). */
async function fingerprint(store: Store, key: string): Promise<string> {
  const info = await keyInfo(store, key);
  if (info === undefined) return 'none';
  const out: VersionOut = { version: 0 };
  try {
    switch (info.type) {
      case 'string':
        await store.variants.get(key, out);
        break;
      case 'hash':
        await store.records.get(key, out);
        break;
      case 'list':
        await store.lists.range(key, 0, 0, out);
        break;
      case 'set':
        await store.sets.get(key, 1, undefined, out);
        break;
      case 'zset':
        await store.zsets.range(key, { by: 'rank', start: 0, stop: 0, rev: false }, out);
        break;
    }
  } catch (err) {
    if (!isMissing(err)) throw err;
    return 'none';
  }
  return `${info.type}:${out.version}`;
}

async function changed(store: Store, watched: ReadonlyArray<[string, string]>): Promise<boolean> {
  for (const [key, seen] of watched) if ((await fingerprint(store, key)) !== seen) return true;
  return false;
}

/**
 * The queue as one Store transaction (multi-txn.ts), retried when what it
 * was planned on changed before it committed; the watched keys' checks come
 * first, so their failure is told apart (the null array). Undefined when the
 * queue cannot be one transaction after all.
 */
async function atomically(store: Store, words: ReadonlyArray<readonly string[]>, watched: ReadonlyArray<[string, string]>): Promise<Reply | undefined> {
  for (let attempt = 0; attempt < 8; attempt++) {
    const watchChecks = await watchPins(store, watched);
    const p = await plan(store, words);
    if (p === undefined || watchChecks === undefined) return undefined;
    try {
      const r = await store.transact({ checks: [...watchChecks, ...p.checks], mutations: p.mutations, serializable: true });
      return p.reply(results(r));
    } catch (err) {
      if (!(err instanceof StoreError)) throw err;
      const m = /^transaction check (\d+) failed/.exec(err.message);
      if (m === null) return new ErrorReply(`EXECABORT Transaction discarded: ${err.message} (Pithos runs MULTI as one transaction: all or nothing)`);
      if (Number(m[1]) < watchChecks.length) return NULL_ARRAY;
    }
  }
  return new ErrorReply('EXECABORT Transaction discarded: its keys kept changing under concurrent writes; try again');
}

export class Multi {
  /** Commands that act at once inside MULTI instead of being queued. */
  static readonly RUNS_NOW = new Set(['exec', 'discard', 'multi', 'watch', 'unwatch', 'quit', 'reset']);

  active = false;
  /** A command was refused while queueing: EXEC answers EXECABORT. */
  dirty = false;
  private queued: Queued[] = [];
  private watched = new Map<string, string>();

  clear(): void {
    this.active = false;
    this.dirty = false;
    this.queued = [];
    this.watched.clear();
  }

  queue(cmd: Command, args: string[]): Reply {
    this.queued.push({ cmd, args });
    return QUEUED;
  }

  private async exec(c: Call): Promise<Reply> {
    if (!this.active) return new ErrorReply('ERR EXEC without MULTI');
    const queued = this.queued;
    const dirty = this.dirty;
    const watched = [...this.watched];
    this.clear();
    if (dirty) return new ErrorReply('EXECABORT Transaction discarded because of previous errors.');
    const words = queued.map((q) => q.args);
    if (compilable(words)) {
      const r = await atomically(c.store, words, watched);
      if (r !== undefined) return r;
    }
    if (await changed(c.store, watched)) return NULL_ARRAY;
    const out: Reply[] = [];
    for (const q of queued) {
      try {
        const r = q.cmd.run({ ...c, args: q.args, nonBlocking: true });
        out.push((await (r instanceof Issued ? r.reply : r)) ?? null);
      } catch (err) {
        out.push(err instanceof ErrorReply ? err : new ErrorReply(`ERR ${(err as Error).message}`));
      }
    }
    return out;
  }

  private async watch(c: Call): Promise<Reply> {
    if (this.active) return new ErrorReply('ERR WATCH inside MULTI is not allowed');
    for (const key of c.args.slice(1)) if (!this.watched.has(key)) this.watched.set(key, await fingerprint(c.store, key));
    return OK;
  }

  /** The declarations, over the connection's Multi that `of` finds. */
  static commands(of: (c: Call) => Multi): Command[] {
    return [
      {
        name: 'multi',
        arity: 1,
        flags: ['noscript', 'loading', 'stale', 'fast'],
        keys: [0, 0, 0],
        summary: 'start queueing',
        run: (c) => {
          const m = of(c);
          if (m.active) return new ErrorReply('ERR MULTI calls can not be nested');
          m.active = true;
          return OK;
        },
      },
      {
        name: 'exec',
        arity: 1,
        flags: ['noscript', 'loading', 'stale'],
        keys: [0, 0, 0],
        summary: 'run the queue (null array when a watched key changed)',
        run: (c) => of(c).exec(c),
      },
      {
        name: 'discard',
        arity: 1,
        flags: ['noscript', 'loading', 'stale', 'fast'],
        keys: [0, 0, 0],
        summary: 'drop the queue',
        run: (c) => {
          const m = of(c);
          if (!m.active) return new ErrorReply('ERR DISCARD without MULTI');
          m.clear();
          return OK;
        },
      },
      {
        name: 'watch',
        arity: -2,
        flags: ['noscript', 'loading', 'stale', 'fast'],
        keys: [1, -1, 1],
        summary: 'abort EXEC if these keys change',
        run: (c) => of(c).watch(c),
      },
      {
        name: 'unwatch',
        arity: 1,
        flags: ['noscript', 'loading', 'stale', 'fast'],
        keys: [0, 0, 0],
        summary: 'forget watched keys',
        run: (c) => {
          of(c).watched.clear();
          return OK;
        },
      },
    ];
  }
}
