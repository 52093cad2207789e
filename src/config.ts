/**
 * Command-line flags and environment variables. Every flag has a variable
 * and a default; a flag beats its variable. A bad value is a ConfigError
 * with a one-line reason, which main.ts prints before exiting non-zero.
 */
import { isIP } from 'node:net';
import type { Durability } from './engine/index.js';

export interface Config {
  command: 'serve' | 'repair' | 'help' | 'version';
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
  /** 'log' (the embedded log in dataDir) or a postgres:// URL (docs/scaling.md). */
  store: string;
  /** Connections each node keeps to the shared database at most. */
  pgPoolSize: number;
  /** Longest a statement may run on the shared database before it is cancelled (ms). */
  pgStatementTimeoutMs: number;
}

export class ConfigError extends Error {}

interface Spec {
  flag: string;
  env: string;
  key: keyof Config;
  kind: 'string' | 'port' | 'fsync' | 'posint' | 'bool' | 'list' | 'store';
  def: string | number | boolean | string[] | undefined;
  help: string;
}

const SPECS: Spec[] = [
  { flag: '--host', env: 'PITHOS_HOST', key: 'host', kind: 'string', def: '127.0.0.1', help: 'address to listen on' },
  { flag: '--port', env: 'PITHOS_PORT', key: 'port', kind: 'port', def: 2668, help: 'TCP port (0 picks a free one)' },
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
  { flag: '--store', env: 'PITHOS_STORE', key: 'store', kind: 'store', def: 'log',
    help: 'where data lives: log (the data directory) or postgres://user:pass@host:port/db (shared by many nodes)' },
  { flag: '--pg-pool-size', env: 'PITHOS_PG_POOL_SIZE', key: 'pgPoolSize', kind: 'posint', def: 10,
    help: 'connections to the shared database per node (postgres store only)' },
  { flag: '--pg-statement-timeout-ms', env: 'PITHOS_PG_STATEMENT_TIMEOUT_MS', key: 'pgStatementTimeoutMs', kind: 'posint', def: 5000,
    help: 'a statement on the shared database running longer is cancelled, answer 503 (postgres store only)' },
  { flag: '--repair', env: 'PITHOS_REPAIR', key: 'repair', kind: 'bool', def: false,
    help: 'open a damaged log by dropping damaged batches (keeps every intact one)' },
];

export function usage(): string {
  const lines = [
    'usage: pithos [repair] [options]',
    '',
    '  pithos            start the server',
    '  pithos repair     repair the data directory (see --repair), then exit',
    '',
    'options (each also read from the environment variable shown):',
  ];
  for (const s of SPECS) {
    const def = s.def === undefined || (Array.isArray(s.def) && s.def.length === 0) ? '' : ` (default ${String(s.def)})`;
    lines.push(`  ${(s.flag + (s.kind === 'bool' ? '' : ' <value>')).padEnd(26)} ${s.env.padEnd(22)} ${s.help}${def}`);
  }
  lines.push(`  ${'--help'.padEnd(26)} ${''.padEnd(22)} print this and exit`);
  lines.push(`  ${'--version'.padEnd(26)} ${''.padEnd(22)} print the version and exit`);
  return lines.join('\n');
}

function convert(s: Spec, raw: string, from: string): string | number | boolean | string[] {
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
      const items = raw.split(',').map((x) => x.trim()).filter((x) => x.length > 0);
      for (const it of items) {
        if (parseSubnet(it) === undefined) throw new ConfigError(`${from}: '${it}' is not an IP address or CIDR subnet`);
      }
      return items;
    }
    case 'store':
      if (raw === 'log' || /^postgres(ql)?:\/\/./.test(raw)) return raw;
      throw new ConfigError(`${from} must be log or a postgres:// URL, got '${raw.replace(/:[^:@/]*@/, ':***@')}'`);
    case 'bool':
      if (raw === '' || raw === '1' || raw === 'true') return true;
      if (raw === '0' || raw === 'false') return false;
      throw new ConfigError(`${from} must be true or false, got '${raw}'`);
  }
}

export function parseConfig(argv: readonly string[], env: NodeJS.ProcessEnv): Config {
  const out: Record<string, unknown> = { command: 'serve' };
  for (const s of SPECS) {
    const v = env[s.env];
    out[s.key] = v === undefined ? s.def : convert(s, v, s.env);
  }
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--help' || a === '-h') return { ...(out as unknown as Config), command: 'help' };
    if (a === '--version') return { ...(out as unknown as Config), command: 'version' };
    if (a === 'repair' && i === 0) {
      out.command = 'repair';
      out.repair = true;
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
    out[s.key] = convert(s, raw, flag);
  }
  const cfg = out as unknown as Config;
  // Hint files address values with 32-bit offsets.
  if (cfg.segmentMb > 1024) throw new ConfigError(`--segment-mb must be at most 1024, got ${cfg.segmentMb}`);
  return cfg;
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
