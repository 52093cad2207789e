/**
 * Whether this node has a writable primary, as a cheap cached answer for
 * `/readyz`, `/health` and `/metrics` (docs/scaling.md, "Running highly
 * available").
 *
 * One connection of its own (outside the pool, so a busy pool never makes a
 * healthy database look down) asks the server its role every second (twice
 * a second while down), within a deadline. Ready means: a writable primary
 * answered within the last READY_WINDOW_MS and no request has seen the
 * database fail since. The store is declared back only by this check,
 * never by a read that a standby could have answered, so "reachable again"
 * in the log is true when it is said.
 *
 * The primary's identity is its address, port and postmaster start time: a
 * different one after an outage is a failover (or a restart), counted, and
 * the pool's older connections are then discarded (Db's generations).
 */
import type pg from 'pg';
import type { StoreAvailability } from '../store.js';
import { type Locator, ENDPOINT, ROLE_SQL, endpointText, roleOf, roleText, type Endpoint } from './hosts.js';

const BEAT_MS = 1000;
const BEAT_DOWN_MS = 500;
/** How long one confirmation keeps the node ready. */
export const READY_WINDOW_MS = 3000;

type Client = pg.Client & { [ENDPOINT]?: Endpoint; connection: { stream: { destroy(err?: Error): void } } };

const IDENTITY_SQL = `${ROLE_SQL}, coalesce(host(inet_server_addr()), 'local') AS addr, inet_server_port() AS port,
  pg_postmaster_start_time()::text AS started`;

export class Primary {
  private state: 'starting' | 'up' | 'down' = 'starting';
  private downSince = 0;
  private lastOk = 0;
  private identity: string | undefined;
  private where: string | undefined;
  private failovers = 0;
  unavailable = 0;
  private client: Client | undefined;
  private timer: NodeJS.Timeout | undefined;
  private closed = false;
  private lastReason = '';
  private waiters: Array<() => void> = [];
  /** Start-up's refusal: a database that answers but will never let this node in. */
  private refused: Array<(err: Error) => void> = [];

  constructor(
    private readonly makeClient: () => Client,
    private readonly loc: Locator,
    private readonly deadlineMs: number,
    private readonly log: (level: 'info' | 'warn' | 'error', msg: string) => void,
    /** Called when a different primary is confirmed: older pooled connections must go. */
    private readonly changed: () => void,
  ) {}

  start(): void {
    this.beat();
  }

  /** Resolves once a writable primary has answered (start-up waits on it). */
  whenUp(): Promise<void> {
    if (this.state === 'up') return Promise.resolve();
    return new Promise((resolve, reject) => {
      this.waiters.push(resolve);
      this.refused.push(reject);
    });
  }

  /** Why the last check failed ('' when it did not). */
  get reason(): string {
    return this.lastReason;
  }

  get ready(): boolean {
    return this.state === 'up' && Date.now() - this.lastOk < READY_WINDOW_MS;
  }

  availability(): StoreAvailability {
    return {
      ready: this.ready,
      state: this.state,
      primary: this.where,
      downForMs: this.state === 'down' ? Date.now() - this.downSince : 0,
      failovers: this.failovers,
      unavailable: this.unavailable,
    };
  }

  /**
   * An operation begun at `since` saw the database fail (connection lost,
   * read-only, shutdown): not ready until the check says otherwise. Evidence
   * older than the last confirmation (a connect begun before the primary
   * came back) does not count. Whether it counted.
   */
  lost(why: string, since: number): boolean {
    if (since < this.lastOk) return false;
    if (this.state !== 'up') return true;
    const was = this.state;
    this.state = 'down';
    this.downSince = Date.now();
    if (was === 'up') this.log('warn', `database unavailable: ${why}; answering 503 until a writable primary answers`);
    // Check again soon instead of at the next regular beat.
    this.reschedule(BEAT_DOWN_MS / 5);
    return true;
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
    this.drop();
    for (const w of this.waiters) w();
    this.waiters = [];
    this.refused = [];
  }

