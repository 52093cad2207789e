/**
 * `pithos rekey` and `pithos key-check` (docs/operations.md, "Encryption at
 * rest"): the offline key commands of the log store. `rekey` opens the data
 * directory with the keyring and lets compaction rewrite every segment that
 * is not sealed under the current key; `key-check` reads only segment headers
 * (no key needed to read them, nothing written) and proves that no segment
 * needs a key other than the current one, so the old key files can go.
 */
import { Engine, type Keyring, segmentKeys } from './engine/index.js';
import type { Logger } from './log.js';

export async function rekey(dir: string, keyring: Keyring, log: Logger): Promise<number> {
  const e = await Engine.open({ dir, keyring, log, sweepIntervalMs: 0, compactIntervalMs: 0, hintDelayMs: 0 });
  let left: number;
  try {
    left = await e.rekey();
  } finally {
    await e.close();
  }
  if (left > 0) {
    log('error', `rekey of ${dir}: ${left} segment(s) still need another key than ${keyring.current.idHex} (see the log above)`);
    return 1;
  }
  log('info', `rekey of ${dir} finished: every segment is sealed under key ${keyring.current.idHex}`);
  return 0;
}

/** Prints one line per segment and a verdict; 0 when every segment is sealed under the current key. */
export async function keyCheck(dir: string, keyring: Keyring, out: (s: string) => void): Promise<number> {
  const segs = await segmentKeys(dir);
  const other = segs.filter((s) => s.keyId !== keyring.current.idHex);
  for (const s of segs) out(`${s.name} ${s.keyId ?? 'plain'}\n`);
  if (other.length === 0) {
    out(`all ${segs.length} segment(s) are sealed under the current key ${keyring.current.idHex}; older keys are no longer needed\n`);
    return 0;
  }
  const ids = [...new Set(other.map((s) => s.keyId ?? 'plain'))].join(', ');
  out(`${other.length} of ${segs.length} segment(s) need another key or are plain (${ids}); run \`pithos rekey\` first\n`);
  return 1;
}
