/**
 * Connection and server commands (docs/redis.md, "Connection"): what
 * redis-cli and client libraries send when they connect (HELLO, AUTH,
 * CLIENT SETNAME, COMMAND, INFO, CONFIG GET) and the few they use to look
 * around. AUTH and HELLO's AUTH are answered by the listener, which holds
 * the secrets; the rest only read the session and the server's view.
 */
import { type Call, type Command, int, int64, is, syntaxError } from './command.js';
import { eachKey } from './keyspace.js';
import { KEYSPACE } from './keyspace-events.js';
import { ErrorReply, MapReply, OK, type Reply, Simple } from './resp.js';

function clientInfo(c: Call, s = c.session): string {
  const age = Math.floor((Date.now() - s.createdAt) / 1000);
  return `id=${s.id} addr=${s.addr} name=${s.name} age=${age} db=0 user=${s.user ?? 'default'} resp=${s.proto} cmd=${s.lastCommand}`;
}

function client(c: Call): Reply {
  const sub = c.args[1]!.toUpperCase();
  // The subcommands that take no argument answer Redis's arity error for one (client|id has arity 2).
  if ((sub === 'ID' || sub === 'GETNAME' || sub === 'INFO') && c.args.length !== 2)
    throw new ErrorReply(`ERR wrong number of arguments for 'client|${sub.toLowerCase()}' command`);
  switch (sub) {
    case 'ID':
      return c.session.id;
    case 'SETNAME': {
      const n = c.args[2];
      if (n === undefined || c.args.length !== 3) throw new ErrorReply("ERR wrong number of arguments for 'client|setname' command");
      if (/[\s]/.test(n)) throw new ErrorReply('ERR Client names cannot contain spaces, newlines or special characters.');
      c.session.name = n;
      return OK;
    }
    case 'GETNAME':
      return c.session.name === '' ? null : c.session.name;
    case 'INFO':
      return clientInfo(c) + '\n';
    case 'LIST':
      // Other tokens' connections are theirs to see: an admin token sees all, others their own.
      return c.server
        .clients()
        .filter((s) => c.session.role === 'admin' || s.user === c.session.user)
        .map((s) => clientInfo(c, s) + '\n')
        .join('');
    case 'KILL': {
      // Own connections only (docs/redis.md): by ID, or by ADDR.
      const [what, value] = [c.args[2]?.toUpperCase(), c.args[3]];
      const mine = (s: { user: string | undefined }): boolean => s.user === c.session.user;
      // The old form, CLIENT KILL <addr>: OK when it closed one, else Redis's error.
      if (c.args.length === 3) {
        if (c.server.kill((s) => mine(s) && s.addr === c.args[2]) === 0) throw new ErrorReply('ERR No such client');
        return OK;
      }
      if (value === undefined) throw syntaxError();
      if (what === 'ID') return c.server.kill((s) => mine(s) && s.id === int(value));
      if (what === 'ADDR') return c.server.kill((s) => mine(s) && s.addr === value);
      throw syntaxError();
    }
    case 'SETINFO':
    case 'NO-EVICT':
    case 'NO-TOUCH':
      return OK;
    default:
      throw new ErrorReply(`ERR unknown subcommand '${c.args[1]}'. Try CLIENT HELP.`);
  }
}

async function info(c: Call): Promise<Reply> {
  const want = (c.args[1] ?? 'default').toLowerCase();
  const all = want === 'all' || want === 'everything' || want === 'default';
  const v = c.server;
  const sections: string[] = [];
  const uptime = Math.floor((Date.now() - v.startedAt) / 1000);
  if (all || want === 'server')
    sections.push(
      `# Server\r\nredis_version:7.0.0\r\npithos_version:${v.version}\r\nredis_mode:standalone\r\nos:${process.platform}\r\nprocess_id:${process.pid}\r\ntcp_port:${v.port}\r\nuptime_in_seconds:${uptime}\r\nuptime_in_days:${Math.floor(uptime / 86400)}\r\n`,
    );
  if (all || want === 'clients') sections.push(`# Clients\r\nconnected_clients:${v.clients().length}\r\nmaxclients:10000\r\nblocked_clients:0\r\n`);
  if (all || want === 'persistence') sections.push(`# Persistence\r\nloading:0\r\naof_enabled:1\r\npithos_store:${v.storeName}\r\n`);
  if (all || want === 'stats')
    sections.push(`# Stats\r\ntotal_connections_received:${v.stats.connections}\r\ntotal_commands_processed:${v.stats.commands}\r\n`);
  if (all || want === 'replication') sections.push('# Replication\r\nrole:master\r\nconnected_slaves:0\r\n');
  // Counting keys walks the whole keyspace: only when asked by name (clients send plain INFO on every connect).
  if (want === 'keyspace' || want === 'all' || want === 'everything') {
    let n = 0;
    await eachKey(c.store, '', () => {
      n++;
      return true;
    });
    sections.push(n > 0 ? `# Keyspace\r\ndb0:keys=${n},expires=0,avg_ttl=0\r\n` : '# Keyspace\r\n');
  }
  return sections.join('\r\n');
}

