/**
 * What a 404 adds when a path is close to one the route table has
 * (docs/api.md, "Errors"): an operation asked of a kind that lacks it, a
 * quick-start spelling (`/list/<name>`) given an operation that only the
 * plural path has, or a name whose '/' was not percent-encoded. Everything
 * is read off the router's tree, which is built from the route table, so a
 * route added there is known here. Only on the 404 path, so the cost does
 * not matter.
 */
import { KINDS, type Kind } from '../store/kinds.js';

/** The router's tree as the hints read it (router.ts builds it). */
export interface PathNode {
  readonly literal: ReadonlyMap<string, PathNode>;
  readonly param: PathNode | undefined;
  /** What the parameter at this node names. */
  readonly names: string | undefined;
  readonly byMethod: Readonly<Record<string, unknown>> | undefined;
}

/** Segments a path may have for a hint to look at it (a name with a few '/'s, not any path). */
const HINT_MAX_SEGMENTS = 12;

/** The hint to append to a 404 for `method` and the path split at '/' (`seg[0]` is ''), or ''. */
export function notFoundHint(method: string, seg: readonly string[], root: PathNode): string {
  if (seg.length > HINT_MAX_SEGMENTS || seg[0] !== '') return '';
  return operationHint(method, seg, root) || slashHint(method, seg, root);
}

const isKind = (w: string | undefined): w is Kind => w !== undefined && Object.hasOwn(KINDS, w);

/** Whether the segments lead from `n` to a route. */
function resolves(n: PathNode | undefined, rest: readonly string[]): boolean {
  for (const s of rest) n = n?.literal.get(s) ?? n?.param;
  return n?.byMethod !== undefined;
}

/**
 * `/<base>/<name>/<op>…` where `<base>` names a kind whose objects have no
 * `<op>` but another base's objects do (`POST /sets/s/pop`, `POST /list/q/push`).
 * The hint says which kind lacks the operation and where it is, preferring the
 * kind's own plural path when `<base>` is its quick-start spelling.
 */
function operationHint(method: string, seg: readonly string[], root: PathNode): string {
  if (seg.length < 4 || seg[2] === '') return '';
  const base = seg[1];
  const at = root.literal.get(base)?.param;
  const op = seg[3];
  if (at === undefined || at.literal.has(op) || !isKind(at.names)) return '';
  const others = [...root.literal].filter(([b, n]) => b !== base && n.param?.literal.has(op) === true && resolves(n, seg.slice(2))).map(([b]) => b);
  if (others.length === 0) return '';
  const rest = seg.slice(2).join('/');
  const plural = KINDS[at.names].plural;
  const quick = base === plural ? '' : `/${base}/<name> is the quick-start spelling of /${plural}/<name>; `;
  if (others.includes(plural)) return ` (${quick}'${op}' is under /${plural}/<name>: ${method} /${plural}/${rest})`;
  const ops = [...(root.literal.get(plural)?.param?.literal.keys() ?? [])];
  const lack = ops.length === 0 ? `${plural} have no operations` : `${plural} have no '${op}', only ${ops.join(', ')}`;
  const where = others.map((o) => `/${o}/<name>/${op}`).join(' and ');
  return ` (${quick}${lack}; '${op}' is under ${where}: ${method} /${others[0]}/${rest})`;
}

/**
 * A path that matches no route but would, were some of its segments one
 * name: most likely a name with a '/' that was not percent-encoded
 * (`PUT /records/a/b` for the record `a/b`). Segments joined must not be
 * route words (`rows`, `query`, `indexes` after a table's name):
 * `GET /tables/t/rows/7` is not a table `t/rows/7`.
 */
function slashHint(method: string, seg: readonly string[], root: PathNode): string {
  for (let i = 1; i < seg.length - 1; i++) {
    // Walk to segment i; it must land on a parameter.
    let n: PathNode | undefined = root;
    for (let k = 1; k < i && n !== undefined; k++) n = n.literal.get(seg[k]) ?? n.param;
    if (n === undefined || n.literal.has(seg[i]) || n.param === undefined || seg[i] === '') continue;
    const at: PathNode = n.param;
    for (let j = i + 1; j < seg.length; j++) {
      if (seg[j] === '' || at.literal.has(seg[j])) break;
      if (!resolves(at, seg.slice(j + 1))) continue;
      const fixed = [...seg.slice(0, i), seg.slice(i, j + 1).join('%2F'), ...seg.slice(j + 1)].join('/');
      return ` (a '/' inside a name must be percent-encoded as %2F: ${method} ${fixed})`;
    }
  }
  return '';
}
