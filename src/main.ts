/**
 * The `pithos` command: parse configuration, open the data directory, serve
 * PQL over HTTP until SIGTERM/SIGINT, then drain, flush and exit 0.
 */
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { BlockList, createServer } from 'node:net';
import { type Config, ConfigError, effectiveConfig, parseConfig, parseSubnet, usage } from './config.js';
import { LogStore } from './store/log/log-store.js';
import { PgStore } from './store/postgres/index.js';
import type { Store } from './store/store.js';
import { PithosServer } from './http/server.js';
import { WatchHub } from './http/watch.js';
import { effectiveMaxConnections } from './http/connections.js';
import { Health } from './health.js';
import { Metrics, metricsBearer } from './http/metrics.js';
import { log, setLogFormat } from './log.js';
import { LOCK_FILE, assertHoldsData, type Keyring, loadKeyring, makeDirectory, nodeFileOps, writeFileDurably } from './engine/index.js';
import { keyCheck, rekey } from './rekey.js';
import { Authenticator, parseTokens, type TokenEntry } from './http/auth.js';
import { Cors } from './http/cors.js';
import { ROUTES } from './http/routes.js';
import { AccessLog } from './http/access.js';
import { loadTls, reloadTls, type TlsFiles, type TlsMaterial } from './tls.js';
import { RespServer } from './redis/listener.js';
import { RestRunner } from './redis/upstash.js';
import { HUB } from './redis/pubsub.js';
import { KEYSPACE } from './redis/keyspace-events.js';

const TOKEN_FILE = 'auth-token';
/** The role an open /watch stream must keep through a reload of the tokens file: the route's own. */
const WATCH_ROLE = ROUTES.find((r) => r.method === 'GET' && r.path === '/watch')?.role ?? 'read';

function version(): string {
  const pkg = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'package.json');
  return (JSON.parse(fs.readFileSync(pkg, 'utf8')) as { version: string }).version;
}

/** The configured secret, else the one kept in the data directory, else a new one stored there (0600). */
async function resolveToken(cfg: Config): Promise<{ token: string; generated: boolean; created: boolean }> {
  if (cfg.authToken !== undefined) return { token: cfg.authToken, generated: false, created: false };
  const file = path.join(cfg.dataDir, TOKEN_FILE);
  try {
    const t = fs.readFileSync(file, 'utf8').trim();
    if (t.length > 0) return { token: t, generated: true, created: false };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  // New (or an empty file left by a crash): write it whole and durably, so a
  // client that saw this token can use it after any restart.
  const token = randomBytes(24).toString('base64url');
  await writeFileDurably(nodeFileOps, file, Buffer.from(token + '\n'), 0o600);
  return { token, generated: true, created: true };
}

function allowList(cfg: Config): BlockList | undefined {
  if (cfg.allowFrom.length === 0) return undefined;
  const list = new BlockList();
  for (const s of cfg.allowFrom) {
    const [addr, prefix, family] = parseSubnet(s) as [string, number, 'ipv4' | 'ipv6'];
    list.addSubnet(addr, prefix, family);
  }
  return list;
}

/** What a failed listen means to the person starting the server. */
function listenError(err: unknown, host: string, port: number): Error {
  if ((err as NodeJS.ErrnoException).code === 'EADDRINUSE') {
    return new Error(`${host}:${port} is already in use; pick another port with --port (or PITHOS_PORT)`);
  }
  return err as Error;
}

/**
 * Binds the port once and lets it go, so that a port in use stops the start
 * before the data directory, a segment or a generated token exists. Another
 * process can still take the port before the server listens; main() then
 * removes what this start created.
 */
function assertCanListen(host: string, port: number): Promise<void> {
  if (port === 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', (err) => reject(listenError(err, host, port)));
    probe.listen({ port, host, exclusive: true }, () => probe.close(() => resolve()));
  });
}

/**
 * Undoes what a failed start created, so that it leaves nothing behind: the
 * data directory (and its parents) if this start made them, else a token it
 * generated (its password was never printed).
 *
 * Another server may have started on the same directory at the same instant,
 * and one of them holds its lock (or is about to take it): nothing of its may
 * go. So files are removed only while this start's store still holds the lock
 * (the directory's files are then this start's), the lock is released by
 * closing the store, and the directories go with rmdir only, which refuses one
 * that another server has taken meanwhile. A start that never held the lock
 * (it lost it) removes no file at all: the server that won it serves from that
 * directory, and removing it under that server would let a third starter
 * create it again and take a fresh LOCK, two servers writing one log.
 */
