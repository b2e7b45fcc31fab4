import { createSecureContext } from 'node:tls';
import { Agent, buildConnector, request, type Dispatcher } from 'undici';
import { ReconnectBackoff } from './reconnect.ts';
import { UnansweredError } from './unanswered.ts';

/**
 * The User-Agent of every vendor call: names the product and the process, so a vendor's (or an
 * emulator's) log can tell one worker's retry from another worker's takeover of the same push.
 */
export const VENDOR_USER_AGENT = `offline-push (pid ${process.pid})`;

/** Options shared by the HTTPS vendors' clients (one client per app and vendor). */
export interface VendorHttpOptions {
  /** Extra trusted CA certificates (PEM), e.g. the emulators' test CA. TLS verification stays on. */
  readonly ca?: string | Buffer | undefined;
  /** Connections per origin; also the most new connections per reconnect backoff step. Default 4. */
  readonly connections?: number | undefined;
  /**
   * Time allowed for one call, ms, from the moment it is handed to the client: connecting (or
   * waiting for a free connection), writing and the whole answer. Default 10 000. A call that
   * misses it is aborted and its connection destroyed.
   */
  readonly timeoutMs?: number | undefined;
  /** Base delay of the reconnect backoff after a failed connection, ms. Default 250 (see ReconnectBackoff). */
  readonly reconnectDelayMs?: number | undefined;
  /** Upper bound of the reconnect delay, ms. Default 30 000. */
  readonly reconnectMaxDelayMs?: number | undefined;
}

export interface HttpAnswer {
  readonly status: number;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly text: string;
}

/**
 * A vendor call that got no HTTP answer. `written` says whether the request may have reached the
 * vendor: false when it was never written (connection refused, TLS refused, reconnect backoff,
 * no connection free before the deadline), true once it was handed to a connected socket (reset,
 * stalled answer, deadline). Only a call that was not written is known not to have been taken.
 */
export class NetworkError extends UnansweredError {
  readonly code = 'NETWORK';
}

class ReconnectBackoffError extends Error {
  readonly code = 'RECONNECT_BACKOFF';
}

/**
 * A keep-alive HTTPS client for one (app, vendor): an undici Agent (a pool per origin, so the auth
 * host and the send host each get their own connections) trusting the configured CA. Every call
 * settles within its deadline; new connections to an origin whose connections fail are paced by a
 * ReconnectBackoff (at most `connections` per step).
 */
export class VendorHttp {
  private readonly agent: Agent;
  private readonly timeoutMs: number;
  private readonly backoffs = new Map<string, ReconnectBackoff>();

  constructor(private readonly options: VendorHttpOptions = {}) {
    this.timeoutMs = options.timeoutMs ?? 10_000;
    // One TLS context for all of this client's connections: given `ca`, tls.connect would build one
    // per connection (0.6–1 ms of CPU each on the 2-core box, measured with 300 connects).
    const secureContext = createSecureContext(options.ca === undefined ? {} : { ca: options.ca.toString() });
    const tls = buildConnector({ secureContext, rejectUnauthorized: true, timeout: this.timeoutMs });
    this.agent = new Agent({
      connections: options.connections ?? 4,
      pipelining: 1,
      keepAliveTimeout: 30_000,
      headersTimeout: this.timeoutMs,
      bodyTimeout: this.timeoutMs,
      connect: (opts, callback) => {
        const backoff = this.backoffFor(originKey(opts.protocol, opts.hostname, opts.port));
        const ticket = backoff.tryOpen();
        // Refused later, never synchronously: undici ignores a resume asked for from inside its own
        // connect call, and the client would keep its queue without connecting again.
        if (!ticket) return void setImmediate(() => callback(new ReconnectBackoffError('reconnect backoff'), null));
        tls(opts, (error, socket) => {
          if (error) backoff.failed(ticket);
          else backoff.succeeded(ticket);
          // undici's Callback type is a union of the two shapes; one of them is always null here.
          (callback as (e: Error | null, s: unknown) => void)(error, socket);
        });
      },
    });
  }

  /** Connections attempted so far, all origins (for tests and metrics). */
  get connectionsOpened(): number {
    let n = 0;
    for (const b of this.backoffs.values()) n += b.attempts;
    return n;
  }

  private backoffFor(origin: string): ReconnectBackoff {
    let backoff = this.backoffs.get(origin);
    if (!backoff) {
      backoff = new ReconnectBackoff({
        perStep: this.options.connections ?? 4,
        initialDelayMs: this.options.reconnectDelayMs,
        maxDelayMs: this.options.reconnectMaxDelayMs,
      });
      this.backoffs.set(origin, backoff);
    }
    return backoff;
  }

