/**
 * What one entry of the route table says (routes.ts). Declared apart from the
 * table so that what is derived from it (the OpenAPI document, openapi.ts)
 * can take the table as an argument without importing the table's module,
 * whose entries hold its handler.
 */
import type { Handler } from './context.js';
import type { Fields } from './fields.js';
import type { Kind } from '../store/kinds.js';

/** `public`: no token; `read`: reads (and the POST query alias); `write`: data changes; `admin`: everything. */
export type Role = 'public' | 'read' | 'write' | 'admin';
export type Method = 'GET' | 'PUT' | 'POST' | 'PATCH' | 'DELETE';

export interface RouteDef {
  method: Method;
  /** Literal segments and `{name}` parameters, e.g. `/tables/{name}/rows`. */
  path: string;
  handler: Handler;
  role: Role;
  /** What the `{name}` parameter names, for its error messages ("table name must …"). */
  /** `words`: the rest of the path, slashes included, handed over undecoded (the Upstash path form). */
  names?: Kind | 'words';
  /** What a second `{…}` parameter names (an index's field, a row's t_id, a sorted set's member). */
  subNames?: 'field' | 't_id' | 'member';
  /**
   * Query-string parameters the endpoint takes (name → doc). When declared,
   * any other parameter is refused (400 naming it); the lenient endpoints of docs/api.md
   * "Transport" declare none and ignore query strings.
   */
  query?: Readonly<Record<string, string>>;
  summary: string;
  body?: Fields;
  /** Undeclared body fields are refused (the strict endpoints of docs/api.md "Transport"); the others ignore them, as their clients expect. */
  strict?: boolean;
  /** Success status(es) and message, for documentation. */
  /** `type`: set when the answer is not the JSON envelope (a stream, a text format); `message` then describes it. */
  ok: { status: number[]; message: string; type?: string };
  /** Served only with PITHOS_TEST_CLOCK=1. */
  testOnly?: boolean;
  /**
   * Upstash's wire format (redis-rest.ts): the body is handed over as text, not
   * parsed as an object; `Authorization: Bearer <token>` counts as the token;
   * refusals are `{"error": …}`, not the envelope.
   */
  upstash?: true;
}
