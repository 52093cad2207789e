/**
 * Command-line flags, environment variables and the config file. Every flag
 * has a variable, a config-file key (the flag without its dashes) and a
 * default; precedence is flag > variable > file > default
 * (docs/operations.md, "Config file"). A bad value is a ConfigError with a
 * one-line reason, which main.ts prints before exiting 2.
 */
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { checkOrigin } from './http/cors.js';
import type { Durability } from './engine/index.js';
import { parseHostList, parsePgUrl, parseTarget } from './store/postgres/url.js';

export interface Config {
  command: 'serve' | 'repair' | 'rekey' | 'key-check' | 'help' | 'version' | 'print-config';
  host: string;
  port: number;
  dataDir: string;
  authToken: string | undefined;
  fsync: Durability;
  maxBodyBytes: number;
  cacheMb: number;
  segmentMb: number;
  repair: boolean;
  /** Addresses and CIDR subnets allowed to connect; empty = everyone. */
  allowFrom: string[];
  /** Open connections at most; undefined = 10000, lowered to fit the open-file limit. */
  maxConnections: number | undefined;
  /** --config: the JSON file read (undefined = none). */
  config: string | undefined;
  tokensFile: string | undefined;
  tlsCert: string | undefined;
  tlsKey: string | undefined;
  corsOrigin: string[];
  logFormat: 'text' | 'json';
  accessLog: boolean;
  /** 'log' (the embedded log in dataDir) or a postgres:// URL (docs/scaling.md). */
  store: string;
  /** Connections each node keeps to the shared database at most. */
  pgPoolSize: number;
  /** Longest a statement may run on the shared database before it is cancelled (ms); also bounds each request's database work. */
  pgStatementTimeoutMs: number;
  /** Database hosts in order (`h1:5432,h2:5432`), replacing the store URL's; undefined = the URL's. */
  pgHosts: string | undefined;
  /** Which server of the hosts to use: read-write (default), primary or any (libpq's target_session_attrs). */
  pgTargetSessionAttrs: string | undefined;
  /** A second secret that only GET /metrics accepts, sent as `Authorization: Bearer`. */
  metricsToken: string | undefined;
  /** TCP port of the Redis protocol listener (docs/redis.md); undefined = off. */
  respPort: number | undefined;
  /** The data key new data is sealed with (docs/operations.md, "Encryption at rest"); undefined = no encryption. */
  encryptionKeyFile: string | undefined;
  /** Older keys, still needed to read what they sealed. */
  encryptionOldKeyFiles: string[];
  allowInsecureKeyFile: boolean;
  /** The key itself, from the config file's `encryptor.secret` alias (UrnaDB style); undefined = none. */
  encryptionSecret: string | undefined;
  /** Compress values written from now on (docs/operations.md, "Compression"). */
  compression: boolean;
}

export class ConfigError extends Error {}

interface Spec {
  flag: string;
  env: string;
  key: keyof Config;
  kind: 'string' | 'port' | 'fsync' | 'posint' | 'bool' | 'list' | 'origins' | 'logformat' | 'store' | 'files' | 'pghosts' | 'pgtarget';
  def: string | number | boolean | string[] | undefined;
  help: string;
}

