/**
 * Who may do what (docs/api.md, "Authentication"; docs/operations.md, "Roles and the
 * tokens file"). The main secret is admin; a tokens file adds named tokens
 * with a role. `check` is pure apart from the reused comparison buffers: it
 * looks at the header value and the role a route requires, nothing else, so
 * nothing about a request is processed before it has passed.
 *
 * Hot path: a request carrying the main secret costs what it did before this
 * module existed — one length test, one latin1 write into a buffer reused for
 * every request, one timingSafeEqual — and returns a result object built once.
 * server.ts passes the role the matched route declares (routes.ts), or `read`
 * for a request that matches no route.
 */
import { timingSafeEqual } from 'node:crypto';

import type { Role } from './routes.js';

/** The role a route needs comes from the route table (routes.ts); a token holds one of these. */
export type TokenRole = Exclude<Role, 'public'>;

export type AuthResult =
  { readonly ok: true; readonly name: string; readonly role: Role } | { readonly ok: false; readonly status: 401 | 403; readonly message: string };

/**
 * What the server found for a request's token, kept on the request for a
 * handler that checks a role per command (the Redis REST routes, which
 * admit a read token and look at each command's needs) without checking the
 * token again.
 */
export interface Authenticated {
  who: AuthResult | undefined;
}

export interface TokenEntry {
  name: string;
  role: TokenRole;
  token: string;
}

export class TokensFileError extends Error {}

const RANK: Readonly<Record<Role, number>> = { public: 0, read: 1, write: 2, admin: 3 };

/** Does an accepted token hold `need`? */
export function holds(r: AuthResult, need: Role): boolean {
  return r.ok && RANK[r.role] >= RANK[need];
}
const MISSING: AuthResult = Object.freeze({ ok: false, status: 401, message: 'missing Auth-Token header' });
const WRONG: AuthResult = Object.freeze({ ok: false, status: 401, message: 'wrong Auth-Token' });
const PUBLIC: AuthResult = Object.freeze({ ok: true, name: '', role: 'public' });
/** The main secret's name in logs and messages; reserved in the tokens file. */
export const MAIN_NAME = 'main';
const NAME = /^[A-Za-z0-9._-]{1,64}$/;

/** One named token, with its bytes and its answer prepared once. */
interface Known {
  bytes: Buffer;
  role: TokenRole;
  name: string;
  ok: AuthResult;
}

/** All tokens of one byte length, compared against one scratch buffer of that length. */
interface SameLength {
  scratch: Buffer;
  tokens: Known[];
}

function known(name: string, role: TokenRole, token: string): Known {
  // node:http hands header bytes over one per char (latin1), so a token is
  // compared as its UTF-8 bytes read as latin1.
  return { bytes: Buffer.from(token, 'utf8'), role, name, ok: Object.freeze({ ok: true, name, role }) };
}

/**
 * Parses a tokens file: one token per line, `<name> <role> <token>`, blank
 * lines and lines starting with `#` ignored. Throws TokensFileError naming
 * the line for anything else, so a typo never silently drops a token.
 */
export function parseTokens(text: string, mainToken?: string): TokenEntry[] {
  const out: TokenEntry[] = [];
  const names = new Set<string>();
  const values = new Set<string>();
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.trim();
    if (line === '' || line.startsWith('#')) continue;
    const at = `line ${i + 1}`;
    const parts = line.split(/[ \t]+/);
    if (parts.length !== 3) throw new TokensFileError(`${at}: expected '<name> <role> <token>', got ${parts.length} field(s)`);
    const [name, role, token] = parts as [string, string, string];
    if (!NAME.test(name)) throw new TokensFileError(`${at}: name '${name.slice(0, 80)}' must be 1-64 of A-Z a-z 0-9 . _ -`);
    if (name === MAIN_NAME) throw new TokensFileError(`${at}: the name '${MAIN_NAME}' is reserved for the main secret (--auth-token)`);
    if (role !== 'read' && role !== 'write' && role !== 'admin')
      throw new TokensFileError(`${at}: role of '${name}' must be read, write or admin, got '${role.slice(0, 80)}'`);
    if (names.has(name)) throw new TokensFileError(`${at}: token name '${name}' appears twice`);
    // Two names for one secret would make the name (and so the role) ambiguous.
    if (values.has(token) || token === mainToken)
      throw new TokensFileError(`${at}: the token of '${name}' is already used by another name or is the main secret`);
    names.add(name);
    values.add(token);
    out.push({ name, role, token });
  }
  return out;
}

