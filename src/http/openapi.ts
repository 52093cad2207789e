/**
 * GET /openapi.json: an OpenAPI 3.1 document generated from the route table
 * (routes.ts), so it cannot drift from what the server serves: every route,
 * its path parameter, its body fields (FieldType → JSON Schema), its success
 * statuses and message, the envelope, the error statuses it can answer and
 * the Auth-Token scheme. Built once per process and served as is.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ServerResponse } from 'node:http';
import type { Field, FieldType } from './fields.js';
import type { RouteDef } from './route-def.js';
import type { Ctx, Handler } from './context.js';
import { MAX_TTL } from '../store/validate.js';
import { KIND_NAMES, KINDS } from '../store/kinds.js';

type Json = Record<string, unknown>;

/** FieldType → JSON Schema (2020-12, the dialect of OpenAPI 3.1). */
export function fieldSchema(f: Field): Json {
  const doc = { description: f.doc };
  const t: FieldType = f.type;
  switch (t) {
    case 'object':
      return { type: 'object', ...doc };
    case 'string':
      return { type: 'string', ...doc };
    case 'number':
      return { type: 'number', ...doc };
    case 'boolean':
      return { type: 'boolean', ...doc };
    case 'array':
      return { type: 'array', ...doc };
    case 'scalar':
      return { type: ['string', 'number', 'boolean'], ...doc };
    case 'ttl':
      return { type: 'integer', minimum: 0, maximum: MAX_TTL, ...doc };
    case 'lease':
      return { type: 'integer', minimum: 1, maximum: MAX_TTL, ...doc };
    case 'holder':
      return { type: ['string', 'null'], maxLength: 255, ...doc, description: `${f.doc} (at most 255 bytes of UTF-8)` };
    case 'version':
      return { type: 'integer', minimum: 0, ...doc };
    case 'any':
      return { ...doc };
  }
}

const ERRORS: Record<number, string> = {
  400: 'Malformed body or name, or a field of the wrong type',
  401: 'Auth-Token missing or wrong',
  403: 'Refused: a lock token that is not the current one, or a client address outside --allow-from',
  404: 'No such object (or expired), or no endpoint at this path',
  409: 'Conflict with the stored state',
  412: 'A condition of the request does not hold',
  413: 'Body larger than --max-body-bytes, or a change too large for one atomic write',
  423: 'The lock is held by someone else',
  500: 'Unexpected failure (details in the server log)',
  503: 'The server is shutting down',
  507: 'The disk is full: writes are refused, reads still work',
};

/** The error statuses a route can answer, from what the route table says about it. */
export function errorStatuses(r: RouteDef): number[] {
  const s = new Set<number>([400, 403, 413, 500, 503]);
  if (r.role !== 'public') s.add(401);
  if (r.names !== undefined && r.names !== 'words') s.add(404);
  if (r.role === 'write') s.add(507);
  const ns = r.names;
  if ((ns === 'table' && r.method === 'PUT') || (ns === 'variant' && (r.method === 'PUT' || r.method === 'POST'))) s.add(409);
  if (ns === 'lock' && r.method === 'PUT') s.add(423);
  if (r.path === '/txns') for (const x of [404, 409, 412, 423]) s.add(x);
  if (r.body?.if_version !== undefined) s.add(412);
  return [...s].sort((a, b) => a - b);
}

function operationId(r: RouteDef): string {
  const words = r.path
    .split('/')
    .filter((x) => x.length > 0)
    .map((x) => x.replace(/[{}_.]/g, ''));
  return [r.method.toLowerCase(), ...words.map((w) => w.charAt(0).toUpperCase() + w.slice(1))].join('');
}

function operation(r: RouteDef): Json {
  const op: Json = { operationId: operationId(r), summary: r.summary, tags: [tag(r)] };
  if (r.role === 'public') op.security = [];
  op['x-pithos-role'] = r.role;
  if (r.path.includes('{name}')) {
    op.parameters = [
      {
        name: 'name',
        in: 'path',
        required: true,
        description: `the ${r.names ?? 'object'} name: one percent-encoded path segment, 1-255 bytes of UTF-8, no control characters, not . or ..`,
        schema: { type: 'string', minLength: 1 },
      },
    ];
  }
  if (r.names === 'words') {
    op.parameters = [
      {
        name: 'command',
        in: 'path',
        required: true,
        description: r.path.startsWith('/redis/{')
          ? 'the command and its arguments, each one percent-encoded path segment: /redis/set/k/v (docs/redis-rest.md)'
          : 'the channels (or patterns), each one percent-encoded path segment (docs/redis-rest.md)',
        schema: { type: 'string', minLength: 1 },
      },
    ];
  }
  if (r.subNames === 't_id') {
    (op.parameters as Json[]).push({
      name: 't_id',
      in: 'path',
      required: true,
      description: "the row's t_id: a positive integer in decimal (anything else is 400)",
      schema: { type: 'string', pattern: '^[1-9][0-9]*$' },
    });
  }
  const fields = r.body === undefined ? [] : Object.entries(r.body);
  // A strict GET refuses unknown query parameters; it takes no body to describe.
  if (fields.length > 0 || (r.strict === true && r.method !== 'GET')) {
    const props: Json = {};
    const required: string[] = [];
    for (const [k, f] of fields) {
      props[k] = fieldSchema(f);
      if (f.required === true) required.push(k);
    }
    const schema: Json = { type: 'object', properties: props };
    if (required.length > 0) schema.required = required;
    // Non-strict endpoints ignore fields they do not use; strict ones refuse them (docs/api.md "Transport").
    schema.additionalProperties = r.strict === true ? false : true;
    op.requestBody = { required: required.length > 0, content: { 'application/json': { schema } } };
  }
  const responses: Json = {};
  for (const st of r.ok.status) {
    if (r.ok.type !== undefined) {
      const schema =
        r.upstash === true && r.ok.type === 'application/json'
          ? { type: ['object', 'array'], description: "Upstash's format (docs/redis-rest.md), not the envelope" }
          : r.ok.type === 'application/octet-stream'
            ? { type: 'string', contentMediaType: r.ok.type }
            : { type: 'string' };
      responses[String(st)] = { description: r.ok.message, content: { [r.ok.type.split(';')[0]!]: { schema } } };
      continue;
    }
    responses[String(st)] = {
      description: r.ok.message,
      content: {
        'application/json': {
          schema: {
            allOf: [{ $ref: '#/components/schemas/Success' }, { properties: { message: { const: r.ok.message } } }],
          },
        },
      },
    };
  }
  for (const st of errorStatuses(r)) responses[String(st)] = { $ref: `#/components/responses/E${st}` };
  op.responses = responses;
  return op;
}