// One setting per entry, laid out by hand; the formatter leaves it so.
// prettier-ignore
const SPECS: Spec[] = [
  { flag: '--host', env: 'PITHOS_HOST', key: 'host', kind: 'string', def: '127.0.0.1', help: 'address to listen on' },
  { flag: '--port', env: 'PITHOS_PORT', key: 'port', kind: 'port', def: 2668, help: 'TCP port (0 picks a free one)' },
  { flag: '--resp-port', env: 'PITHOS_RESP_PORT', key: 'respPort', kind: 'port', def: undefined,
    help: 'also speak the Redis protocol (RESP2/RESP3) on this TCP port, e.g. 6379 (default: off; docs/redis.md)' },
  { flag: '--data-dir', env: 'PITHOS_DATA_DIR', key: 'dataDir', kind: 'string', def: './data', help: 'directory holding the log' },
  { flag: '--auth-token', env: 'PITHOS_AUTH_TOKEN', key: 'authToken', kind: 'string', def: undefined,
    help: 'secret clients send as Auth-Token (default: generated once, kept in <data-dir>/auth-token)' },
  { flag: '--fsync', env: 'PITHOS_FSYNC', key: 'fsync', kind: 'fsync', def: 'always',
    help: 'durability: always (ack after fdatasync) | everysec | never' },
  { flag: '--max-body-bytes', env: 'PITHOS_MAX_BODY_BYTES', key: 'maxBodyBytes', kind: 'posint', def: 16 * 1024 * 1024,
    help: 'largest request body accepted (413 above)' },
  { flag: '--cache-mb', env: 'PITHOS_CACHE_MB', key: 'cacheMb', kind: 'posint', def: 256, help: 'value cache budget in MiB' },
  { flag: '--segment-mb', env: 'PITHOS_SEGMENT_MB', key: 'segmentMb', kind: 'posint', def: 64, help: 'log segment size in MiB (at most 1024)' },
  { flag: '--allow-from', env: 'PITHOS_ALLOW_FROM', key: 'allowFrom', kind: 'list', def: [],
    help: 'comma-separated addresses or CIDR subnets allowed to connect; others get 403 (default: any)' },
  { flag: '--max-connections', env: 'PITHOS_MAX_CONNECTIONS', key: 'maxConnections', kind: 'posint', def: undefined,
    help: 'open connections at most; beyond it the oldest idle one is closed (default 10000, lowered to the open-file limit minus 256)' },
  { flag: '--store', env: 'PITHOS_STORE', key: 'store', kind: 'store', def: 'log',
    help: 'where data lives: log (the data directory) or postgres://user:pass@host:port[,host2:port…]/db (shared by many nodes)' },
  { flag: '--pg-pool-size', env: 'PITHOS_PG_POOL_SIZE', key: 'pgPoolSize', kind: 'posint', def: 10,
    help: 'connections to the shared database per node (postgres store only)' },
  { flag: '--pg-statement-timeout-ms', env: 'PITHOS_PG_STATEMENT_TIMEOUT_MS', key: 'pgStatementTimeoutMs', kind: 'posint', def: 5000,
    help: 'a statement on the shared database running longer is cancelled, answer 503; bounds every request\'s database work (postgres store only)' },
  { flag: '--pg-hosts', env: 'PITHOS_PG_HOSTS', key: 'pgHosts', kind: 'pghosts', def: undefined,
    help: 'database hosts tried in order, host:port,host:port (replaces the store URL\'s; postgres store only)' },
  { flag: '--pg-target-session-attrs', env: 'PITHOS_PG_TARGET_SESSION_ATTRS', key: 'pgTargetSessionAttrs', kind: 'pgtarget', def: undefined,
    help: 'which host to use: read-write (default), primary or any, as libpq\'s target_session_attrs (postgres store only)' },
  { flag: '--metrics-token', env: 'PITHOS_METRICS_TOKEN', key: 'metricsToken', kind: 'string', def: undefined,
    help: 'a second secret that only GET /metrics accepts, as Authorization: Bearer <token> (default: none)' },
  { flag: '--encryption-key-file', env: 'PITHOS_ENCRYPTION_KEY_FILE', key: 'encryptionKeyFile', kind: 'string', def: undefined,
    help: 'encrypt the log at rest with the 32-byte key in this file (64 hex digits, mode 0600; e.g. openssl rand -hex 32)' },
  { flag: '--encryption-old-key-files', env: 'PITHOS_ENCRYPTION_OLD_KEY_FILES', key: 'encryptionOldKeyFiles', kind: 'files', def: [],
    help: 'comma-separated key files of earlier keys, to read segments they sealed until compaction or rekey rewrites them' },
  { flag: '--allow-insecure-key-file', env: 'PITHOS_ALLOW_INSECURE_KEY_FILE', key: 'allowInsecureKeyFile', kind: 'bool', def: false,
    help: 'use key files that other users can access (refused otherwise)' },
  { flag: '--compression', env: 'PITHOS_COMPRESSION', key: 'compression', kind: 'bool', def: false,
    help: 'compress values of 256 bytes or more in the log (Brotli); any directory reads the same either way' },
  { flag: '--repair', env: 'PITHOS_REPAIR', key: 'repair', kind: 'bool', def: false,
    help: 'open a damaged log by dropping damaged batches (keeps every intact one)' },
  { flag: '--config', env: 'PITHOS_CONFIG', key: 'config', kind: 'string', def: undefined,
    help: 'JSON file of settings, keys named like the flags (flags and variables win over it)' },
  { flag: '--tokens-file', env: 'PITHOS_TOKENS_FILE', key: 'tokensFile', kind: 'string', def: undefined,
    help: "named tokens with roles, one '<name> <read|write|admin> <token>' per line; reloaded on SIGHUP" },
  { flag: '--tls-cert', env: 'PITHOS_TLS_CERT', key: 'tlsCert', kind: 'string', def: undefined,
    help: 'PEM certificate (chain): serve HTTPS; reloaded on SIGHUP' },
  { flag: '--tls-key', env: 'PITHOS_TLS_KEY', key: 'tlsKey', kind: 'string', def: undefined,
    help: 'PEM private key of --tls-cert' },
  { flag: '--cors-origin', env: 'PITHOS_CORS_ORIGIN', key: 'corsOrigin', kind: 'origins', def: [],
    help: 'browser origin allowed by CORS, e.g. https://app.example.com (repeatable; env: comma-separated)' },
  { flag: '--log-format', env: 'PITHOS_LOG_FORMAT', key: 'logFormat', kind: 'logformat', def: 'text',
    help: 'text | json (one object per line)' },
  { flag: '--access-log', env: 'PITHOS_ACCESS_LOG', key: 'accessLog', kind: 'bool', def: false,
    help: 'log one line per request (id, method, path, status, ms, bytes)' },
];