async function undoStart(s: StartState, dataDir: string): Promise<void> {
  try {
    // The shared store takes no lock: there the directory holds only the token file.
    if (s.createdDir !== undefined && s.db instanceof LogStore) removeContents(dataDir);
    else if (s.tokenFile !== undefined) fs.rmSync(s.tokenFile, { force: true });
  } catch (err) {
    log('warn', `could not remove what the failed start created in ${dataDir}: ${(err as Error).message}`);
  }
  await s.db?.close().catch((err: unknown) => log('warn', `closing the store after the failed start: ${(err as Error)?.message ?? String(err)}`));
  if (s.createdDir !== undefined) removeEmptyDirectories(dataDir, s.createdDir);
}

/** Everything in `dir` but the lock's own files (LOCK, and a takeover's: another starter's, if any). */
function removeContents(dir: string): void {
  for (const name of fs.readdirSync(dir)) {
    if (!name.startsWith(LOCK_FILE)) fs.rmSync(path.join(dir, name), { recursive: true, force: true });
  }
}

/** `dir` and its parents up to `top`, each only if empty: one that is not has been taken by another server. */
function removeEmptyDirectories(dir: string, top: string): void {
  for (let d = path.resolve(dir); ; d = path.dirname(d)) {
    try {
      fs.rmdirSync(d);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'ENOTEMPTY' && code !== 'EEXIST') log('warn', `could not remove ${d}, created by the failed start: ${(err as Error).message}`);
      return;
    }
    if (d === top || path.dirname(d) === d) return;
  }
}

/** Reads and parses a tokens file; the reason is one line naming the file. */
function readTokens(file: string, mainToken?: string): TokenEntry[] {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    throw new Error(`cannot read tokens file ${file}: ${(err as Error).message}`);
  }
  try {
    return parseTokens(text, mainToken);
  } catch (err) {
    throw new Error(`tokens file ${file}: ${(err as Error).message}`);
  }
}

/**
 * SIGHUP reloads the tokens file and the TLS pair (docs/operations.md); each
 * one that fails keeps what is in force and says why. Before the server
 * serves there is nothing to reload, but the signal must not kill the
 * process (its default action) while the log is being replayed.
 */
let onHangup: (() => void) | undefined;
process.on('SIGHUP', () => {
  if (onHangup === undefined) log('warn', 'SIGHUP ignored: the server is still starting');
  else onHangup();
});