/** The settings clients probe with CONFIG GET, answered with what Pithos does. */
function configGet(c: Call): Reply {
  const known: Record<string, string> = {
    databases: '1',
    appendonly: 'yes',
    appendfsync: 'always',
    save: '',
    maxmemory: '0',
    'maxmemory-policy': 'noeviction',
    timeout: '0',
    'notify-keyspace-events': KEYSPACE.get(),
    'proto-max-bulk-len': String(512 * 1024 * 1024),
    port: String(c.server.port),
  };
  const out: Array<[Reply, Reply]> = [];
  const seen = new Set<string>();
  for (const pat of c.args.slice(2)) {
    // A name without a wildcard answers under the name as asked (Redis: CONFIG GET Port gives Port).
    if (!/[*?[]/.test(pat)) {
      const k = pat.toLowerCase();
      if (Object.hasOwn(known, k) && !seen.has(k)) {
        seen.add(k);
        out.push([pat, known[k]!]);
      }
      continue;
    }
    const re = new RegExp(
      '^' +
        pat
          .replace(/[.+^${}()|[\]\\]/g, '\\$&')
          .replace(/\*/g, '.*')
          .replace(/\?/g, '.') +
        '$',
      'i',
    );
    for (const [k, v] of Object.entries(known))
      if (re.test(k) && !seen.has(k)) {
        seen.add(k);
        out.push([k, v]);
      }
  }
  return new MapReply(out);
}

export const CONNECTION_COMMANDS: Command[] = [
  {
    name: 'ping',
    arity: -1,
    flags: ['fast', 'stale'],
    keys: [0, 0, 0],
    summary: 'PONG, or the message',
    bytes: true,
    run: (c) => {
      if (c.args.length > 2) throw new ErrorReply("ERR wrong number of arguments for 'ping' command");
      return c.args.length === 2 ? (c.raw?.[1] ?? c.args[1]!) : new Simple('PONG');
    },
  },
  { name: 'echo', arity: 2, flags: ['fast'], keys: [0, 0, 0], summary: 'the message', bytes: true, run: (c) => c.raw?.[1] ?? c.args[1]! },
  {
    name: 'wait',
    arity: 3,
    flags: ['noscript'],
    keys: [0, 0, 0],
    summary: '0 at once: no Redis replicas, and every write is durable before its answer',
    run: (c) => {
      // Redis reads the timeout first, with its own error texts; 0 replicas acknowledged, since Pithos has none to wait for.
      let timeout: bigint;
      try {
        timeout = int64(c.args[2]!);
      } catch {
        throw new ErrorReply('ERR timeout is not an integer or out of range');
      }
      if (timeout < 0n) throw new ErrorReply('ERR timeout is negative');
      int64(c.args[1]!);
      return 0;
    },
  },
  { name: 'time', arity: 1, flags: ['fast', 'loading', 'stale'], keys: [0, 0, 0], summary: 'server time', run: () => timeReply() },
  { name: 'client', arity: -2, flags: ['loading', 'stale'], keys: [0, 0, 0], summary: 'ID, SETNAME, GETNAME, INFO, LIST, KILL (own connections)', run: client },
  { name: 'info', arity: -1, flags: ['loading', 'stale'], keys: [0, 0, 0], summary: 'server, clients, persistence, stats, keyspace', run: info },
  {
    name: 'config',
    arity: -2,
    flags: ['admin', 'loading', 'stale'],
    keys: [0, 0, 0],
    summary: 'GET of the settings clients probe; SET notify-keyspace-events only',
    run: (c) => {
      if (is(c.args[1], 'GET')) {
        if (c.args.length < 3) throw new ErrorReply("ERR wrong number of arguments for 'config|get' command");
        return configGet(c);
      }
      if (is(c.args[1], 'RESETSTAT')) {
        if (c.args.length !== 2) throw new ErrorReply("ERR wrong number of arguments for 'config|resetstat' command");
        return OK;
      }
      // Keyspace notifications (keyspace-events.ts) are the one setting CONFIG SET changes.
      if (is(c.args[1], 'SET') && c.args.length === 4 && c.args[2]!.toLowerCase() === 'notify-keyspace-events') {
        KEYSPACE.set(c.args[3]!);
        return OK;
      }
      if (is(c.args[1], 'SET') && c.args.length >= 3)
        throw new ErrorReply(
          `ERR CONFIG SET of '${c.args[2]}' is not supported by Pithos: notify-keyspace-events is the one setting it changes (docs/redis.md)`,
        );
      throw new ErrorReply(`ERR CONFIG ${c.args[1]} is not supported by Pithos (docs/redis.md)`);
    },
  },
];

function timeReply(): Reply {
  const us = BigInt(Date.now()) * 1000n;
  return [String(us / 1000000n), String(us % 1000000n)];
}