/** Keys of the config file: the flag without its leading dashes. */
const FILE_KEYS = new Map(SPECS.filter((s) => s.key !== 'config').map((s) => [s.flag.slice(2), s]));

/**
 * Config-file keys of the UrnaDB style, accepted as aliases (docs/operations.md,
 * "Encryption at rest"): `encryptor.enable` (boolean), `encryptor.secret`
 * (the key itself, as a key file holds it) and `compressor.enable` (the
 * `compression` key), flat or nested as `{"encryptor": {"enable": true, "secret": "…"}}`.
 */
const ALIASES = new Set(['encryptor.enable', 'encryptor.secret', 'compressor.enable']);

export function usage(): string {
  const lines = [
    'usage: pithos [serve|repair|rekey|key-check] [options]',
    '',
    '  pithos [serve]    start the server',
    '  pithos repair     repair the data directory (see --repair), then exit',
    '  pithos rekey      rewrite every segment not sealed under --encryption-key-file, then exit',
    '  pithos key-check  list the key each segment needs; exit 1 if any needs another than --encryption-key-file',
    '  pithos help       the other commands: restore, backup and the client (get, put, query, watch, …)',
    '',
    'options (each also read from the environment variable shown):',
  ];
  for (const s of SPECS) {
    const def = s.def === undefined || (Array.isArray(s.def) && s.def.length === 0) ? '' : ` (default ${String(s.def)})`;
    lines.push(`  ${(s.flag + (s.kind === 'bool' ? '' : ' <value>')).padEnd(26)} ${s.env.padEnd(22)} ${s.help}${def}`);
  }
  lines.push(`  ${'--help'.padEnd(26)} ${''.padEnd(22)} print this and exit`);
  lines.push(`  ${'--version'.padEnd(26)} ${''.padEnd(22)} print the version and exit`);
  lines.push(`  ${'--print-config'.padEnd(26)} ${''.padEnd(22)} print the effective configuration as JSON (secrets masked) and exit`);
  return lines.join('\n');
}

/** The non-empty items of a comma-separated value, trimmed. */
function commaList(raw: string): string[] {
  return raw
    .split(',')
    .map((x) => x.trim())
    .filter((x) => x.length > 0);
}