async function main(): Promise<number> {
  let cfg: Config;
  try {
    cfg = parseConfig(process.argv.slice(2), process.env);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`pithos: ${err.message}\n`);
      return 2;
    }
    throw err;
  }
  if (cfg.command === 'help') {
    process.stdout.write(usage() + '\n');
    return 0;
  }
  if (cfg.command === 'version') {
    process.stdout.write(version() + '\n');
    return 0;
  }
  if (cfg.command === 'print-config') {
    process.stdout.write(JSON.stringify(effectiveConfig(cfg), null, 2) + '\n');
    return 0;
  }
  setLogFormat(cfg.logFormat);
  // Files named by the configuration are checked before the data directory is
  // touched, so a typo is a bad-configuration exit (2) with nothing to undo.
  let tokens: TokenEntry[] = [];
  let tls: TlsMaterial | undefined;
  let keyring: Keyring | undefined;
  const tlsFiles: TlsFiles | undefined = cfg.tlsCert !== undefined && cfg.tlsKey !== undefined ? { cert: cfg.tlsCert, key: cfg.tlsKey } : undefined;
  try {
    if (cfg.tokensFile !== undefined) tokens = readTokens(cfg.tokensFile);
    if (tlsFiles !== undefined) tls = loadTls(tlsFiles);
    keyring = loadKeyring({
      keyFile: cfg.encryptionKeyFile,
      oldKeyFiles: cfg.encryptionOldKeyFiles,
      allowInsecure: cfg.allowInsecureKeyFile,
      secret: cfg.encryptionSecret === undefined ? undefined : { text: cfg.encryptionSecret, file: cfg.config as string },
    });
    if ((cfg.command === 'rekey' || cfg.command === 'key-check') && keyring === undefined) {
      throw new Error(`${cfg.command} needs the current key: --encryption-key-file (and --encryption-old-key-files for the keys to replace)`);
    }
  } catch (err) {
    process.stderr.write(`pithos: ${(err as Error).message}\n`);
    return 2;
  }
  // Repairing a mistyped path must fail, not create and "repair" an empty directory.
  if (cfg.command === 'repair' || cfg.command === 'rekey' || cfg.command === 'key-check') await assertHoldsData(cfg.dataDir);
  if (cfg.command === 'key-check') return keyCheck(path.resolve(cfg.dataDir), keyring as Keyring, (t) => process.stdout.write(t));
  if (cfg.command === 'rekey') return rekey(path.resolve(cfg.dataDir), keyring as Keyring, log);
  if (cfg.command !== 'repair') await assertCanListen(cfg.host, cfg.port);
  // A configured secret that is also in the tokens file is refused before anything is created.
  if (cfg.authToken !== undefined && tokens.some((t) => t.token === cfg.authToken)) {
    throw new Error(`tokens file ${cfg.tokensFile}: a token there is the main secret; give it its own value`);
  }
  const shared = cfg.store !== 'log';
  if (shared && cfg.command === 'repair') throw new Error('repair applies to the log store only; the shared database has its own tools');
  // What fails from here until the server listens is undone (undoStart).
  const start: StartState = { createdDir: undefined, db: undefined, tokenFile: undefined, listening: false };
  try {
    return await serve(cfg, tokens, tls, tlsFiles, keyring, shared, start);
  } catch (err) {
    if (start.listening) throw err;
    await undoStart(start, cfg.dataDir);
    throw fullDiskAtStart(err, cfg.dataDir) ?? err;
  }
}

/**
 * A full disk while starting (opening a new log segment, writing the
 * generated token) says what to free, as the lock does (lockfile.ts).
 */
function fullDiskAtStart(err: unknown, dir: string): Error | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  if (code !== 'ENOSPC' && code !== 'EDQUOT' && code !== 'STORAGE_FULL') return undefined;
  return new Error(
    `cannot start: the file system holding ${dir} is full (${(err as Error).message}). ` +
      `Free space on that file system, outside ${dir} (deleting files inside it loses data), or grow it, then start again`,
  );
}

/** What a start has created so far, for undoStart. */
interface StartState {
  /** The outermost directory this start created (the data directory or a missing parent), if any; not one another server created meanwhile. */
  createdDir: string | undefined;
  db: Store | undefined;
  /** The auth-token file, if this start generated it. */
  tokenFile: string | undefined;
  listening: boolean;
}