  private reschedule(ms: number): void {
    if (this.closed) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.beat(), ms);
    // While start-up waits for a primary, this timer is all that keeps the process going.
    if (this.state !== 'starting') this.timer.unref();
  }

  private drop(): void {
    const c = this.client;
    this.client = undefined;
    if (c === undefined) return;
    c.removeAllListeners('error');
    c.on('error', dropped);
    c.connection.stream.destroy();
  }

  private beat(): void {
    if (this.closed) return;
    void this.check().then(() => this.reschedule(this.state === 'up' ? BEAT_MS : BEAT_DOWN_MS));
  }

  private async check(): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${this.deadlineMs} ms`)), this.deadlineMs);
    });
    let endpoint: Endpoint | undefined;
    try {
      let c = this.client;
      if (c === undefined) {
        c = this.makeClient();
        c.on('error', reported);
        this.client = c;
        const connecting = c.connect();
        connecting.catch(raced);
        await Promise.race([connecting, deadline]);
      }
      endpoint = c[ENDPOINT];
      const q = c.query(IDENTITY_SQL);
      q.catch(raced);
      const row = (await Promise.race([q, deadline])).rows[0] as Record<string, unknown>;
      const role = roleOf(row);
      if (role.recovery || role.readOnly) throw new Error(`${endpoint === undefined ? 'the database' : endpointText(endpoint)} is ${roleText(role)}`);
      this.confirmed(`${String(row.addr)}:${String(row.port)}`, `${String(row.addr)}:${String(row.port)}@${String(row.started)}`);
    } catch (err) {
      this.drop();
      // The next connection tries the next host of the list (the preferred one is stuck or not a primary).
      this.loc.failed(endpoint);
      if (this.state === 'starting' && isMisconfigured(err)) return this.refuse(err as Error);
      this.failed((err as Error)?.message ?? String(err));
    } finally {
      clearTimeout(timer);
    }
  }

  private confirmed(where: string, identity: string): void {
    const was = this.state;
    this.lastOk = Date.now();
    this.lastReason = '';
    const other = this.identity !== undefined && identity !== this.identity;
    this.identity = identity;
    this.where = where;
    if (other) {
      this.failovers++;
      this.changed();
    }
    if (was === 'up') return;
    this.state = 'up';
    if (was === 'down') {
      this.log(
        'info',
        `database reachable again after ${Date.now() - this.downSince} ms: writable primary ${where}${other ? ' (a different server or a restart: failover)' : ''}`,
      );
    } else {
      this.log('info', `shared store: writable primary ${where}`);
    }
    for (const w of this.waiters) w();
    this.waiters = [];
    this.refused = [];
  }

  /**
   * A server that answers that the database does not exist, or that this
   * role may not log in, will not change its mind by waiting: start-up fails
   * with its message (main.ts then undoes what the start created), where an
   * unreachable server or a standby is waited for.
   */
  private refuse(err: Error): void {
    const refused = this.refused;
    this.waiters = [];
    this.refused = [];
    this.closed = true;
    clearTimeout(this.timer);
    for (const r of refused) r(new Error(`shared store: ${err.message}`));
  }

  private failed(why: string): void {
    const changed = why !== this.lastReason;
    this.lastReason = why;
    if (this.state === 'starting') {
      if (changed) this.log('warn', `shared store: waiting for a writable primary: ${why} (checking every ${BEAT_DOWN_MS} ms)`);
      return;
    }
    this.lost(why, Date.now());
  }
}

function raced(): void {
  // A promise raced against the deadline: the race reports its failure; this only keeps a
  // failure that comes after the deadline from going unhandled.
}

function reported(): void {
  // An 'error' event on the check's own connection: the connect or query of the check that is
  // running (or of the next one, on the broken connection) fails with it, and check() reports that.
}

function dropped(): void {
  // An 'error' event on a check connection already dropped (its socket destroyed): the failure
  // that dropped it was reported by check().
}

/** SQLSTATEs of a database that refuses this node for good: no such database (3D000), bad login (28000, 28P01). */
function isMisconfigured(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === '3D000' || code === '28000' || code === '28P01';
}