export class Authenticator {
  private readonly main: Buffer;
  private readonly mainScratch: Buffer;
  private readonly mainOk: AuthResult;
  /** Named tokens grouped by byte length; replaced whole by `setTokens`. */
  private named: SameLength[] = [];
  private count = 0;

  constructor(mainToken: string) {
    this.main = Buffer.from(mainToken, 'utf8');
    this.mainScratch = Buffer.alloc(this.main.length);
    this.mainOk = Object.freeze({ ok: true, name: MAIN_NAME, role: 'admin' });
  }

  /** Number of named tokens in force (the main secret not counted). */
  get size(): number {
    return this.count;
  }

  /**
   * Counts the replacements of the named tokens: a holder of a checked
   * token (a RESP connection) may keep the answer while this has not moved.
   */
  generation = 0;

  /** Replaces the named tokens at once; a request sees either the old set or the new one. */
  setTokens(entries: readonly TokenEntry[]): void {
    const byLen = new Map<number, SameLength>();
    for (const e of entries) {
      const k = known(e.name, e.role, e.token);
      let g = byLen.get(k.bytes.length);
      if (g === undefined) byLen.set(k.bytes.length, (g = { scratch: Buffer.alloc(k.bytes.length), tokens: [] }));
      g.tokens.push(k);
    }
    this.named = [...byLen.values()];
    this.count = entries.length;
    this.generation++;
  }

  /**
   * Parses `text` (a tokens file's contents) and puts it in force. On any
   * error the tokens in force stay as they were and the error is thrown.
   */
  reload(text: string): number {
    const entries = parseTokens(text, this.main.toString('utf8'));
    this.setTokens(entries);
    return entries.length;
  }

  /**
   * May the holder of `header` (the raw Auth-Token value) do something that
   * needs `required`? `method` and `path` only go into a 403 message.
   * An absent or empty header is "missing" (an unset shell variable sends an
   * empty one); anything else that matches no token is "wrong".
   */
  check(header: string | string[] | undefined, required: Role, method: string | undefined, path: string | undefined): AuthResult {
    if (required === 'public') return PUBLIC;
    if (typeof header !== 'string' || header.length === 0) return header === undefined || header === '' ? MISSING : WRONG;
    // Lengths may differ in time; contents never do (timingSafeEqual).
    const len = header.length;
    if (len === this.main.length) {
      this.mainScratch.write(header, 0, 'latin1');
      if (timingSafeEqual(this.mainScratch, this.main)) return this.mainOk;
    }
    const groups = this.named;
    for (let g = 0; g < groups.length; g++) {
      const group = groups[g]!;
      if (group.scratch.length !== len) continue;
      group.scratch.write(header, 0, 'latin1');
      let hit: Known | undefined;
      // Compare with every token of this length, also after a match, so the
      // time does not say which one matched.
      for (const k of group.tokens) if (timingSafeEqual(group.scratch, k.bytes) && hit === undefined) hit = k;
      if (hit === undefined) return WRONG;
      if (RANK[hit.role] >= RANK[required]) return hit.ok;
      return { ok: false, status: 403, message: `token '${hit.name}' may not ${method ?? 'GET'} ${pathOnly(path ?? '/')}` };
    }
    return WRONG;
  }
}

function pathOnly(url: string): string {
  const q = url.indexOf('?');
  return q < 0 ? url : url.slice(0, q);
}
