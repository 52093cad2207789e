/**
 * Redis's glob (stringmatchlen), used by KEYS, SCAN MATCH, the *SCAN
 * commands and PSUBSCRIBE: `*`, `?`, `[abc]`, `[^a-z]`, `\x`. Matched by
 * one pass that backtracks only to the last `*`, so any pattern costs at
 * most (pattern length × subject length) steps: a crafted pattern cannot
 * hold the event loop, as a backtracking regular expression could.
 */
type Token = { k: 'lit'; c: string } | { k: 'one' } | { k: 'star' } | { k: 'class'; neg: boolean; chars: string; ranges: Array<[string, string]> };

export interface Glob {
  test(subject: string): boolean;
}

function parse(p: string): Token[] {
  const out: Token[] = [];
  for (let i = 0; i < p.length; i++) {
    const ch = p[i]!;
    if (ch === '*') {
      if (out.at(-1)?.k !== 'star') out.push({ k: 'star' });
    } else if (ch === '?') out.push({ k: 'one' });
    else if (ch === '\\' && i + 1 < p.length) out.push({ k: 'lit', c: p[++i]! });
    else if (ch === '[') {
      const t: Token = { k: 'class', neg: false, chars: '', ranges: [] };
      i++;
      if (p[i] === '^') {
        t.neg = true;
        i++;
      }
      // As Redis: the class ends at ']' or at the end of the pattern.
      for (; i < p.length && p[i] !== ']'; i++) {
        if (p[i] === '\\' && i + 1 < p.length) t.chars += p[++i]!;
        else if (p[i + 1] === '-' && i + 2 < p.length && p[i + 2] !== ']') {
          const [a, b] = [p[i]!, p[i + 2]!];
          t.ranges.push(a <= b ? [a, b] : [b, a]);
          i += 2;
        } else t.chars += p[i]!;
      }
      out.push(t);
    } else out.push({ k: 'lit', c: ch });
  }
  return out;
}

function one(t: Token, c: string): boolean {
  switch (t.k) {
    case 'lit':
      return t.c === c;
    case 'one':
      return true;
    case 'class': {
      const hit = t.chars.includes(c) || t.ranges.some(([a, b]) => c >= a && c <= b);
      return hit !== t.neg;
    }
    case 'star':
      return false;
  }
}

export function glob(pattern: string): Glob {
  const ts = parse(pattern);
  return {
    test(s: string): boolean {
      let i = 0;
      let j = 0;
      let star = -1;
      let from = 0;
      while (j < s.length) {
        const t = ts[i];
        if (t !== undefined && t.k === 'star') {
          star = i++;
          from = j;
        } else if (t !== undefined && one(t, s[j]!)) {
          i++;
          j++;
        } else if (star >= 0) {
          i = star + 1;
          j = ++from;
        } else return false;
      }
      while (ts[i]?.k === 'star') i++;
      return i === ts.length;
    },
  };
}
