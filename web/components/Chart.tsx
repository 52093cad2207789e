/**
 * A time-series chart (uPlot): a time axis, a value axis in the series' unit, and a value
 * scale that starts at zero (and reaches at least `floor`), so a small change looks small.
 * Colours come from the page's CSS variables and follow light/dark.
 */
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';

export interface Series {
  /** Unix seconds. */
  t: number[];
  v: (number | null)[];
}

/** Tick steps for sizes in bytes: powers of two, so that ticks fall on 256 MiB, 64 GiB… */
const BINARY = Array.from({ length: 51 }, (_, i) => 2 ** i);

export function Chart(props: {
  id: string;
  title: string;
  series: Series;
  format: (v: number) => string;
  floor?: number;
  max?: number;
  windowS: number;
  binary?: boolean;
}) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const fmt = useRef(props.format);
  fmt.current = props.format;
  const limits = useRef({ floor: props.floor ?? 1, max: props.max });
  limits.current = { floor: props.floor ?? 1, max: props.max };
  const span = useRef(props.windowS);
  span.current = props.windowS;

  useEffect(() => {
    const el = box.current!;
    const make = (): void => {
      plot.current?.destroy();
      const css = getComputedStyle(document.documentElement);
      const fg = css.getPropertyValue('--muted').trim() || '#555';
      const line = css.getPropertyValue('--line').trim() || '#ccc';
      const accent = css.getPropertyValue('--accent').trim() || '#2456a6';
      const axis = { stroke: fg, grid: { stroke: line, width: 1 }, ticks: { stroke: line, width: 1 }, font: '12px system-ui, sans-serif' };
      plot.current = new uPlot(
        {
          width: Math.max(200, el.clientWidth),
          height: 170,
          legend: { show: false },
          cursor: { show: false },
          scales: {
            // A fixed window ending now: the time scale does not jump as samples arrive.
            x: {
              time: true,
              range: () => {
                const now = Date.now() / 1000;
                return [now - span.current, now];
              },
            },
            y: { range: (_u, _min, max) => [0, limits.current.max ?? Math.max((max ?? 0) * 1.15, limits.current.floor)] },
          },
          axes: [axis, { ...axis, size: 72, values: (_u, vals) => vals.map((v) => fmt.current(v)), ...(props.binary ? { incrs: BINARY } : {}) }],
          series: [{}, { stroke: accent, width: 2, fill: `${accent}22`, points: { show: false } }],
        },
        [props.series.t, props.series.v],
        el,
      );
    };
    make();
    const resize = new ResizeObserver(() => plot.current?.setSize({ width: Math.max(200, el.clientWidth), height: 170 }));
    resize.observe(el);
    const scheme = window.matchMedia('(prefers-color-scheme: dark)');
    scheme.addEventListener('change', make);
    return () => {
      resize.disconnect();
      scheme.removeEventListener('change', make);
      plot.current?.destroy();
      plot.current = null;
    };
    // The chart is made once; data arrives through setData below.
  }, []);

  useEffect(() => {
    plot.current?.setData([props.series.t, props.series.v]);
  }, [props.series]);

  const last = props.series.v.length ? props.series.v[props.series.v.length - 1] : null;
  const lastText = last === null || last === undefined ? 'no sample yet' : props.format(last);
  return (
    <figure class="chart" id={props.id}>
      <figcaption>
        <span>{props.title}</span> <strong data-last>{lastText}</strong>
      </figcaption>
      <div ref={box} class="plot" role="img" aria-label={`${props.title}, over time; latest ${lastText}`} />
    </figure>
  );
}