/** Opens the store and serves; resolves with the exit code once stopped. `start` records what to undo meanwhile. */
async function serve(
  cfg: Config,
  tokens: TokenEntry[],
  tls: TlsMaterial | undefined,
  tlsFiles: TlsFiles | undefined,
  keyring: Keyring | undefined,
  shared: boolean,
  start: StartState,
): Promise<number> {
  // The clock every expiry uses. PITHOS_TEST_CLOCK=1 lets tests move it forward.
  let offset = 0;
  const testClock = process.env.PITHOS_TEST_CLOCK === '1';
  const now = testClock ? () => Date.now() + offset : Date.now;

  const { db, dataDir } = await openStore(cfg, shared, keyring, now, () => offset, start);
  if (cfg.command === 'repair') {
    await db.close();
    log('info', `repair of ${dataDir} finished`);
    return 0;
  }
  const { token, generated, created } = await resolveToken({ ...cfg, dataDir });
  if (created) start.tokenFile = path.join(dataDir, TOKEN_FILE);
  const auth = new Authenticator(token);
  if (tokens.some((t) => t.token === token)) {
    throw new Error(`tokens file ${cfg.tokensFile}: a token there is the main secret; give it its own value`);
  }
  auth.setTokens(tokens);
  const conns = effectiveMaxConnections(cfg.maxConnections);
  if (conns.limitedBy !== undefined) {
    log('warn', `open-file limit is ${conns.limitedBy}: at most ${conns.max} connections (raise it with ulimit -n, or set --max-connections)`);
  }
  const watch = new WatchHub(db.changes);
  const metrics = new Metrics(db.storageMetrics?.(), () => watch.size, db.availability?.bind(db), db.observeBatches?.bind(db));
  // Pub/sub across the nodes of a shared store (docs/redis-rest.md, "Pub/sub").
  if (db.messages !== undefined) HUB.attach(db.messages);
  KEYSPACE.attach(db.changes);
  let httpPort = 0;
  // Upstash's REST protocol under /redis (docs/redis-rest.md): the command table, over HTTP.
  const runner = new RestRunner({ store: db, version: version(), storeName: shared ? 'postgres' : 'log', port: () => httpPort, log });
  const server = new PithosServer({
    ctx: { store: db, health: new Health(dataDir, db), advanceClock: testClock ? (ms) => (offset += ms) : undefined, watch, redis: { runner } },
    authToken: token,
    auth,
    cors: cfg.corsOrigin.length > 0 ? new Cors(cfg.corsOrigin, cfg.accessLog) : undefined,
    access: cfg.accessLog ? new AccessLog(log) : undefined,
    tls,
    maxBodyBytes: cfg.maxBodyBytes,
    testClock,
    allow: allowList(cfg),
    maxConnections: conns.max,
    altAuth: cfg.metricsToken === undefined ? undefined : metricsBearer(cfg.metricsToken),
    log,
  });
  metrics.attach(server.http);
  let addr: { port: number; host: string };
  try {
    addr = await server.listen(cfg.port, cfg.host);
    httpPort = addr.port;
  } catch (err) {
    throw listenError(err, cfg.host, cfg.port);
  }
  const resp = await startResp(cfg, db, auth, tls, conns.max, shared, server);
  if (resp !== undefined) metrics.observeRedis({ commands: resp.commands, connections: () => resp.connections });
  start.listening = true;
  log(
    'info',
    shared
      ? `pithos ${version()}: shared store ${cfg.store.replace(/:[^:@/]*@/, ':***@')}, pool ${cfg.pgPoolSize}, bound ${cfg.pgStatementTimeoutMs} ms`
      : `pithos ${version()}: data dir ${dataDir}, fsync ${cfg.fsync}`,
  );
  if (generated) log('info', `default password (send as Auth-Token): ${token}`);
  if (cfg.tokensFile !== undefined) log('info', `tokens file ${cfg.tokensFile}: ${auth.size} named token(s)`);
  if (testClock) log('warn', 'PITHOS_TEST_CLOCK=1: POST /_test/clock can move the clock; never use this in production');
  const shown = addr.host.includes(':') ? `[${addr.host}]` : addr.host;
  log('info', `listening on ${tls !== undefined ? 'https' : 'http'}://${shown}:${addr.port}`);
  onHangup = reloader(cfg, tlsFiles, auth, token, watch, server, resp);

  return untilStopped(server, watch, db, resp);
}

/** The Redis protocol listener when --resp-port is set (docs/redis.md); a port it cannot take stops the start. */
async function startResp(
  cfg: Config,
  db: Store,
  auth: Authenticator,
  tls: TlsMaterial | undefined,
  maxConnections: number,
  shared: boolean,
  server: PithosServer,
): Promise<RespServer | undefined> {
  if (cfg.respPort === undefined) return undefined;
  const resp = new RespServer({
    store: db,
    auth,
    tls,
    maxBulk: cfg.maxBodyBytes,
    maxConnections,
    version: version(),
    storeName: shared ? 'postgres' : 'log',
    log,
  });
  try {
    const port = await resp.listen(cfg.respPort, cfg.host);
    log('info', `Redis protocol on ${tls !== undefined ? 'rediss' : 'redis'}://${cfg.host.includes(':') ? `[${cfg.host}]` : cfg.host}:${port}`);
    return resp;
  } catch (err) {
    await server.shutdown(1000);
    throw listenError(err, cfg.host, cfg.respPort);
  }
}