function tag(r: RouteDef): string {
  const first = r.path.split('/')[1] ?? '';
  return first === 'table' ? 'records' : first.replace(/^_/, '');
}

function version(): string {
  try {
    const here = path.dirname(fileURLToPath(import.meta.url));
    for (const up of ['../../..', '../..']) {
      const p = path.join(here, up, 'package.json');
      if (fs.existsSync(p)) return (JSON.parse(fs.readFileSync(p, 'utf8')) as { version: string }).version;
    }
  } catch {
    // fall through
  }
  return '0.0.0';
}

/** Answered before routing (probes.ts), so not in the route table: documented here by hand. */
export const PROBES: ReadonlyArray<{ path: string; summary: string }> = [
  { path: '/livez', summary: 'Liveness probe: 200 while the process serves at all' },
  { path: '/readyz', summary: 'Readiness probe: 200 when the server takes requests, 503 while shutting down' },
];

function probe(p: { path: string; summary: string }): Json {
  const text = (d: string): Json => ({ description: d, content: { 'text/plain': { schema: { type: 'string' } } } });
  return {
    operationId: `get${p.path.slice(1).charAt(0).toUpperCase()}${p.path.slice(2)}`,
    summary: p.summary,
    tags: ['probes'],
    security: [],
    'x-pithos-role': 'public',
    responses: p.path === '/readyz' ? { 200: text('ok'), 503: text('not ready') } : { 200: text('ok') },
  };
}

/** The whole document for `routes`, the routes the server serves. */
/** `/tables, /records, …`: every kind's path, from the table of kinds. */
const KIND_PATHS = KIND_NAMES.map((k) => `/${KINDS[k].plural}`).join(', ');

export function openApiDocument(routes: readonly RouteDef[]): Json {
  const paths: Record<string, Json> = {};
  for (const r of routes) {
    (paths[r.path] ??= {})[r.method.toLowerCase()] = operation(r);
  }
  for (const p of PROBES) paths[p.path] = { get: probe(p) };
  const responses: Json = {};
  for (const [st, d] of Object.entries(ERRORS)) {
    responses[`E${st}`] = { description: d, content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Pithos',
      version: version(),
      description:
        `Named objects of ${KIND_NAMES.length} kinds over HTTP + JSON (docs/api.md), each under its own path: ${KIND_PATHS}. Every answer is the envelope ` +
        '{status, message, data}; data is present only when there is something to return, and errors never carry it. ' +
        'Any method a path does not list is answered 405 with an Allow header; an unknown path is 404. ' +
        'Generated from the route table (src/http/routes.ts).',
      license: { name: 'MIT', identifier: 'MIT' },
    },
    security: [{ authToken: [] }],
    paths,
    components: {
      securitySchemes: {
        authToken: { type: 'apiKey', in: 'header', name: 'Auth-Token', description: 'the server secret (--auth-token)' },
      },
      schemas: {
        Success: {
          type: 'object',
          required: ['status', 'message'],
          properties: {
            status: { const: 'success' },
            message: { type: 'string' },
            data: { description: 'present only when the operation returns something', type: ['object', 'array'] },
          },
          additionalProperties: false,
        },
        Error: {
          type: 'object',
          required: ['status', 'message'],
          properties: { status: { const: 'error' }, message: { type: 'string' } },
          additionalProperties: false,
        },
      },
      responses,
    },
  };
}

/**
 * GET /openapi.json over `served` (routes.ts servedRoutes: with the test
 * clock's routes or without), which the route table hands in rather than
 * this module importing the table back. The document itself, not wrapped
 * in the envelope, so OpenAPI tools can load it.
 */
export function openApiHandler(served: (testClock: boolean) => readonly RouteDef[]): Handler {
  const cached: Array<Buffer | undefined> = [undefined, undefined];
  return (ctx: Ctx, _name: string, _body: unknown, res: ServerResponse): void => {
    const testClock = ctx.advanceClock !== undefined;
    const body = (cached[testClock ? 1 : 0] ??= Buffer.from(JSON.stringify(openApiDocument(served(testClock)))));
    res.writeHead(200, ['Content-Type', 'application/json; charset=utf-8', 'Content-Length', String(body.length)]);
    res.end(body);
  };
}