function convert(s: Spec, raw: string, from: string): string | number | boolean | string[] {
  if (s.kind === 'origins') {
    const items = commaList(raw);
    for (const it of items) {
      if (checkOrigin(it) === undefined) {
        throw new ConfigError(`${from}: '${it}' is not an origin like https://app.example.com (scheme, host, optional port; no path or trailing slash)`);
      }
    }
    return items;
  }
  if (s.kind === 'logformat') {
    if (raw !== 'text' && raw !== 'json') throw new ConfigError(`${from} must be text or json, got '${raw}'`);
    return raw;
  }
  switch (s.kind) {
    case 'string':
      if (raw === '') throw new ConfigError(`${from} must not be empty`);
      return raw;
    case 'port': {
      if (!/^\d+$/.test(raw) || Number(raw) > 65535) throw new ConfigError(`${from} must be an integer 0-65535, got '${raw}'`);
      return Number(raw);
    }
    case 'posint': {
      if (!/^\d+$/.test(raw) || Number(raw) < 1 || !Number.isSafeInteger(Number(raw))) {
        throw new ConfigError(`${from} must be a positive integer, got '${raw}'`);
      }
      return Number(raw);
    }
    case 'fsync':
      if (raw !== 'always' && raw !== 'everysec' && raw !== 'never') {
        throw new ConfigError(`${from} must be always, everysec or never, got '${raw}'`);
      }
      return raw;
    case 'list': {
      const items = commaList(raw);
      for (const it of items) {
        if (parseSubnet(it) === undefined) throw new ConfigError(`${from}: '${it}' is not an IP address or CIDR subnet`);
      }
      return items;
    }
    case 'files': {
      const items = commaList(raw);
      if (items.length === 0 && raw !== '') throw new ConfigError(`${from} must name one or more files`);
      return items;
    }
    case 'store':
      if (raw === 'log') return raw;
      if (/^postgres(ql)?:\/\/./.test(raw)) {
        try {
          parsePgUrl(raw);
        } catch (err) {
          throw new ConfigError(`${from}: ${(err as Error).message}`);
        }
        return raw;
      }
      throw new ConfigError(`${from} must be log or a postgres:// URL, got '${raw.replace(/:[^:@/]*@/, ':***@')}'`);
    case 'pghosts':
      try {
        parseHostList(raw, from);
      } catch (err) {
        throw new ConfigError((err as Error).message);
      }
      return raw;
    case 'pgtarget':
      try {
        return parseTarget(raw, from);
      } catch (err) {
        throw new ConfigError((err as Error).message);
      }
    case 'bool':
      if (raw === '' || raw === '1' || raw === 'true') return true;
      if (raw === '0' || raw === 'false') return false;
      throw new ConfigError(`${from} must be true or false, got '${raw}'`);
    default:
      throw new ConfigError(`${from}: unhandled kind ${s.kind}`);
  }
}

/** The file named by --config / PITHOS_CONFIG, if any, as raw values by key (aliases in `aliases`). */
function readConfigFile(file: string, readFile: (f: string) => string, aliases: Map<string, unknown>): Map<Spec, string> {
  let text: string;
  try {
    text = readFile(file);
  } catch (err) {
    throw new ConfigError(`cannot read config file ${file}: ${(err as Error).message}`);
  }
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new ConfigError(`config file ${file} is not valid JSON: ${(err as Error).message}`);
  }
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) throw new ConfigError(`config file ${file} must hold one JSON object`);
  const entries: Array<[string, unknown]> = [];
  for (const [k, v] of Object.entries(doc as Record<string, unknown>)) {
    if ((k === 'encryptor' || k === 'compressor') && v !== null && typeof v === 'object' && !Array.isArray(v)) {
      for (const [k2, v2] of Object.entries(v as Record<string, unknown>)) entries.push([`${k}.${k2}`, v2]);
    } else entries.push([k, v]);
  }
  for (const [k, v] of entries) if (ALIASES.has(k)) aliases.set(k, v);
  const unknown = entries.map(([k]) => k).filter((k) => !FILE_KEYS.has(k) && !ALIASES.has(k));
  if (unknown.length > 0) {
    throw new ConfigError(`config file ${file}: unknown key(s) ${unknown.map((k) => `'${k}'`).join(', ')} (keys are the flags without '--')`);
  }
  const out = new Map<Spec, string>();
  for (const [k, v] of entries) {
    if (ALIASES.has(k)) continue;
    const s = FILE_KEYS.get(k)!;
    const from = `config file key '${k}'`;
    let raw: string;
    if (typeof v === 'string') raw = v;
    else if (typeof v === 'number' && (s.kind === 'port' || s.kind === 'posint')) raw = String(v);
    else if (typeof v === 'boolean' && s.kind === 'bool') raw = String(v);
    else if (Array.isArray(v) && (s.kind === 'list' || s.kind === 'origins' || s.kind === 'files') && v.every((x) => typeof x === 'string')) {
      if (v.some((x: string) => x.includes(','))) throw new ConfigError(`${from}: list items must not contain commas`);
      raw = v.join(',');
    } else if (v === null && s.def === undefined)
      continue; // null = not set, as --print-config shows it
    else throw new ConfigError(`${from} has the wrong type (${v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v})`);
    out.set(s, raw);
  }
  return out;
}

