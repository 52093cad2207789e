/**
 * A time-series chart (uPlot): a time axis, a value axis in the series' unit, and a value
 * scale that starts at zero (and reaches at least `floor`), so a small change looks small,
 * with 3 to 5 round ticks up to just above the data (lib/ticks.ts). Colours come from the
 * page's CSS variables and follow light/dark.
 */
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import { bytesIn } from '../lib/format.js';
import { roundTicks, type Ticks } from '../lib/ticks.js';

export interface Series {
  /** Unix seconds. */
  t: number[];
  v: (number | null)[];
}

export function Chart(props: { id: string; title: string; series: Series; format: (v: number) => string; floor?: number; windowS: number; binary?: boolean }) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const fmt = useRef(props.format);
  fmt.current = props.format;
  const limits = useRef({ floor: props.floor ?? 1, binary: props.binary === true });
  limits.current = { floor: props.floor ?? 1, binary: props.binary === true };
  // The ticks of the value scale last computed: its range is worked out before its axis.
  const ticks = useRef<Ticks>(roundTicks(limits.current.floor, limits.current.binary));
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
            y: {
              range: (_u, _min, max) => {
                ticks.current = roundTicks(Math.max((max ?? 0) * 1.05, limits.current.floor), limits.current.binary);
                return [0, ticks.current.top];
              },
            },
          },
          axes: [
            axis,
            {
              ...axis,
              size: 72,
              splits: () => ticks.current.values,
              values: (_u, vals) => {
                const labels = vals.map((v) => (limits.current.binary ? bytesIn(v, ticks.current.unit) : fmt.current(v)));
                // uPlot draws the labels on its canvas: the figure carries them in text too (the browser tests read them).
                el.parentElement?.setAttribute('data-ticks', labels.join(' | '));
                return labels;
              },
            },
          ],
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
