import { connect, constants, type ClientHttp2Session, type IncomingHttpHeaders, type OutgoingHttpHeaders } from 'node:http2';
import type { SecureContext } from 'node:tls';
import { VENDOR_USER_AGENT } from '../http.ts';
import { ReconnectBackoff } from '../reconnect.ts';
import { UnansweredError } from '../unanswered.ts';

export interface ApnsPoolOptions {
  /** `https://host:port` of APNs (or the emulator). */
  readonly origin: string;
  /** Extra trusted CA (PEM). TLS verification stays on. */
  readonly ca?: string | undefined;
  /**
   * The TLS context of every connection, when the app authenticates with its provider certificate
   * (certificate.ts `clientSecureContext`, which holds the CA too); `ca` is then not read.
   */
  readonly secureContext?: SecureContext | undefined;
  /** HTTP/2 connections kept open, requests spread round-robin; also the most new connections per reconnect step. Default 2. */
  readonly connections?: number;
  /**
   * Time allowed for one answer, ms, from the request being handed to the pool (connecting
   * included). Default 10 000. A connection with a request past it is destroyed.
   */
  readonly timeoutMs?: number;
  /** A PING is sent on every connection this often, ms. Default 15 000. */
  readonly pingIntervalMs?: number;
  /** A connection whose PING is not acknowledged within this time is destroyed, ms. Default 5 000. */
  readonly pingTimeoutMs?: number;
  /** Base delay of the reconnect backoff after a failed connection, ms. Default 250 (see ReconnectBackoff). */
  readonly reconnectDelayMs?: number;
  /** Upper bound of the reconnect delay, ms. Default 30 000. */
  readonly reconnectMaxDelayMs?: number;
}

export interface ApnsAnswer {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
  /** The connection that answered (so an auth failure can retire it). */
  readonly session: ClientHttp2Session;
}

/**
 * The stream ended without an answer. `written: false` when APNs cannot have it (no connection,
 * reconnect backoff, refused stream, a stream above a GOAWAY's last stream id); `written: true`
 * when it was sent and the answer was lost (reset, connection lost, deadline): APNs may have taken
 * it, and a resend carries the same apns-id and collapse id.
 */
export class LostStreamError extends UnansweredError {
  readonly code = 'CONNECTION_LOST';
}

/**
 * A pool of HTTP/2 connections to APNs for one app. A connection leaves its slot at once when it
 * receives GOAWAY, fails, closes, misses a request's deadline or a PING (the last two destroy it:
 * a connection reset without GOAWAY may never be noticed otherwise); streams it already accepted
 * still finish on a GOAWAY'd one. The next request in that slot opens a fresh connection, paced
 * by a ReconnectBackoff while connections fail.
 */
export class ApnsConnectionPool {
  private readonly slots: Array<ClientHttp2Session | undefined>;
  private readonly timeoutMs: number;
  private readonly backoff: ReconnectBackoff;
  private next = 0;
  private closed = false;
  /** Every connection not yet closed, in a slot or draining after GOAWAY / retirement. */
  private readonly open = new Set<ClientHttp2Session>();
  /** Connections opened so far (for tests and metrics). */
  connectionsOpened = 0;
  /** Connections destroyed for a missed deadline or PING (for tests and metrics). */
  connectionsDestroyed = 0;

  constructor(private readonly options: ApnsPoolOptions) {
    const size = Math.max(1, options.connections ?? 2);
    this.slots = new Array(size).fill(undefined);
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.backoff = new ReconnectBackoff({ perStep: size, initialDelayMs: options.reconnectDelayMs, maxDelayMs: options.reconnectMaxDelayMs });
  }

  private usable(s: ClientHttp2Session | undefined): s is ClientHttp2Session {
    return s !== undefined && !s.closed && !s.destroyed;
  }

  private session(): ClientHttp2Session {
    if (this.closed) throw new LostStreamError('pool closed', false);
    const slot = this.next++ % this.slots.length;
    const existing = this.slots[slot];
    if (this.usable(existing)) return existing;
    const ticket = this.backoff.tryOpen();
    if (!ticket) {
      // Reconnecting is backing off: a live connection in another slot still serves.
      const live = this.slots.find((s) => this.usable(s));
      if (live) return live;
      const wait = this.backoff.waitMs();
      throw new LostStreamError(`APNs unreachable; reconnecting in ${wait} ms`, false, { retryAfterMs: wait });
    }
    const { secureContext, ca } = this.options;
    const session = connect(this.options.origin, secureContext !== undefined ? { secureContext } : ca === undefined ? {} : { ca });
    this.connectionsOpened++;
    this.open.add(session);
    this.slots[slot] = session;
    let connected = false;
    const connectTimer = setTimeout(() => this.destroy(session, 'connect timeout'), this.timeoutMs);
    const leave = () => {
      if (this.slots[slot] === session) this.slots[slot] = undefined;
    };
    const pinger = setInterval(() => this.ping(session), this.options.pingIntervalMs ?? 15_000);
    pinger.unref();
    session.once('connect', () => {
      connected = true;
      clearTimeout(connectTimer);
      this.backoff.succeeded(ticket);
    });
    session.on('goaway', leave);
    session.on('error', () => {
      leave();
      if (!connected) this.backoff.failed(ticket);
    });
    session.on('close', () => {
      leave();
      clearTimeout(connectTimer);
      clearInterval(pinger);
      this.open.delete(session);
      if (!connected) this.backoff.failed(ticket);
    });
    return session;
  }