/**
 * `readFile` is there for unit tests; main.ts passes nothing. --help and
 * --version win over everything, even a broken config file.
 */
export function parseConfig(argv: readonly string[], env: NodeJS.ProcessEnv, readFile: (f: string) => string = (f) => readFileSync(f, 'utf8')): Config {
  const out: Record<string, unknown> = { command: 'serve' };
  for (const a of argv) {
    if (a === '--help' || a === '-h') return { ...defaults(), command: 'help' };
    if (a === '--version') return { ...defaults(), command: 'version' };
  }
  // The file's name comes from the flag or the variable, so find it first.
  let file: string | undefined = env.PITHOS_CONFIG === '' ? undefined : env.PITHOS_CONFIG;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--config') file = argv[i + 1];
    else if (a.startsWith('--config=')) file = a.slice(9);
    if ((a === '--config' && file === undefined) || file === '') throw new ConfigError('--config needs a file name');
  }
  const aliases = new Map<string, unknown>();
  const fromFile = file === undefined ? new Map<Spec, string>() : readConfigFile(file, readFile, aliases);
  for (const s of SPECS) {
    const v = env[s.env];
    const f = fromFile.get(s);
    out[s.key] = v !== undefined ? convert(s, v, s.env) : f !== undefined ? convert(s, f, `config file key '${s.flag.slice(2)}'`) : s.def;
  }
  out.config = file;
  /** Repeatable flags: the first occurrence replaces the value from elsewhere, later ones add to it. */
  const seen = new Set<Spec>();
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--print-config') {
      out.command = 'print-config';
      continue;
    }
    if (a === 'repair' && i === 0) {
      out.command = 'repair';
      out.repair = true;
      continue;
    }
    if ((a === 'rekey' || a === 'key-check') && i === 0) {
      out.command = a;
      continue;
    }
    const eq = a.indexOf('=');
    const flag = eq > 0 ? a.slice(0, eq) : a;
    const s = SPECS.find((x) => x.flag === flag);
    if (s === undefined) throw new ConfigError(`unknown option '${a}' (see --help)`);
    if (s.kind === 'bool' && eq < 0) {
      out[s.key] = true;
      continue;
    }
    let raw: string | undefined;
    if (eq > 0) raw = a.slice(eq + 1);
    else raw = argv[++i];
    if (raw === undefined) throw new ConfigError(`${flag} needs a value`);
    const v = convert(s, raw, flag);
    out[s.key] = s.kind === 'origins' && seen.has(s) ? [...(out[s.key] as string[]), ...(v as string[])] : v;
    seen.add(s);
  }
  const cfg = out as unknown as Config;
  applyAliases(cfg, aliases, env.PITHOS_COMPRESSION !== undefined || argv.some((a) => a === '--compression' || a.startsWith('--compression=')));
  // Hint files address values with 32-bit offsets.
  if (cfg.segmentMb > 1024) throw new ConfigError(`--segment-mb must be at most 1024, got ${cfg.segmentMb}`);
  if ((cfg.tlsCert === undefined) !== (cfg.tlsKey === undefined)) throw new ConfigError('--tls-cert and --tls-key go together: give both or neither');
  return cfg;
}

/**
 * `encryptor.secret` gives the key inline; `encryptor.enable: false` means no
 * encryption and conflicts with a key given any other way, `true` requires one.
 */
