import { connect, constants, type ClientHttp2Session, type IncomingHttpHeaders, type OutgoingHttpHeaders } from 'node:http2';

export interface ApnsPoolOptions {
  /** `https://host:port` of APNs (or the emulator). */
  readonly origin: string;
  /** Extra trusted CA (PEM). TLS verification stays on. */
  readonly ca?: string | undefined;
  /** HTTP/2 connections kept open, requests spread round-robin. Default 2. */
  readonly connections?: number;
  /** Time allowed for one answer, ms. Default 10 000. */
  readonly timeoutMs?: number;
}

export interface ApnsAnswer {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
  /** The connection that answered (so an auth failure can retire it). */
  readonly session: ClientHttp2Session;
}

/**
 * The stream ended without an answer: GOAWAY above its stream id, reset, connection lost or
 * timed out. APNs did not (or may not have) take the notification; the caller resends it on
 * another connection (a duplicate from the timeout case carries the same collapse id).
 */
export class LostStreamError extends Error {
  readonly code = 'CONNECTION_LOST';
}

/**
 * A pool of HTTP/2 connections to APNs for one app. A connection that receives GOAWAY or closes
 * leaves its slot at once (streams it already accepted still finish on it); the next request in
 * that slot opens a fresh connection.
 */
export class ApnsConnectionPool {
  private readonly slots: Array<ClientHttp2Session | undefined>;
  private readonly timeoutMs: number;
  private next = 0;
  private closed = false;
  /** Every connection not yet closed, in a slot or draining after GOAWAY / retirement. */
  private readonly open = new Set<ClientHttp2Session>();
  /** Connections opened so far (for tests and metrics). */
  connectionsOpened = 0;

  constructor(private readonly options: ApnsPoolOptions) {
    this.slots = new Array(options.connections ?? 2).fill(undefined);
    this.timeoutMs = options.timeoutMs ?? 10_000;
  }

  private session(): ClientHttp2Session {
    if (this.closed) throw new LostStreamError('pool closed');
    const slot = this.next++ % this.slots.length;
    const existing = this.slots[slot];
    if (existing && !existing.closed && !existing.destroyed) return existing;
    const session = connect(this.options.origin, this.options.ca === undefined ? {} : { ca: this.options.ca });
    this.connectionsOpened++;
    this.open.add(session);
    const leave = () => {
      if (this.slots[slot] === session) this.slots[slot] = undefined;
    };
    session.on('goaway', leave);
    session.on('close', () => {
      leave();
      this.open.delete(session);
    });
    session.on('error', leave);
    this.slots[slot] = session;
    return session;
  }

  /** One attempt on one connection. Throws LostStreamError when no answer came back. */
  request(headers: OutgoingHttpHeaders, body: string): Promise<ApnsAnswer> {
    return new Promise((resolve, reject) => {
      let session: ClientHttp2Session;
      let stream;
      try {
        session = this.session();
        stream = session.request({ [constants.HTTP2_HEADER_METHOD]: 'POST', ...headers });
      } catch (error) {
        reject(new LostStreamError((error as Error).message, { cause: error }));
        return;
      }
      let status = 0;
      let responseHeaders: IncomingHttpHeaders = {};
      const chunks: Buffer[] = [];
      stream.setTimeout(this.timeoutMs, () => stream.close(constants.NGHTTP2_CANCEL));
      stream.on('response', (h) => {
        status = Number(h[constants.HTTP2_HEADER_STATUS]);
        responseHeaders = h;
      });
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        if (status > 0) resolve({ status, headers: responseHeaders, body: Buffer.concat(chunks).toString('utf8'), session });
      });
      stream.on('error', (error) => reject(new LostStreamError(error.message, { cause: error })));
      // A promise settles once: after 'end' resolved, this rejection is a no-op.
      stream.on('close', () => reject(new LostStreamError(`stream closed without an answer (rst ${stream.rstCode})`)));
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
    await Promise.all([...this.open].map((s) => new Promise<void>((resolve) => {
      if (s.destroyed) return resolve();
      const force = setTimeout(() => s.destroy(), 1000);
      s.once('close', () => {
        clearTimeout(force);
        resolve();
      });
      s.close();
    })));
  }
}
