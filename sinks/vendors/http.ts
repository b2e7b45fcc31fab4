import { Agent, request } from 'undici';

/** Options shared by the HTTPS vendors' clients (one client per app and vendor). */
export interface VendorHttpOptions {
  /** Extra trusted CA certificates (PEM), e.g. the emulators' test CA. TLS verification stays on. */
  readonly ca?: string | Buffer | undefined;
  /** Connections per origin. Default 4. */
  readonly connections?: number | undefined;
  /** Time allowed for a whole answer, in ms. Default 10 000. */
  readonly timeoutMs?: number | undefined;
}

export interface HttpAnswer {
  readonly status: number;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly text: string;
}

/** A vendor call that never reached an HTTP answer (connection refused, reset, timeout). */
export class NetworkError extends Error {
  readonly code = 'NETWORK';
}

/**
 * A keep-alive HTTPS client for one (app, vendor): an undici Agent (a pool per origin, so the auth
 * host and the send host each get their own connections) trusting the configured CA.
 */
export class VendorHttp {
  private readonly agent: Agent;
  private readonly timeoutMs: number;

  constructor(options: VendorHttpOptions = {}) {
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.agent = new Agent({
      connections: options.connections ?? 4,
      pipelining: 1,
      keepAliveTimeout: 30_000,
      headersTimeout: this.timeoutMs,
      bodyTimeout: this.timeoutMs,
      connect: { ca: options.ca === undefined ? undefined : [options.ca.toString()], rejectUnauthorized: true },
    });
  }

  /** POSTs and returns the answer whatever its status; throws NetworkError if there is none. */
  async post(url: string, headers: Record<string, string>, body: string): Promise<HttpAnswer> {
    try {
      const res = await request(url, { method: 'POST', headers, body, dispatcher: this.agent, signal: AbortSignal.timeout(this.timeoutMs) });
      const text = await res.body.text();
      return { status: res.statusCode, headers: res.headers, text };
    } catch (error) {
      throw new NetworkError(`POST ${new URL(url).origin} failed: ${(error as Error).message}`, { cause: error });
    }
  }

  postJson(url: string, headers: Record<string, string>, body: unknown): Promise<HttpAnswer> {
    return this.post(url, { 'content-type': 'application/json;charset=UTF-8', ...headers }, JSON.stringify(body));
  }

  postForm(url: string, headers: Record<string, string>, form: Record<string, string>): Promise<HttpAnswer> {
    return this.post(url, { 'content-type': 'application/x-www-form-urlencoded;charset=UTF-8', ...headers }, new URLSearchParams(form).toString());
  }

  close(): Promise<void> {
    return this.agent.close();
  }
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