  /**
   * POSTs and returns the answer whatever its status; throws NetworkError if there is none.
   * `deadline` (performance.now() ms) shortens the call's time to what is left of a larger
   * operation (e.g. one submit that mints a credential first).
   */
  async post(url: string, headers: Record<string, string>, body: string, deadline?: number): Promise<HttpAnswer> {
    const origin = new URL(url).origin;
    const u = new URL(url);
    const backoff = this.backoffFor(originKey(u.protocol, u.hostname, u.port));
    const wait = backoff.delayMs();
    if (wait > 0) throw new NetworkError(`POST ${origin}: reconnecting in ${wait} ms`, false, { retryAfterMs: wait });
    const timeoutMs = Math.ceil(Math.min(this.timeoutMs, deadline === undefined ? Infinity : deadline - performance.now()));
    if (timeoutMs <= 0) throw new NetworkError(`POST ${origin}: no time left`, false);
    let written = false;
    const dispatcher = {
      dispatch: (opts: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler) =>
        this.agent.dispatch(
          opts,
          markWritten(handler, () => (written = true)),
        ),
    };
    const abort = new AbortController();
    // Our own timer, not only undici's abort: a request waiting in the pool's queue while its
    // connections fail is not failed by undici until a connection frees up.
    let timer: NodeJS.Timeout | undefined;
    const deadlinePassed = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const error = new Error(`no answer within ${timeoutMs} ms`);
        abort.abort(error);
        reject(error);
      }, timeoutMs);
    });
    const call = (async () => {
      const res = await request(url, {
        method: 'POST',
        headers: { 'user-agent': VENDOR_USER_AGENT, ...headers },
        body,
        dispatcher: dispatcher as unknown as Dispatcher,
        signal: abort.signal,
      });
      const text = await res.body.text();
      return { status: res.statusCode, headers: res.headers, text };
    })();
    call.catch(() => undefined); // settled by the race below; a late failure is not unhandled
    try {
      return await Promise.race([call, deadlinePassed]);
    } catch (error) {
      const retryAfterMs = error instanceof ReconnectBackoffError ? backoff.waitMs() : undefined;
      throw new NetworkError(`POST ${origin} failed: ${(error as Error).message}`, written, {
        cause: error,
        ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
      });
    } finally {
      clearTimeout(timer);
    }
  }

  postJson(url: string, headers: Record<string, string>, body: unknown, deadline?: number): Promise<HttpAnswer> {
    return this.post(url, { 'content-type': 'application/json;charset=UTF-8', ...headers }, JSON.stringify(body), deadline);
  }

  postForm(url: string, headers: Record<string, string>, form: Record<string, string>, deadline?: number): Promise<HttpAnswer> {
    return this.post(url, { 'content-type': 'application/x-www-form-urlencoded;charset=UTF-8', ...headers }, new URLSearchParams(form).toString(), deadline);
  }

  /** Closes the client; calls still waiting after a second are aborted. */
  async close(): Promise<void> {
    // Best-effort: destroy() only aborts what close() still waits for; close() reports the outcome.
    const force = setTimeout(() => void this.agent.destroy().catch(() => undefined), 1000);
    try {
      await this.agent.close();
    } finally {
      clearTimeout(force);
    }
  }
}

/** One key per origin, the same from a URL and from undici's connect options (default ports made explicit). */
function originKey(protocol: string, hostname: string, port: string | number | undefined): string {
  return `${protocol}//${hostname}:${port === undefined || port === '' ? (protocol === 'https:' ? '443' : '80') : port}`;
}

/**
 * undici calls a handler's `onConnect` just before it writes the request to a connected socket
 * (its HTTP/1.1 client's writeH1): from then on the vendor may have it.
 */
function markWritten(handler: Dispatcher.DispatchHandler, mark: () => void): Dispatcher.DispatchHandler {
  return new Proxy(handler, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target) as unknown;
      if (prop === 'onConnect' && typeof value === 'function') {
        return (...args: unknown[]) => {
          mark();
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      }
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}

/** The deadline of a call that starts now and may take `timeoutMs`: performance.now() ms. */
export function deadlineAfter(timeoutMs: number): number {
  return performance.now() + timeoutMs;
}

/**
 * Waits for `work` (e.g. a shared credential mint) until `deadline` at the latest; after it,
 * throws a NetworkError that was not written (the push itself was not sent). `work` goes on.
 */
export function beforeDeadline<T>(work: Promise<T>, deadline: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new NetworkError('deadline passed before the request was sent', false)), Math.max(0, deadline - performance.now()));
    work.then(resolve, reject).finally(() => clearTimeout(timer));
  });
}

/** Parses a JSON body, or returns undefined for anything that is not JSON. */
export function jsonOf(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** Joins a base URL (possibly with a path) and a path. */
export function joinUrl(base: string, path: string): string {
  return base.replace(/\/+$/, '') + (path.startsWith('/') ? path : `/${path}`);
}
