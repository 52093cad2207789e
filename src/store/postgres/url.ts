/**
 * The shared store's connection settings in libpq's form: a URL naming one
 * or several hosts (`postgres://u@h1:5432,h2:5432/db`) and
 * `target_session_attrs`, or the same as separate settings (`--pg-hosts`,
 * `--pg-target-session-attrs`). Plain parsing, no driver: config.ts checks
 * settings with it before anything connects.
 */
export type SessionTarget = 'read-write' | 'primary' | 'any';
export const SESSION_TARGETS: readonly SessionTarget[] = ['read-write', 'primary', 'any'];

export interface Endpoint {
  host: string;
  port: number;
}

export interface PgTarget {
  /** A URL `pg` accepts: the first host only, without target_session_attrs. */
  url: string;
  /** Every host, in order; empty when the URL names none (pg's defaults apply). */
  hosts: Endpoint[];
  target: SessionTarget;
}

const DEFAULT_PORT = 5432;

/** `host`, `host:port`, `[v6]`, `[v6]:port`; undefined when malformed. */
function parseEndpoint(s: string): Endpoint | undefined {
  const m = /^(\[[0-9a-fA-F:.]+\]|[^[\]:/]+)(?::(\d{1,5}))?$/.exec(s);
  if (m === null) return undefined;
  const port = m[2] === undefined ? DEFAULT_PORT : Number(m[2]);
  if (port < 1 || port > 65535) return undefined;
  return { host: m[1].replace(/^\[(.*)\]$/, '$1'), port };
}

/** The list of hosts in `--pg-hosts` form (`h1:5432,h2`); throws naming `field`. */
export function parseHostList(list: string, field: string): Endpoint[] {
  const out: Endpoint[] = [];
  for (const item of list.split(',')) {
    const e = parseEndpoint(decodeURIComponent(item.trim()));
    if (e === undefined) throw new Error(`${field}: '${item}' is not host or host:port`);
    out.push(e);
  }
  return out;
}

export function parseTarget(v: string, field: string): SessionTarget {
  if ((SESSION_TARGETS as readonly string[]).includes(v)) return v as SessionTarget;
  throw new Error(`${field} must be ${SESSION_TARGETS.join(', ')}, got '${v}'`);
}

const hostText = (e: Endpoint): string => (e.host.includes(':') ? `[${e.host}]:${e.port}` : `${e.host}:${e.port}`);
export const endpointText = hostText;

/**
 * Splits a libpq-style URL into what `pg` takes and the host list. `hosts`
 * and `target` (the separate settings) replace the URL's when given.
 */
export function parsePgUrl(url: string, hosts?: string, target?: string): PgTarget {
  const m = /^(postgres(?:ql)?:\/\/)([^/?#]*)(.*)$/.exec(url);
  if (m === null) throw new Error('the store URL must start with postgres:// or postgresql://');
  const at = m[2].lastIndexOf('@');
  const userinfo = m[2].slice(0, at + 1);
  const hostspec = m[2].slice(at + 1);
  let list = hostspec === '' ? [] : parseHostList(hostspec, 'the store URL');
  const q = m[3].indexOf('?');
  const path = q < 0 ? m[3] : m[3].slice(0, q);
  const params = new URLSearchParams(q < 0 ? '' : m[3].slice(q + 1));
  let t: SessionTarget = 'read-write';
  const inUrl = params.get('target_session_attrs');
  if (inUrl !== null) t = parseTarget(inUrl, 'target_session_attrs in the store URL');
  params.delete('target_session_attrs');
  if (hosts !== undefined && hosts !== '') list = parseHostList(hosts, '--pg-hosts');
  if (target !== undefined && target !== '') t = parseTarget(target, '--pg-target-session-attrs');
  const rest = params.toString();
  const first = list.length === 0 ? '' : hostText(list[0]);
  return { url: `${m[1]}${userinfo}${first}${path}${rest === '' ? '' : `?${rest}`}`, hosts: list, target: t };
}
