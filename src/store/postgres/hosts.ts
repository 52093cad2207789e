/**
 * Finding the writable primary among several database hosts, at the pool's
 * connect step (docs/scaling.md, "Running highly available").
 *
 * The `pg` driver connects to one host; libpq's multi-host form
 * (`postgres://u@h1:5432,h2:5432/db?target_session_attrs=read-write`) is
 * parsed here instead, and every new pool connection goes to the host the
 * Locator currently prefers. A connection that cannot be made, or whose
 * server is not what `target_session_attrs` asks for, moves the preference
 * to the next host in the list (wrapping), so after a failover the list is
 * walked again until the new primary answers; a healthy preferred host is
 * kept (no connection tries a dead first host before reaching the primary).
 *
 * Pithos writes on every node, so its default is `read-write` (libpq's is
 * `any`): a standby, or a primary being demoted, is refused at connect
 * instead of answering `25006` to the first write.
 */
import pg from 'pg';
import { endpointText, type Endpoint, type SessionTarget } from './url.js';

export { endpointText, parseHostList, parsePgUrl, parseTarget, type Endpoint, type PgTarget, type SessionTarget } from './url.js';

/** A server that answered but is not what target_session_attrs asks for. */
export class WrongRoleError extends Error {
  constructor(
    readonly endpoint: string,
    role: string,
  ) {
    super(`${endpoint} is ${role}, not a writable primary`);
  }
}

/** What a check of a server's role found. */
export interface Role {
  recovery: boolean;
  readOnly: boolean;
}

export const ROLE_SQL = "SELECT pg_is_in_recovery() AS recovery, current_setting('transaction_read_only') AS ro";

export const roleOf = (row: Record<string, unknown> | undefined): Role => ({
  recovery: row?.recovery === true,
  readOnly: row?.ro === 'on',
});

/** Whether a server in `role` is acceptable under `target`. */
export function acceptable(target: SessionTarget, role: Role): boolean {
  if (target === 'any') return true;
  if (target === 'primary') return !role.recovery;
  return !role.recovery && !role.readOnly;
}

export const roleText = (r: Role): string => (r.recovery ? 'a standby (in recovery)' : r.readOnly ? 'read-only' : 'a writable primary');

/** Which host new connections go to. */
export class Locator {
  private at = 0;

  constructor(
    readonly hosts: readonly Endpoint[],
    readonly target: SessionTarget,
  ) {}

  /** The host new connections try; undefined when the URL named none. */
  pick(): Endpoint | undefined {
    return this.hosts[this.at];
  }

  /** `e` failed (unreachable, wrong role, stopped answering): the next host is tried next, if `e` was the preferred one. */
  failed(e: Endpoint | undefined): void {
    if (e === undefined || this.hosts.length < 2) return;
    const cur = this.hosts[this.at];
    if (cur.host === e.host && cur.port === e.port) this.at = (this.at + 1) % this.hosts.length;
  }
}

/** The Endpoint a pooled client was connected to (set by the client class). */
export const ENDPOINT = Symbol('pithos.endpoint');

type Connectable = pg.Client & { [ENDPOINT]?: Endpoint; connection: { stream: { destroy(err?: Error): void } } };

/**
 * The client class the pool makes connections with: it connects to the
 * Locator's host, and refuses (ends) a connection whose server is not of
 * the target role, within `checkMs`.
 */
export function clientClass(loc: Locator, checkMs: number): typeof pg.Client {
  return class PithosClient extends pg.Client {
    constructor(config?: string | pg.ClientConfig) {
      super(config);
      // Without a listener, an 'error' event ends the process (afterGivingUp says why ignoring it is safe).
      this.on('error', afterGivingUp);
    }

    override connect(): Promise<pg.Client>;
    override connect(callback: ((err: Error) => void) | ((err: null, c: pg.Client) => void)): void;
    override connect(callback?: ((err: Error) => void) | ((err: null, c: pg.Client) => void)): Promise<pg.Client> | void {
      const p = this.connectChecked().then(() => this as pg.Client);
      if (callback === undefined) return p;
      const cb = callback as (err: Error | null, c?: pg.Client) => void;
      p.then(
        (c) => cb(null, c),
        (err: Error) => cb(err),
      );
    }

    private async connectChecked(): Promise<void> {
      const self = this as unknown as Connectable & { host: string; port: number };
      const e = loc.pick();
      if (e !== undefined) {
        // pg reads these when it opens the socket.
        self.host = e.host;
        self.port = e.port;
      }
      self[ENDPOINT] = e;
      try {
        await super.connect();
      } catch (err) {
        loc.failed(e);
        throw err;
      }
      if (loc.target === 'any') return;
      let role: Role;
      const timer = setTimeout(() => self.connection.stream.destroy(new Error(`no answer to the role check within ${checkMs} ms`)), checkMs);
      try {
        role = roleOf((await super.query(ROLE_SQL)).rows[0] as Record<string, unknown>);
      } catch (err) {
        loc.failed(e);
        void this.end().catch(discarded);
        throw err;
      } finally {
        clearTimeout(timer);
      }
      if (!acceptable(loc.target, role)) {
        loc.failed(e);
        void this.end().catch(discarded);
        throw new WrongRoleError(e === undefined ? 'the database' : endpointText(e), roleText(role));
      }
    }
  } as unknown as typeof pg.Client;
}

function discarded(): void {
  // Closing a connection that is being given up on: a failure to close leaves nothing behind to clean.
}

function afterGivingUp(): void {
  // An 'error' on a connection this node gave up on (its socket destroyed), after it left the pool
  // and every other listener: the failure that made the node give up was already reported.
}