function applyAliases(cfg: Config, aliases: Map<string, unknown>, compressionSet: boolean): void {
  cfg.encryptionSecret = undefined;
  const enable = aliases.get('encryptor.enable');
  const secret = aliases.get('encryptor.secret');
  if (enable !== undefined && typeof enable !== 'boolean') throw new ConfigError(`config file key 'encryptor.enable' must be true or false`);
  if (secret !== undefined && (typeof secret !== 'string' || secret === ''))
    throw new ConfigError(`config file key 'encryptor.secret' must be the key as a non-empty string`);
  if (secret !== undefined && cfg.encryptionKeyFile !== undefined) {
    throw new ConfigError(`config file key 'encryptor.secret' and --encryption-key-file both give a key; keep one`);
  }
  if (enable === false && (secret !== undefined || cfg.encryptionKeyFile !== undefined)) {
    throw new ConfigError(`config file key 'encryptor.enable' is false but a key is given; remove one of them`);
  }
  if (enable === true && secret === undefined && cfg.encryptionKeyFile === undefined) {
    throw new ConfigError(`config file key 'encryptor.enable' is true but no key is given ('encryptor.secret' or --encryption-key-file)`);
  }
  cfg.encryptionSecret = secret as string | undefined;
  const compress = aliases.get('compressor.enable');
  if (compress !== undefined) {
    if (typeof compress !== 'boolean') throw new ConfigError(`config file key 'compressor.enable' must be true or false`);
    // The alias stands for the file's 'compression' key: a flag or variable still wins.
    if (!compressionSet) cfg.compression = compress;
  }
}

function defaults(): Config {
  const out: Record<string, unknown> = { command: 'serve' };
  for (const s of SPECS) out[s.key] = s.def;
  out.encryptionSecret = undefined;
  return out as unknown as Config;
}

export const MASK = '********';

/**
 * The effective configuration as a config file would say it (keys named like
 * the flags), with the main secret masked. Paths are shown; a file's secrets
 * never are.
 */
export function effectiveConfig(cfg: Config): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const s of SPECS) {
    if (s.key === 'config') continue;
    const v = cfg[s.key];
    out[s.flag.slice(2)] = v === undefined ? null : SECRETS.has(s.key) ? MASK : s.key === 'store' ? maskUrl(String(v)) : v;
  }
  if (cfg.encryptionSecret !== undefined) out['encryptor.secret'] = MASK;
  return out;
}

/** Settings that are secrets in themselves. */
const SECRETS = new Set<string>(['authToken', 'metricsToken']);

/** A database URL with its password masked (postgres://user:********@host/db). */
function maskUrl(url: string): string {
  try {
    // Several hosts (h1:5432,h2:5432) are not a WHATWG URL: mask the password by hand.
    if (/^postgres(ql)?:\/\/[^/?#]*,/.test(url)) {
      const [head, query] = url.split('?', 2);
      const masked = head.replace(/^(postgres(?:ql)?:\/\/[^:@/]*):[^@/]*@/, `$1:${MASK}@`);
      if (query === undefined) return masked;
      const p = new URLSearchParams(query);
      for (const k of [...p.keys()]) if (/^pass(word)?$/i.test(k)) p.set(k, MASK);
      return `${masked}?${p.toString()}`;
    }
    const u = new URL(url);
    if (u.password !== '') u.password = MASK;
    for (const k of [...u.searchParams.keys()]) if (/^pass(word)?$/i.test(k)) u.searchParams.set(k, MASK);
    return u.toString();
  } catch {
    return url;
  }
}

/** "10.0.0.0/8" -> [address, prefix, family]; a bare address gets the full prefix. */
export function parseSubnet(s: string): [string, number, 'ipv4' | 'ipv6'] | undefined {
  const slash = s.indexOf('/');
  const addr = slash < 0 ? s : s.slice(0, slash);
  const fam = isIP(addr);
  if (fam === 0) return undefined;
  const max = fam === 4 ? 32 : 128;
  const prefix = slash < 0 ? max : Number(s.slice(slash + 1));
  if (!Number.isInteger(prefix) || prefix < 0 || prefix > max || (slash >= 0 && !/^\d+$/.test(s.slice(slash + 1)))) return undefined;
  return [addr, prefix, fam === 4 ? 'ipv4' : 'ipv6'];
}
