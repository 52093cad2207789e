/**
 * Aggregates V8 .cpuprofile files (from `node --cpu-prof`) by self time.
 *
 *   node dist/bench/cpuprofile.js <file.cpuprofile | dir> [top=25]
 *
 * Prints the functions with the most self time (function, location, ms, % of the
 * non-idle samples), then the same by source file.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

function shortUrl(url: string): string {
  if (!url) return '';
  let path = url;
  if (url.startsWith('file://')) {
    try {
      path = relative(process.cwd(), fileURLToPath(url));
    } catch {
      path = url;
    }
  }
  return path;
}

/** Self time in microseconds per function key and per file, over all given profiles. */
export function aggregate(profiles: Profile[]): { byFn: Map<string, number>; byFile: Map<string, number>; total: number; idle: number } {
  const byFn = new Map<string, number>();
  const byFile = new Map<string, number>();
  let total = 0;
  let idle = 0;
  for (const p of profiles) {
    const nodes = new Map<number, ProfileNode>();
    for (const n of p.nodes) nodes.set(n.id, n);
    // sample i lasts until sample i+1: its duration is timeDeltas[i+1]
    for (let i = 0; i < p.samples.length; i++) {
      const dt = i + 1 < p.timeDeltas.length ? p.timeDeltas[i + 1]! : 0;
      const node = nodes.get(p.samples[i]!);
      if (!node || dt <= 0) continue;
      const cf = node.callFrame;
      if (cf.functionName === '(idle)') {
        idle += dt;
        continue;
      }
      total += dt;
      const file = shortUrl(cf.url) || cf.functionName;
      const key = `${cf.functionName || '(anonymous)'}  ${shortUrl(cf.url) ? `${shortUrl(cf.url)}:${cf.lineNumber + 1}` : ''}`.trim();
      byFn.set(key, (byFn.get(key) ?? 0) + dt);
      byFile.set(file, (byFile.get(file) ?? 0) + dt);
    }
  }
  return { byFn, byFile, total, idle };
}

function profilesIn(target: string): string[] {
  if (statSync(target).isDirectory()) {
    return readdirSync(target)
      .filter((f) => f.endsWith('.cpuprofile'))
      .map((f) => join(target, f));
  }
  return [target];
}

export function summarizeProfiles(target: string, top = 25): string {
  const files = profilesIn(target);
  if (files.length === 0) return `(no .cpuprofile in ${target})`;
  const profiles = files.map((f) => JSON.parse(readFileSync(f, 'utf8')) as Profile);
  const { byFn, byFile, total, idle } = aggregate(profiles);
  const pct = (us: number): string => ((100 * us) / Math.max(1, total)).toFixed(1).padStart(5) + '%';
  const ms = (us: number): string => (us / 1000).toFixed(0).padStart(8);
  const lines: string[] = [];
  lines.push(`${files.length} profile(s): ${files.map((f) => basename(f)).join(', ')}`);
  lines.push(`busy ${(total / 1e3).toFixed(0)} ms, idle ${(idle / 1e3).toFixed(0)} ms`);
  lines.push('');
  lines.push(`top ${top} functions by self time:`);
  for (const [k, v] of [...byFn].sort((a, b) => b[1] - a[1]).slice(0, top)) lines.push(`${ms(v)} ms ${pct(v)}  ${k}`);
  lines.push('');
  lines.push('self time by file:');
  for (const [k, v] of [...byFile].sort((a, b) => b[1] - a[1]).slice(0, 15)) lines.push(`${ms(v)} ms ${pct(v)}  ${k}`);
  return lines.join('\n');
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const target = process.argv[2];
  if (!target) {
    process.stderr.write('usage: node dist/bench/cpuprofile.js <file.cpuprofile | dir> [top]\n');
    process.exit(2);
  }
  process.stdout.write(summarizeProfiles(target, Number(process.argv[3] ?? 25)) + '\n');
}
