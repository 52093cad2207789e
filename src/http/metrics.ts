/**
 * GET /metrics: Prometheus text exposition (docs/operations.md, "Metrics") with
 * prom-client. Families are named pithos_*, in base units (seconds, bytes),
 * counters end in _total. Request figures are labelled with the route
 * TEMPLATE from the route table (routes.ts), never the raw path, so label
 * cardinality is bounded by the table: anything that matched no route is
 * `route="unmatched"`, and a method outside the table is `method="other"`.
 *
 * Hot path: prom-client's labelled Counter.inc + Histogram.observe cost about
 * 0.9 + 1.4 µs per request (label validation, hashing, object building),
 * against ~15 µs of server CPU per GET: far over the 3 % budget.
 * So the two request families are kept here, in one preallocated cell per
 * (route, method, status) found without building a string, and written out
 * by this module (`requestText`) after prom-client's own output. A request
 * costs two performance.now() calls, one lookup, a bucket scan and one
 * 'finish' listener (a shared function, no closure). Everything else (engine
 * figures, process defaults) is prom-client: engine histograms are observed
 * once per group commit, counters and gauges are read at scrape time.
 */
import type * as http from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';
import { timingSafeEqual } from 'node:crypto';
import { Counter, Gauge, Histogram, Registry, Summary, collectDefaultMetrics } from 'prom-client';
import type { StorageMetrics, StorageObserver, StorageStats } from '../store/store.js';
import type { BatchObserver, StoreAvailability } from '../store/store.js';
import type { Ctx } from './context.js';
import { probeOf } from './probes.js';
import type { RouteDef } from './route-def.js';

/** What the Redis protocol listener counts, for /metrics. */
export interface RedisFigures {
  readonly commands: ReadonlyMap<string, { calls: number; errors: number }>;
  connections(): number;
}

/** What the metrics read from storage (the log store's engine), through the store. */
export type MetricsSource = StorageMetrics;

/** One (route, method, status): a count, a sum and non-cumulative bucket counts (the last is +Inf). */
class Cell {
  count = 0;
  sum = 0;
  readonly buckets = new Float64Array(LATENCY_BUCKETS.length + 1);
  constructor(readonly labels: string) {}
}

const esc = (v: string): string => v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');