  private ping(session: ClientHttp2Session): void {
    if (!this.usable(session) || session.connecting) return;
    const timer = setTimeout(() => this.destroy(session, 'PING unanswered'), this.options.pingTimeoutMs ?? 5_000);
    const sent = session.ping((error) => {
      clearTimeout(timer);
      if (error) this.destroy(session, `PING failed: ${error.message}`);
    });
    if (!sent) clearTimeout(timer); // too many PINGs outstanding: the earlier ones' timers stand
  }

  private destroy(session: ClientHttp2Session, reason: string): void {
    const i = this.slots.indexOf(session);
    if (i >= 0) this.slots[i] = undefined;
    if (session.destroyed) return;
    this.connectionsDestroyed++;
    session.destroy(new Error(reason));
  }

  /**
   * One attempt on one connection; settles at the latest after the pool's timeout or at
   * `deadline` (performance.now() ms), whichever is first. Throws LostStreamError when no
   * answer came back.
   */
  request(headers: OutgoingHttpHeaders, body: string, deadline?: number): Promise<ApnsAnswer> {
    return new Promise((resolve, reject) => {
      const timeoutMs = Math.min(this.timeoutMs, deadline === undefined ? Infinity : deadline - performance.now());
      if (timeoutMs <= 0) return reject(new LostStreamError('no time left', false));
      let session: ClientHttp2Session;
      let stream;
      try {
        session = this.session();
        stream = session.request({ [constants.HTTP2_HEADER_METHOD]: 'POST', 'user-agent': VENDOR_USER_AGENT, ...headers });
      } catch (error) {
        if (error instanceof LostStreamError) return reject(error);
        return reject(new LostStreamError((error as Error).message, false, { cause: error }));
      }
      let done = false;
      let written = false;
      let status = 0;
      let responseHeaders: IncomingHttpHeaders = {};
      const chunks: Buffer[] = [];
      const lost = (message: string, cause?: unknown) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        // A refused stream (or one above a GOAWAY's last stream id) was not processed (RFC 9113 §8.7).
        const refused = stream.rstCode === constants.NGHTTP2_REFUSED_STREAM;
        reject(new LostStreamError(message, written && !refused, cause === undefined ? {} : { cause }));
      };
      const timer = setTimeout(() => {
        lost(`no answer within ${Math.round(timeoutMs)} ms`);
        // The connection missed a deadline: it may be dead without knowing it. Destroy it.
        this.destroy(session, 'request deadline missed');
      }, timeoutMs);
      // The stream has its id: its HEADERS frame is on its way to APNs.
      stream.once('ready', () => (written = true));
      stream.on('response', (h) => {
        status = Number(h[constants.HTTP2_HEADER_STATUS]);
        responseHeaders = h;
      });
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        if (status === 0 || done) return;
        done = true;
        clearTimeout(timer);
        resolve({ status, headers: responseHeaders, body: Buffer.concat(chunks).toString('utf8'), session });
      });
      stream.on('error', (error) => lost(error.message, error));
      stream.on('close', () => lost(`stream closed without an answer (rst ${stream.rstCode})`));
      stream.end(body);
    });
  }

  /** Closes a connection gracefully (after an auth failure, Apple wants a new connection). */
  retire(session: ClientHttp2Session): void {
    const i = this.slots.indexOf(session);
    if (i >= 0) this.slots[i] = undefined;
    if (!session.closed) session.close();
  }

  /** Closes every connection: in-flight streams may finish for up to a second, then it is destroyed. */
  async close(): Promise<void> {
    this.closed = true;
    this.slots.fill(undefined);
    await Promise.all(
      [...this.open].map(
        (s) =>
          new Promise<void>((resolve) => {
            if (s.destroyed) return resolve();
            const force = setTimeout(() => s.destroy(), 1000);
            s.once('close', () => {
              clearTimeout(force);
              resolve();
            });
            s.close();
          }),
      ),
    );
  }
}
