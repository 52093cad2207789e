/** The connection: options, one call with retries and timeouts, and the raw send. */
import { type Answer, type Envelope, JsonText, type PithosOptions } from './types.js';
import { ENDPOINTS, type Endpoint, type Operation } from './endpoints.js';
import { PithosError, errorFrom, fillPath, parseEtag, queryString, sleep } from './wire.js';

export class PithosCore {
  readonly url: string;
  token: string | undefined;
  private readonly retries: number;
  private readonly retryDelayMs: number;
  private readonly timeoutMs: number | undefined;
  private readonly fetchFn: typeof fetch;

  constructor(opts: PithosOptions) {
    this.url = opts.url.replace(/\/+$/, '');
    this.token = opts.token;
    this.retries = opts.retries ?? 0;
    this.retryDelayMs = opts.retryDelayMs ?? 100;
    this.timeoutMs = opts.timeoutMs;
    const f = opts.fetch ?? globalThis.fetch;
    if (typeof f !== 'function') throw new TypeError('no fetch available: pass opts.fetch');
    this.fetchFn = f.bind(globalThis);
  }

  /**
   * One call: the endpoint, its path arguments, an optional JSON body, query and headers.
   * Resolves with status, message, data (and version from ETag); rejects with PithosError.
   */
  async call<T = unknown>(
    op: Operation,
    args: readonly string[] = [],
    opts: { body?: unknown; query?: Record<string, string | number | boolean | undefined | (string | number)[]>; headers?: Record<string, string> } = {},
  ): Promise<Answer<T>> {
    const e: Endpoint = ENDPOINTS[op];
    const path = fillPath(e.path, args) + queryString(opts.query ?? {});
    const res = await this.send(e, path, opts.body, opts.headers);
    const text = await res.text();
    if (e.text) {
      if (!res.ok) throw errorFrom(res.status, text, e.method, path);
      return { status: res.status, message: '', data: text as T, headers: res.headers, text };
    }
    let env: Envelope<T> | undefined;
    try {
      env = JSON.parse(text) as Envelope<T>;
    } catch {
      env = undefined;
    }
    if (!res.ok || env === undefined || env.status !== 'success') {
      throw errorFrom(res.status, text, e.method, path, env);
    }
    const answer: Answer<T> = { status: res.status, message: env.message, data: env.data as T, headers: res.headers, text };
    const version = parseEtag(res.headers.get('etag'));
    if (version !== undefined) answer.version = version;
    return answer;
  }

  protected async send(e: Endpoint, path: string, body: unknown, extra: Record<string, string> | undefined, signal?: AbortSignal): Promise<Response> {
    const headers: Record<string, string> = { ...(extra ?? {}) };
    if (this.token !== undefined) headers['Auth-Token'] = this.token;
    const init: RequestInit = { method: e.method, headers };
    if (body !== undefined) {
      headers['Content-Type'] = 'application/json';
      init.body = body instanceof JsonText ? body.text : JSON.stringify(body);
    }
    const attempts = e.idempotent ? this.retries + 1 : 1;
    for (let attempt = 1; ; attempt++) {
      const ac = this.timeoutMs !== undefined || signal !== undefined ? new AbortController() : undefined;
      let timer: ReturnType<typeof setTimeout> | undefined;
      if (ac) {
        init.signal = ac.signal;
        if (this.timeoutMs !== undefined) timer = setTimeout(() => ac.abort(new Error(`timed out after ${this.timeoutMs} ms`)), this.timeoutMs);
        if (signal) {
          if (signal.aborted) ac.abort(signal.reason);
          else signal.addEventListener('abort', () => ac.abort(signal.reason), { once: true });
        }
      }
      try {
        const res = await this.fetchFn(this.url + path, init);
        if (attempt < attempts && (res.status === 502 || res.status === 503 || res.status === 504)) {
          await res.body?.cancel();
        } else {
          return res;
        }
      } catch (err) {
        if (signal?.aborted) throw err;
        if (attempt >= attempts) {
          const cause = (err as { cause?: { code?: string; message?: string } }).cause;
          const why = cause?.code ?? cause?.message ?? (err as Error).message ?? String(err);
          throw new PithosError(0, `cannot reach ${this.url}: ${why}`, e.method, path);
        }
      } finally {
        if (timer !== undefined) clearTimeout(timer);
      }
      await sleep(this.retryDelayMs * 2 ** (attempt - 1));
    }
  }
}