const METHODS = new Set(['GET', 'PUT', 'POST', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS']);
const LATENCY_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const IO_BUCKETS = [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1];
const START = Symbol('pithos.metrics.start');

/** A request as the server marks it: when it started, and the route it matched (router.ts), of which only the template and method are read. */
type Timed = IncomingMessage & { [START]?: number; route?: { readonly def: Pick<RouteDef, 'path' | 'method'> } };

/** Storage figures counted as plain numbers; exported as counters when scraped. */
class StorageCounts implements StorageObserver {
  cacheHits = 0;
  cacheMisses = 0;
  compactions = 0;
  compactedIn = 0;
  compactedOut = 0;
  writtenBytes = 0;
  constructor(
    private readonly write: Histogram,
    private readonly sync: Histogram,
    private readonly group: Histogram,
  ) {}
  logWrite(batches: number, bytes: number, seconds: number): void {
    this.write.observe(seconds);
    this.group.observe(batches);
    this.writtenBytes += bytes;
  }
  logSync(seconds: number): void {
    this.sync.observe(seconds);
  }
  cacheHit(): void {
    this.cacheHits++;
  }
  cacheMiss(): void {
    this.cacheMisses++;
  }
  compacted(bytesIn: number, bytesOut: number): void {
    this.compactions++;
    this.compactedIn += bytesIn;
    this.compactedOut += bytesOut;
  }
}

/** A counter whose value is read from `get` at scrape time. */
function pulledCounter(registry: Registry, name: string, help: string, get: () => number): Counter {
  return new Counter({
    name,
    help,
    registers: [registry],
    collect() {
      this.reset();
      this.inc(get());
    },
  });
}

function pulledGauge(registry: Registry, name: string, help: string, get: () => number): Gauge {
  return new Gauge({
    name,
    help,
    registers: [registry],
    collect() {
      this.set(get());
    },
  });
}

/** The shared store's group commit (docs/operations.md, "Metrics"), observed once per batch: prom-client's cost is shared by the batch's writes. */
function batchHistograms(r: Registry, batches: (o: BatchObserver) => void): void {
  const size = new Histogram({
    name: 'pithos_store_batch_writes',
    help: 'Writes sent to the shared database together in one batch (group commit; 1: a write sent alone)',
    buckets: [1, 2, 4, 8, 16, 32, 64],
    registers: [r],
  });
  const rtt = new Histogram({
    name: 'pithos_store_batch_duration_seconds',
    help: "Time from sending one batch of writes to the shared database to its answer (the batch's round trip and commit)",
    buckets: IO_BUCKETS,
    registers: [r],
  });
  batches((ops, seconds) => {
    size.observe(ops);
    rtt.observe(seconds);
  });
}

/** monitorEventLoopDelay samples every 10 ms and records how late each sample came, plus these 10 ms. */
const LOOP_RESOLUTION_S = 0.01;

/**
 * Event-loop delay as a summary: the quantiles cover the time since the
 * previous scrape (the node histogram is reset at each), `_sum` and `_count`
 * every sample since start, as the format wants them (rate(_sum)/rate(_count)
 * is the mean delay). prom-client's Summary computes quantiles from its own
 * observations, and these come from the node histogram, so get() is replaced.
 */
class LoopLag extends Summary<'quantile'> {
  private count = 0;
  private sum = 0;
  constructor(private readonly loop: IntervalHistogram) {
    super({
      name: 'pithos_event_loop_lag_seconds',
      help: 'Event-loop delay: quantiles since the previous scrape (quantile 1 = the worst), sum and count of the 10 ms samples since start',
      registers: [],
    });
  }
  override async get(): ReturnType<Summary<'quantile'>['get']> {
    const loop = this.loop;
    const n = loop.count;
    const late = (ns: number): number => (n === 0 ? 0 : Math.max(0, ns / 1e9 - LOOP_RESOLUTION_S));
    const values = [
      { labels: { quantile: 0.5 }, value: late(loop.percentile(50)) },
      { labels: { quantile: 0.99 }, value: late(loop.percentile(99)) },
      { labels: { quantile: 1 }, value: late(loop.max) },
    ];
    if (n > 0) {
      this.count += n;
      this.sum += late(loop.mean) * n;
    }
    loop.reset();
    const base = await super.get();
    return {
      ...base,
      values: [...values, { metricName: `${base.name}_sum`, labels: {}, value: this.sum }, { metricName: `${base.name}_count`, labels: {}, value: this.count }],
    };
  }
}

export class Metrics {
  readonly registry = new Registry();
  /** Request cells by route definition (no string is built per request), then by status. */
  private readonly byRoute = new Map<object, Cell[]>();
  /** Requests that matched no route, by method (a method outside the table is 'other'). */
  private readonly unmatched = new Map<string, Cell[]>();
  private readonly cells: Cell[] = [];
  /** Requests the web console sent (header x-pithos-console), also counted in the cells: a dashboard subtracts them. */
  private consoleCount = 0;
  private consoleSeconds = 0;
  private readonly loop: IntervalHistogram;
  private source: MetricsSource | undefined;
  private stats: StorageStats | undefined;

  /**
   * `watchers`: open change-feed subscriptions (the watch hub's size); `store`: a database store's availability;
   * `batches`: where a store that batches its writes (the shared store's group commit) reports each batch.
   */
  constructor(source: MetricsSource | undefined, watchers: () => number = () => 0, store?: () => StoreAvailability, batches?: (o: BatchObserver) => void) {
    const r = this.registry;
    collectDefaultMetrics({ register: r });
    // Gauges named _total (each the sum of its nodejs_active_*{type} family):
    // promtool check metrics rejects the name on anything but a counter.
    for (const n of ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total']) r.removeSingleMetric(n);
    // The log store's engine feeds these; the shared store has no log, cache or compactor (docs/operations.md, "Metrics").
    if (source !== undefined) {
      const write = new Histogram({
        name: 'pithos_log_write_duration_seconds',
        help: 'Time to write one group commit to the log (write(2))',
        buckets: IO_BUCKETS,
        registers: [r],
      });
      const sync = new Histogram({
        name: 'pithos_log_fsync_duration_seconds',
        help: 'Time of one fdatasync of the log',
        buckets: IO_BUCKETS,
        registers: [r],
      });
      const group = new Histogram({
        name: 'pithos_group_commit_batches',
        help: 'Batches (one per write request) written together in one group commit',
        buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024],
        registers: [r],
      });
      const c = new StorageCounts(write, sync, group);
      pulledCounter(r, 'pithos_log_written_bytes_total', 'Bytes appended to the log by writes', () => c.writtenBytes);
      pulledCounter(r, 'pithos_cache_hits_total', 'Reads answered from the in-memory value cache', () => c.cacheHits);
      pulledCounter(r, 'pithos_cache_misses_total', 'Reads that had to read the value from disk', () => c.cacheMisses);
      pulledCounter(r, 'pithos_compaction_runs_total', 'Compaction passes completed', () => c.compactions);
      pulledCounter(r, 'pithos_compaction_read_bytes_total', 'Segment bytes read by completed compaction passes', () => c.compactedIn);
      pulledCounter(r, 'pithos_compaction_written_bytes_total', 'Bytes written by completed compaction passes', () => c.compactedOut);
      source.observe(c);
      // One stats() walk per scrape (taken in text()), shared by the gauges below.
      this.source = source;
      const stats = (): StorageStats => (this.stats ??= source.stats());
      pulledGauge(
        r,
        'pithos_keys',
        'Keys in the key directory: every top-level object, table rows, list items, set and sorted-set members, index definitions and entries',
        () => stats().keys,
      );
      pulledGauge(
        r,
        'pithos_objects',
        'Top-level objects: tables, records, variants, locks, lists, sets, sorted sets (what /health key_count counts, before expiry)',
        () => stats().topLevelKeys,
      );
      pulledGauge(r, 'pithos_live_bytes', 'Bytes of current versions in the log', () => stats().liveBytes);
      pulledGauge(r, 'pithos_dead_bytes', 'Bytes in the log that compaction can reclaim', () => stats().deadBytes);
      pulledGauge(r, 'pithos_segments', 'Log segment files', () => stats().segments);
      pulledGauge(r, 'pithos_cache_bytes', 'Bytes held by the value cache', () => stats().cacheBytes);
    }
    pulledGauge(r, 'pithos_watchers', 'Open change-feed watchers (GET /watch)', watchers);
    if (store !== undefined) {
      // The shared store's database: read from its cached state, never a query per scrape.
      pulledGauge(r, 'pithos_store_ready', 'Whether a writable primary of the shared database answered within the last few seconds (1) or not (0)', () =>
        store().ready ? 1 : 0,
      );
      pulledGauge(r, 'pithos_store_down_seconds', 'How long the shared database has been unavailable (0 while it serves)', () => store().downForMs / 1e3);
      pulledCounter(
        r,
        'pithos_store_failovers_total',
        'Times the writable primary changed (another server, or the same one restarted)',
        () => store().failovers,
      );
      pulledCounter(
        r,
        'pithos_store_unavailable_total',
        "Operations refused because the shared database could not serve them (requests answered 503, and the node's own sweeps and feed polls)",
        () => store().unavailable,
      );
    }
    if (batches !== undefined) batchHistograms(r, batches);
    this.loop = monitorEventLoopDelay({ resolution: 10 });
    this.loop.enable();
    r.registerMetric(new LoopLag(this.loop));
  }

  /**
   * The Redis protocol's figures (docs/redis.md, "Metrics"), read at scrape
   * time: commands answered and those answered with an error, labelled with
   * the command table's names, and open connections.
   */
  observeRedis(src: RedisFigures): void {
    const r = this.registry;
    new Counter({
      name: 'pithos_redis_commands_total',
      help: 'Redis protocol commands answered, by command (unknown names as "unknown")',
      labelNames: ['command'],
      registers: [r],
      collect() {
        this.reset();
        for (const [command, c] of src.commands) this.inc({ command }, c.calls);
      },
    });
    new Counter({
      name: 'pithos_redis_command_errors_total',
      help: 'Redis protocol commands answered with an error reply, by command',
      labelNames: ['command'],
      registers: [r],
      collect() {
        this.reset();
        for (const [command, c] of src.commands) if (c.errors > 0) this.inc({ command }, c.errors);
      },
    });
    pulledGauge(r, 'pithos_redis_connections', 'Open Redis protocol connections', () => src.connections());
  }

  /** Starts timing every request of `server`; the handler of this server's /metrics serves the figures. */
  attach(server: http.Server): void {
    // The clock must start before the server's own request handler runs. With
    // one handler, wrap it: a second 'request' listener would make every emit
    // copy the listener array (measured in the A/B, docs/operations.md).
    const handlers = server.listeners('request') as Array<(req: IncomingMessage, res: ServerResponse) => void>;
    if (handlers.length === 1) {
      const h = handlers[0];
      server.removeListener('request', h);
      const self = this;
      server.on('request', function (this: http.Server, req: IncomingMessage, res: ServerResponse) {
        const start = performance.now();
        h.call(this, req, res);
        // A handler that answered synchronously (a cached read) is done: count
        // it now, without a listener or a field on the request.
        if (res.writableEnded) self.record(req as Timed, res, start);
        else watch(req, res, start);
      });
    } else {
      server.prependListener('request', (req: IncomingMessage, res: ServerResponse) => watch(req, res, performance.now()));
    }
    attached = this;
  }

  /** Counts one answered request that started at `start` (performance.now()). */
  record(req: Timed, res: ServerResponse, start: number): void {
    const seconds = (performance.now() - start) / 1e3;
    const def = req.route?.def;
    let byStatus: Cell[] | undefined;
    let probe: 'livez' | 'readyz' | undefined;
    if (def !== undefined) {
      byStatus = this.byRoute.get(def);
      if (byStatus === undefined) this.byRoute.set(def, (byStatus = []));
    } else {
      // Probes are answered before routing (probes.ts): labelled with their path, not 'unmatched'.
      probe = req.method === 'GET' ? probeOf(req.url) : undefined;
      const m = probe ?? (METHODS.has(req.method ?? '') ? (req.method as string) : 'other');
      byStatus = this.unmatched.get(m);
      if (byStatus === undefined) this.unmatched.set(m, (byStatus = []));
    }
    const st = res.statusCode;
    let cell = byStatus[st];
    if (cell === undefined) {
      const route = def !== undefined ? def.path : probe !== undefined ? `/${probe}` : 'unmatched';
      const method = def !== undefined ? def.method : METHODS.has(req.method ?? '') ? (req.method as string) : 'other';
      cell = byStatus[st] = new Cell(`route="${esc(route)}",method="${esc(method)}",status="${st}"`);
      this.cells.push(cell);
    }
    cell.count++;
    cell.sum += seconds;
    if (req.headers['x-pithos-console'] !== undefined) {
      this.consoleCount++;
      this.consoleSeconds += seconds;
    }
    const b = LATENCY_BUCKETS;
    let i = 0;
    while (i < b.length && seconds > b[i]) i++;
    cell.buckets[i]++;
  }

  /** The two request families, in the text format, written here (see the top of this file). */
  requestText(): string {
    const out: string[] = [
      '# HELP pithos_http_requests_total HTTP requests answered, by route template, method and status',
      '# TYPE pithos_http_requests_total counter',
    ];
    for (const c of this.cells) out.push(`pithos_http_requests_total{${c.labels}} ${c.count}`);
    out.push(
      '# HELP pithos_http_request_duration_seconds Time from the parsed request headers to the end of the answer ' +
        '(written at once, or the response closed), by route template, method and status',
    );
    out.push('# TYPE pithos_http_request_duration_seconds histogram');
    for (const c of this.cells) {
      let cum = 0;
      for (let i = 0; i < LATENCY_BUCKETS.length; i++) {
        cum += c.buckets[i];
        out.push(`pithos_http_request_duration_seconds_bucket{le="${LATENCY_BUCKETS[i]}",${c.labels}} ${cum}`);
      }
      cum += c.buckets[LATENCY_BUCKETS.length];
      out.push(`pithos_http_request_duration_seconds_bucket{le="+Inf",${c.labels}} ${cum}`);
      out.push(`pithos_http_request_duration_seconds_sum{${c.labels}} ${c.sum}`);
      out.push(`pithos_http_request_duration_seconds_count{${c.labels}} ${c.count}`);
    }
    out.push(
      "# HELP pithos_http_console_requests_total Answered requests that carried the web console's X-Pithos-Console header (also counted in pithos_http_requests_total)",
    );
    out.push('# TYPE pithos_http_console_requests_total counter');
    out.push(`pithos_http_console_requests_total ${this.consoleCount}`);
    out.push('# HELP pithos_http_console_request_seconds_total Time spent answering those requests (also in pithos_http_request_duration_seconds)');
    out.push('# TYPE pithos_http_console_request_seconds_total counter');
    out.push(`pithos_http_console_request_seconds_total ${this.consoleSeconds}`);
    return out.join('\n') + '\n';
  }

  /** The exposition text: the request families, then everything prom-client holds. */
  async text(): Promise<string> {
    this.stats = this.source?.stats();
    return this.requestText() + '\n' + (await this.registry.metrics());
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  close(): void {
    this.loop.disable();
  }
}

/** The process's metrics (one server per process); undefined until attached. */
let attached: Metrics | undefined;

/** A request still being answered: counted when its response closes. */
function watch(req: IncomingMessage, res: ServerResponse, start: number): void {
  (req as Timed)[START] = start;
  // 'close', not 'finish': node:http always listens for 'finish' itself, so a
  // second listener there costs an array per response and a copy per emit.
  res.on('close', onClose);
}

function onClose(this: ServerResponse): void {
  // A response cut off before it was sent (the client went away) is not counted.
  const req = this.req as Timed;
  const start = req[START];
  if (this.writableFinished && start !== undefined) attached?.record(req, this, start);
}

/** GET /metrics. Served as Prometheus text, not the JSON envelope. */
export async function serveMetrics(_ctx: Ctx, _name: string, _body: unknown, res: ServerResponse): Promise<void> {
  const m = attached;
  if (m === undefined) {
    res.writeHead(404, ['Content-Type', 'application/json; charset=utf-8']);
    res.end('{"status":"error","message":"metrics are not enabled"}');
    return;
  }
  const body = Buffer.from(await m.text());
  res.writeHead(200, ['Content-Type', m.contentType, 'Content-Length', String(body.length)]);
  res.end(body);
}

/**
 * The second credential of /metrics (docs/operations.md, "Metrics"): `Authorization: Bearer
 * <--metrics-token>`, for scrapers that should not hold the server secret. Only
 * GET /metrics accepts it; server.ts asks it only when the Auth-Token check fails.
 */
export function metricsBearer(token: string): (req: IncomingMessage) => boolean {
  const want = Buffer.from(`Bearer ${token}`, 'latin1');
  const scratch = Buffer.alloc(want.length);
  return (req) => {
    const h = req.headers.authorization;
    if (req.method !== 'GET' || typeof h !== 'string' || h.length !== want.length) return false;
    const u = req.url ?? '';
    if (u !== '/metrics' && !u.startsWith('/metrics?')) return false;
    scratch.write(h, 0, 'latin1');
    return timingSafeEqual(scratch, want);
  };
}
