/**
 * Whether the database's history went backwards under the change feed
 * (docs/scaling.md, "Running highly available"): a restore to an earlier
 * point, or a failover to a standby that lacked the last transactions
 * (asynchronous replication), hands out sequence positions that were
 * already published. The feed would drop those changes silently, and
 * fences and versions would go backwards.
 *
 * Checked on every feed poll, in one statement: the database's identity
 * (system identifier and timeline: a restore or a promotion makes a new
 * timeline, a different cluster a new identifier) and the sequence's last
 * value against what this node has published. When either says history
 * changed, a sequence below what was published is re-based above it (the
 * only setval, and only forward), so fences and versions stay increasing, and the
 * feed tells its watchers `reset`. The sequence alone is not enough:
 * PostgreSQL logs sequences 32 values ahead, so a promoted standby's
 * sequence may be above positions it never received.
 */
import { DRAWN } from './schema.js';
import type { Q } from './sql.js';

/**
 * The timeline is the one WAL is being written on (the first 8 hex digits
 * of the current WAL file's name), not pg_control_checkpoint()'s: that is
 * the last checkpoint's, and a promoted standby's first checkpoint is
 * spread over minutes when it has many dirty buffers, so until it ends the
 * new primary would report its last restartpoint's timeline: the same as
 * the old primary's (no reset), or an older one (a second, spurious reset).
 */
const IDENTITY = `SELECT (SELECT system_identifier::text FROM pg_control_system()) AS sys,
  CASE WHEN pg_is_in_recovery() THEN NULL ELSE substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8) END AS tl,
  ${DRAWN} AS last FROM pithos_seq`;
const SEQUENCE = `SELECT ${DRAWN} AS last FROM pithos_seq`;

/**
 * The identity query's refusals that mean "this database will not say", not
 * "this database failed": no such function (42883), not supported on this
 * service (0A000), not permitted to this role (42501), not in this
 * configuration (55000). The node then checks the sequence alone, as it
 * would without the identity, rather than refusing to start.
 */
const NO_IDENTITY = new Set(['42883', '0A000', '42501', '55000']);

export class History {
  private identity: string | undefined;
  /** False once the database would not tell its identity (NO_IDENTITY: CockroachDB, YugabyteDB, a managed service or a role that may not ask): the sequence is checked alone. */
  private withIdentity = true;

  constructor(
    private readonly q: Q,
    private readonly log: (level: 'info' | 'warn' | 'error', msg: string) => void,
  ) {}

  /**
   * Whether history changed since the last check, given that this node
   * published up to `published`. When it did, the sequence has been
   * re-based above `published` before this resolves. `watched`: the caller
   * tells watchers to reset on true (false at start, before any watcher).
   */
  async changed(published: number, watched = true): Promise<boolean> {
    let row: Record<string, unknown>;
    try {
      row = (await this.q.query(this.withIdentity ? IDENTITY : SEQUENCE))[0];
    } catch (err) {
      const code = (err as { code?: unknown })?.code;
      if (!this.withIdentity || typeof code !== 'string' || !NO_IDENTITY.has(code)) throw err;
      this.withIdentity = false;
      this.log('warn', `shared store: the database does not tell its identity (${String((err as Error).message)}); history is checked by the sequence alone`);
      row = (await this.q.query(SEQUENCE))[0];
    }
    const last = Number(row.last);
    // A server in recovery has no timeline of its own to report (tl is null): keep what was known.
    const id = this.withIdentity && row.tl !== null ? `system ${String(row.sys)}, timeline ${parseInt(String(row.tl), 16)}` : this.identity;
    const was = this.identity;
    this.identity = id;
    const otherIdentity = was !== undefined && id !== was;
    const behind = last < published;
    if (!otherIdentity && !behind) return false;
    // Only a sequence below what was published is moved, and only forward: other nodes keep
    // drawing from it meanwhile, and a setval to a value read a moment earlier would move it
    // back under their new rows (duplicate change positions: 500s after a failover).
    if (behind) await this.q.query(`SELECT setval('pithos_seq', $1::int8) WHERE (SELECT ${DRAWN} FROM pithos_seq) < $1::int8`, [published]);
    this.log(
      'warn',
      `shared store: the database's history changed (${otherIdentity ? `${was} is now ${id}` : `the sequence is at ${last}, below ${published} already published`}); ` +
        `positions re-based above ${published}${watched ? ', watchers told to reset' : ''}`,
    );
    return true;
  }
}