/** The store `cfg` names, and the data directory (made when missing, for the log or the shared store's token file). */
async function openStore(
  cfg: Config,
  shared: boolean,
  keyring: Keyring | undefined,
  now: () => number,
  offsetMs: () => number,
  start: StartState,
): Promise<{ db: Store; dataDir: string }> {
  // The shared store is reached before the data directory is made: a store that refuses us creates nothing.
  const pg = shared
    ? await PgStore.open({
        url: cfg.store,
        hosts: cfg.pgHosts,
        targetSessionAttrs: cfg.pgTargetSessionAttrs,
        poolSize: cfg.pgPoolSize,
        statementTimeoutMs: cfg.pgStatementTimeoutMs,
        offsetMs,
        log,
      })
    : undefined;
  start.db = pg;
  // The log holds every value and lock token in clear: keep it to this user.
  start.createdDir = await makeDirectory(cfg.dataDir, 0o700);
  const dataDir = fs.realpathSync(cfg.dataDir);

  // The data directory keeps the generated auth token with either store.
  const db: Store =
    pg ??
    (await LogStore.open({
      dir: dataDir,
      durability: cfg.fsync,
      cacheBytes: cfg.cacheMb * 1024 * 1024,
      segmentBytes: cfg.segmentMb * 1024 * 1024,
      repair: cfg.repair,
      keyring,
      compression: cfg.compression,
      now,
      log,
    }));
  start.db = db;
  return { db, dataDir };
}

/** What SIGHUP does: reload the tokens file and the TLS certificate, keeping what is in force when a reload fails. */
function reloader(
  cfg: Config,
  tlsFiles: TlsFiles | undefined,
  auth: Authenticator,
  token: string,
  watch: WatchHub,
  server: PithosServer,
  resp: RespServer | undefined,
): () => void {
  return () => {
    if (cfg.tokensFile === undefined && tlsFiles === undefined) {
      log('info', 'SIGHUP: nothing to reload (no --tokens-file, no --tls-cert)');
      return;
    }
    if (cfg.tokensFile !== undefined) {
      try {
        auth.setTokens(readTokens(cfg.tokensFile, token));
        log('info', `SIGHUP: reloaded tokens file ${cfg.tokensFile}: ${auth.size} named token(s)`);
        // An open stream was authorised once, at its start: judge it again with the tokens now in force.
        const ended = watch.endUnless((req) => auth.check(req.headers['auth-token'], WATCH_ROLE, req.method, req.url).ok);
        if (ended > 0) log('info', `SIGHUP: ended ${ended} /watch stream(s) whose token was removed or no longer has the role`);
      } catch (err) {
        log('error', `SIGHUP: kept the tokens in force: ${(err as Error).message}`);
      }
    }
    if (tlsFiles !== undefined) {
      try {
        reloadTls(server.http, tlsFiles);
        if (resp !== undefined) reloadTls(resp.server, tlsFiles);
        log('info', `SIGHUP: reloaded TLS certificate ${tlsFiles.cert}`);
      } catch (err) {
        log('error', `SIGHUP: kept the TLS certificate in force: ${(err as Error).message}`);
      }
    }
  };
}

/** Resolves with the exit code once SIGTERM or SIGINT has drained the server and closed the store. */
function untilStopped(server: PithosServer, watch: WatchHub, db: Store, resp: RespServer | undefined): Promise<number> {
  return new Promise<number>((resolve) => {
    let stopping = false;
    const stop = (signal: string): void => {
      if (stopping) {
        log('warn', `${signal} again: exiting without a clean shutdown`);
        process.exit(1);
      }
      stopping = true;
      log('info', `${signal}: draining requests, then flushing and closing`);
      // Event streams never finish on their own: end them so shutdown need not wait them out.
      watch.close();
      Promise.all([server.shutdown(10_000), resp?.close()])
        .then(() => db.close())
        .then(
          () => {
            log('info', 'stopped cleanly');
            resolve(0);
          },
          (err: unknown) => {
            log('error', `shutdown failed: ${String((err as Error)?.stack ?? err)}`);
            resolve(1);
          },
        );
    };
    process.on('SIGTERM', () => stop('SIGTERM'));
    process.on('SIGINT', () => stop('SIGINT'));
  });
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    log('error', `fatal: ${(err as Error)?.message ?? String(err)}`);
    process.exit(1);
  },
);
