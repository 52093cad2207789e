/**
 * Round ticks for a chart's value axis, which starts at zero: 4 or 5 of them (zero included),
 * a step of 1, 2, 2.5 or 5 times a power of ten — of a binary unit (KiB, MiB, GiB…) for sizes —
 * and a top just above the data, so that the labels read "0, 10 GiB, 20 GiB, 30 GiB" for 23 GiB
 * used rather than "0 B, 128 GiB".
 */
const STEPS = [1, 2, 2.5, 5, 10];
const MOST = 4;

export interface Ticks {
  values: number[];
  top: number;
  /** The unit the labels count in: 1, or a power of 1024 for sizes. */
  unit: number;
}

export function roundTicks(max: number, binary: boolean): Ticks {
  const m = Number.isFinite(max) && max > 0 ? max : 1;
  const unit = binary ? 1024 ** Math.max(0, Math.min(4, Math.floor(Math.log2(m) / 10))) : 1;
  const x = m / unit;
  const pow = 10 ** (Math.floor(Math.log10(x)) - 1);
  let step = 100 * pow;
  for (const s of STEPS.flatMap((k) => [k * pow, k * pow * 10, k * pow * 100])) {
    if (s < step && Math.ceil(x / s - 1e-9) <= MOST) step = s;
  }
  const n = Math.max(1, Math.ceil(x / step - 1e-9));
  // Multiplying (not adding) keeps 0.1 × 3 from becoming 0.30000000000000004 in a label.
  const values = Array.from({ length: n + 1 }, (_, i) => Number((i * step).toPrecision(12)) * unit);
  return { values, top: values[n]!, unit };
}
