/**
 * Typed client for Pithos (every endpoint of docs/api.md). ESM, no dependencies and no
 * node: imports: it needs only `fetch`, `TextDecoder` and web streams, so the same code
 * runs in Node >= 18, Deno, Bun, browsers (the web console uses it) and edge runtimes.
 *
 *   import { Pithos } from 'pithos-client'; // the package client/package.json builds
 *   const db = new Pithos({ url: 'http://127.0.0.1:2668', token: 'SECRET' });
 *   await db.createTable('users');
 *   const { t_id } = await db.insertRow('users', { name: 'ann', age: 31 });
 *   const rows = await db.queryRows('users', { age: { $gte: 18 } });
 *
 * Every failure is a PithosError carrying the HTTP status and the server's message
 * (status 0 when no HTTP answer arrived at all).
 */

export * from './types.js';
export { ENDPOINTS, endpointList, type Endpoint, type Operation } from './endpoints.js';
export { PithosError, parseEtag, parseSSE } from './wire.js';
import { PithosCollections } from './collections.js';

/**
 * The client: one class with a call for every endpoint. Its methods are written by kind,
 * one file each (core.ts, admin.ts, tables.ts, values.ts, lists.ts, collections.ts), each
 * class extending the one before, so that this entry point stays one import.
 */
export class Pithos extends PithosCollections {}
