/**
 * Health in words and units, and charts of the server's load over the last ten minutes.
 * One /health and one /metrics request every 5 s; the request-rate and latency charts
 * leave out the console's own requests (pithos_http_console_requests_total, counted by the
 * server from the X-Pithos-Console header every console request carries).
 */
import { useRef, useState } from 'preact/hooks';
import { type Health, type Pithos, PithosError } from '../../client/index.js';
import { Chart, type Series } from '../components/Chart.js';
import { errorText } from '../lib/api.js';
import { bytes, gcState, healthBytes } from '../lib/format.js';
import { useInterval } from '../lib/hooks.js';

export const POLL_MS = 5000;
const WINDOW_S = 600;
const KEEP = WINDOW_S / (POLL_MS / 1000);

/** Sums every sample of the named metric in Prometheus text; NaN when absent. */
export function metric(text: string, name: string): number {
  let sum = 0;
  let found = false;
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const m = /^([a-zA-Z_:][\w:]*)(\{[^}]*\})?\s+(\S+)/.exec(line);
    if (m && m[1] === name) {
      sum += Number(m[3]);
      found = true;
    }
  }
  return found ? sum : NaN;
}

interface Sample {
  t: number;
  requests: number;
  seconds: number;
  count: number;
}

const empty = (): Series => ({ t: [], v: [] });
function push(s: Series, t: number, v: number | null): Series {
  const out = { t: [...s.t, t], v: [...s.v, v] };
  if (out.t.length > KEEP) {
    out.t.shift();
    out.v.shift();
  }
  return out;
}

const rate = (v: number): string => `${v < 10 ? +v.toFixed(2) : Math.round(v)}/s`;
const ms = (v: number): string => `${v < 10 ? +v.toFixed(2) : Math.round(v)} ms`;

export function Dashboard({ db }: { db: Pithos }) {
  const [health, setHealth] = useState<Health | null>(null);
  const [healthError, setHealthError] = useState('');
  const [metricsNote, setMetricsNote] = useState('');
  const [m, setM] = useState<{ live: number; dead: number; watchers: number }>({ live: NaN, dead: NaN, watchers: NaN });
  const [charts, setCharts] = useState({ rate: empty(), latency: empty(), live: empty(), disk: empty() });
  const prev = useRef<Sample | undefined>(undefined);
  const metricsOn = useRef(true);

  const tick = async (): Promise<void> => {
    const t = Date.now() / 1000;
    let h: Health | null = null;
    try {
      h = await db.health();
      setHealth(h);
      setHealthError('');
    } catch (err) {
      setHealthError(errorText(err));
    }
    let text = '';
    if (metricsOn.current) {
      try {
        text = await db.metrics();
        setMetricsNote('');
      } catch (err) {
        if (err instanceof PithosError && (err.status === 404 || err.status === 403)) metricsOn.current = false;
        setMetricsNote(`Request-rate and latency charts need GET /metrics; the server answered ${errorText(err)}.`);
      }
    }
    const live = text ? metric(text, 'pithos_live_bytes') : NaN;
    const dead = text ? metric(text, 'pithos_dead_bytes') : NaN;
    setM({ live, dead, watchers: text ? metric(text, 'pithos_watchers') : NaN });
    let r: number | null = null;
    let lat: number | null = null;
    if (text) {
      const s: Sample = {
        t,
        requests: metric(text, 'pithos_http_requests_total') - (metric(text, 'pithos_http_console_requests_total') || 0),
        seconds: metric(text, 'pithos_http_request_duration_seconds_sum') - (metric(text, 'pithos_http_console_request_seconds_total') || 0),
        count: metric(text, 'pithos_http_request_duration_seconds_count') - (metric(text, 'pithos_http_console_requests_total') || 0),
      };
      const p = prev.current;
      if (p && s.t > p.t) {
        r = Math.max(0, (s.requests - p.requests) / (s.t - p.t));
        lat = s.count > p.count ? ((s.seconds - p.seconds) / (s.count - p.count)) * 1000 : null;
      }
      prev.current = s;
    }
    setCharts((c) => ({
      rate: text ? push(c.rate, t, r) : c.rate,
      latency: text ? push(c.latency, t, lat) : c.latency,
      live: push(c.live, t, Number.isFinite(live) ? live : h ? healthBytes(h.space_total) : null),
      disk: push(c.disk, t, h ? healthBytes(h.disk_used) : null),
    }));
  };
  useInterval(() => void tick(), POLL_MS, true);

  const diskTotal = health ? healthBytes(health.disk_total) : NaN;
  const memTotal = health ? healthBytes(health.mem_total) : NaN;
  const figure = (k: string, label: string, v: string, sub?: string) => (
    <div class="figure" key={k}>
      <div class="k">{label}</div>
      <div class={k === 'gc_state' ? 'v words' : 'v'} data-figure={k}>
        {v}
      </div>
      {sub ? <div class="sub muted">{sub}</div> : null}
    </div>
  );
  return (
    <>
      <h1>Dashboard</h1>
      <h2>Health</h2>
      {healthError ? (
        <p class="msg error" role="alert">
          {healthError}
        </p>
      ) : null}
      {health ? (
        <div class="figures" id="health">
          {figure('key_count', 'Objects', String(health.key_count), 'tables, records, variants, locks, lists, sets, sorted sets')}
          {figure('gc_state', 'Compaction', gcState(health.gc_state))}
          {figure(
            'disk_used',
            'Disk used',
            bytes(healthBytes(health.disk_used)),
            `of ${bytes(diskTotal)} (${health.disk_percent.replace('%', ' %')}); ${bytes(healthBytes(health.disk_free))} free`,
          )}
          {figure('memory', 'Memory free', bytes(healthBytes(health.mem_free)), `of ${bytes(memTotal)}`)}
          {figure(
            'live_data',
            'Live data',
            Number.isFinite(m.live) ? bytes(m.live) : bytes(healthBytes(health.space_total)),
            Number.isFinite(m.dead) ? `${bytes(m.dead)} reclaimable by compaction` : 'current versions in the log',
          )}
          {Number.isFinite(m.watchers) ? figure('watchers', 'Change-feed watchers', String(m.watchers)) : null}
        </div>
      ) : healthError ? null : (
        <p class="muted">loading…</p>
      )}
      <h2>Load</h2>
      <p class="muted">Sampled every {POLL_MS / 1000} s, last 10 minutes. Requests and latency leave out this console's own requests.</p>
      {metricsNote ? (
        <p class="note" id="metrics-note">
          {metricsNote}
        </p>
      ) : null}
      <div class="charts">
        {metricsOn.current ? (
          <Chart id="chart-rate" title="Requests (not the console's)" series={charts.rate} format={rate} floor={1} windowS={WINDOW_S} />
        ) : null}
        {metricsOn.current ? <Chart id="chart-latency" title="Mean latency" series={charts.latency} format={ms} floor={1} windowS={WINDOW_S} /> : null}
        <Chart id="chart-live" title="Live data" series={charts.live} format={bytes} floor={1024 * 1024} windowS={WINDOW_S} binary />
        <Chart
          id="chart-disk"
          title={Number.isFinite(diskTotal) ? `Disk used, of ${bytes(diskTotal)}` : 'Disk used'}
          series={charts.disk}
          format={bytes}
          floor={1024 * 1024}
          windowS={WINDOW_S}
          binary
        />
      </div>
      <p class="muted keys">
        Keys: <kbd>1</kbd>–<kbd>9</kbd>, <kbd>0</kbd> switch sections, <kbd>/</kbd> jumps to the first field.
      </p>
    </>
  );
}
