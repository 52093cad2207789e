/** Figures in words and units, for people. */

const UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];

/** 1536 → "1.5 KiB"; binary units, three significant digits. */
export function bytes(n: number): string {
  if (!Number.isFinite(n)) return '–';
  let i = 0;
  let v = Math.abs(n);
  while (v >= 1024 && i < UNITS.length - 1) {
    v /= 1024;
    i++;
  }
  const s = i === 0 ? String(Math.round(v)) : v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2);
  return `${n < 0 ? '-' : ''}${s} ${UNITS[i]}`;
}

/** A size in a given binary unit (a power of 1024), without trailing zeros: a chart's tick, "2.5 GiB". */
export function bytesIn(n: number, unit: number): string {
  if (n === 0) return '0';
  const i = Math.min(UNITS.length - 1, Math.round(Math.log2(unit) / 10));
  return `${Number((n / 1024 ** i).toPrecision(6))} ${UNITS[i]}`;
}

/** /health's "12.34GB" (GB = 2^30 bytes there, docs/api.md "Health") → bytes. */
export function healthBytes(s: unknown): number {
  if (typeof s !== 'string') return NaN;
  const m = /^([\d.]+)GB$/.exec(s);
  return m ? parseFloat(m[1]!) * 2 ** 30 : NaN;
}

export function gcState(n: unknown): string {
  switch (n) {
    case 0:
      return 'garbage collector not run yet';
    case 1:
      return 'garbage collector compacting';
    case 2:
      return 'garbage collector idle';
    default:
      return `garbage collector state ${String(n)}`;
  }
}

/** Milliseconds left → "59 s", "4 min 05 s", "2 h 03 min". */
export function duration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${String(s % 60).padStart(2, '0')} s`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ${String(Math.floor((s % 3600) / 60)).padStart(2, '0')} min`;
  return `${Math.floor(s / 86400)} d ${Math.floor((s % 86400) / 3600)} h`;
}

export const plural = (n: number, one: string, many = `${one}s`): string => `${n} ${n === 1 ? one : many}`;

/** A JSON value in one line, strings as they are. */
export const show = (v: unknown): string => (typeof v === 'string' ? v : JSON.stringify(v));
