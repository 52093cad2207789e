/**
 * The handler kit: what every endpoint's handler receives (the server's
 * context, the path's and query string's arguments), the handler type the
 * route table holds, and what the handlers of several kinds share: the
 * condition of a conditional write, the versioned read's slow path. The
 * handlers live by kind: tables.ts, records.ts, variants.ts and numtext.ts,
 * locks.ts, lists.ts, collections.ts, listing.ts; handlers.ts holds those
 * of no one kind.
 */
import type { RedisRest } from './redis-rest.js';
import type { ServerResponse } from 'node:http';
import type { Precondition, Store, Sync, Text, VersionOut } from '../store/store.js';
import { invalid } from '../store/errors.js';
import type { Body } from './request-body.js';
import { type Answer, sendTagged, sendText } from './envelope.js';
import type { Health } from '../health.js';
import type { WatchHub } from './watch.js';

export interface Ctx {
  store: Store;
  health: Health;
  /** Advances the injectable clock; undefined unless PITHOS_TEST_CLOCK=1. */
  advanceClock: ((ms: number) => void) | undefined;
  /** The change feed's fan-out (watch.ts); absent: GET /watch answers 503. */
  watch?: WatchHub;
  /** The Upstash REST routes' runner (redis-rest.ts); absent: they answer 503. */
  redis?: RedisRest;
}

/** What the path and query string add beyond the name (routes.ts `subNames`, `query`). */
export interface Args {
  /** The second path parameter (an index's field), '' when none. */
  sub: string;
  /** Declared query parameters, percent-decoded (routes.ts `query`); empty when none are declared. */
  query: Readonly<Record<string, string>>;
}

/** `raw` is the body's text ('' without a body); only handlers that need the source look at it. */
export type Handler = (ctx: Ctx, name: string, body: Body, res: ServerResponse, raw: string, args: Args) => void | Promise<void>;

export const ttlOf = (body: { ttl?: number }): number => body.ttl ?? 0;

/** Filled by synchronous reads (the cached fast path): one object for the process, not one per request. */
export const VERSION: VersionOut = { version: 0 };

const QUOTED_VERSION = /^\s*"(\d{1,16})"\s*$/;

/**
 * The condition of a conditional write (docs/api.md, "Versions and
 * conditional writes"): body `if_version` / `if_absent: true`, or headers
 * `If-Match: "<v>"` / `If-None-Match: *`. At most one may be given.
 */
export function preconditionOf(body: { if_version?: number; if_absent?: boolean }, res: ServerResponse): Precondition | undefined {
  const h = res.req.headers;
  const im = h['if-match'];
  const inm = h['if-none-match'];
  const v = body.if_version;
  const absent = body.if_absent === true;
  // The common unconditional write allocates nothing here.
  if (v === undefined && !absent && im === undefined && inm === undefined) return undefined;
  const given = (v !== undefined ? 1 : 0) + (absent ? 1 : 0) + (im !== undefined ? 1 : 0) + (inm !== undefined ? 1 : 0);
  if (given > 1) throw invalid('give at most one condition: if_version, if_absent, If-Match or If-None-Match');
  if (v !== undefined) return { ifVersion: v };
  if (absent) return { ifAbsent: true };
  if (im !== undefined) {
    const m = QUOTED_VERSION.exec(im);
    if (m === null) throw invalid(`header 'If-Match' must be one quoted version, such as "12" (as ETag gives it)`);
    return { ifVersion: Number(m[1]) };
  }
  if (inm === undefined || inm.trim() !== '*') throw invalid(`header 'If-None-Match' must be * (create only)`);
  return { ifAbsent: true };
}

export async function sendLater(res: ServerResponse, answer: Answer, data: Promise<Text>): Promise<void> {
  return sendText(res, 200, answer, await data);
}

/**
 * The slow path of a versioned GET (value not in memory): the read that
 * was started with the shared holder is dropped, and one with a holder of
 * its own answers, since other requests reuse the shared one meanwhile.
 */
export async function tagged(first: Promise<string>, get: (out: VersionOut) => Sync<string>, res: ServerResponse, answer: Answer): Promise<void> {
  // Superseded: the read below answers, and reports its own failure.
  first.catch(superseded);
  const out: VersionOut = { version: 0 };
  const data = await get(out);
  sendTagged(res, 200, answer, data, out.version);
}

function superseded(): void {
  // The first read of a versioned GET, dropped for one with its own holder: that read answers, and reports its own failure.
}
