import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { errorCode } from '../common/errors.ts';
import type { Logger } from '../common/log.ts';
import type { ParsedReceipt } from '../processors/fan-out/vendor-port.ts';
import { receiptRawKey } from '../processors/model/receipt-route.ts';
import { receiptViolation } from '../processors/receipt-join/validate.ts';
import { presentedKey, verifySharedSecret, type CallbackRequest } from '../sinks/vendors/receipt-auth.ts';
import { isReceiptVendor, vendorReceipts, type ReceiptVendor } from '../sinks/vendors/modules.ts';
import type { ReceiptReceiverConfig } from './config.ts';
import type { ReceiptMetricsListener, RejectReason } from './metrics.ts';
import type { ReceiptPublisher } from './publisher.ts';
import { ConnectionGuard } from './guard.ts';
import type { NonceStore, NonceVerdict } from './nonces.ts';

/**
 * Parses one verified callback body into receipts: the vendor adapters' `parseReceipt`
 * (sinks/vendors/<vendor>/). Throws, or returns no receipts, for a malformed body.
 */
export type ReceiptParser = (vendor: ReceiptVendor, body: Buffer, contentType: string | undefined) => readonly ParsedReceipt[];

export interface ReceiptReceiverDeps {
  readonly config: ReceiptReceiverConfig;
  readonly publisher: ReceiptPublisher;
  readonly parse: ReceiptParser;
  /** HMS nonce memory; shared by every receiver in a deployment (`MysqlNonceStore`). */
  readonly nonces: NonceStore;
  readonly metrics?: ReceiptMetricsListener;
  readonly logger?: Logger;
  /** Clock for signature freshness, epoch ms. Default Date.now. */
  readonly now?: () => number;
}

class Rejection {
  constructor(
    readonly status: number,
    readonly reason: RejectReason,
  ) {}
}

/** Every authentication failure gets this one answer, so a caller cannot tell which apps exist. */
const UNAUTHORIZED = { status: 401, body: 'unauthorized' } as const;

/** Compared against when the app or its vendor route is unknown, so that path costs what a real check costs. */
const NO_SECRET = 'no-such-receipt-secret-configured';

/** How long after the configured headers and body deadlines Node's own timeouts (the backstop) fire. */
const BACKSTOP_MARGIN_MS = 1_000;

/**
 * The vendor receipt receiver (node:http). Routes: `POST /receipts/{vendor}/{appId}` for every
 * vendor whose module has receipts (sinks/vendors/modules.ts `RECEIPT_VENDORS`: hms, xiaomi, oppo,
 * vivo; the URL registered with the vendor for that app; Xiaomi/OPPO/vivo URLs end in
 * `?key=<sharedSecret>`), `GET /health`. In order, and before any body byte is read: connection
 * caps and the headers deadline (guard.ts), the client's request rate (429), the route, and the
 * app's credentials, checked by the vendor's scheme (its key, or the HMS signature header; one 401
 * answer for unknown apps and bad credentials alike).
 * Only then is the body read, within `bodyTimeoutMs` and `maxBodyBytes`; an HMS nonce is checked
 * against the shared nonce memory; a body that does not parse is a 400 `malformed`, one whose
 * receipts break an ingest rule (processors/receipt-join/validate.ts) a 400 `invalid_receipt`; the
 * callback is answered 200 only after Kafka acknowledged it.
 * Refused callbacks are counted and never reach Kafka.
 */
export class ReceiptReceiver {
  private readonly server: Server;
  private readonly guard: ConnectionGuard;
  private readonly now: () => number;

  constructor(private readonly deps: ReceiptReceiverDeps) {
    const config = deps.config;
    this.now = deps.now ?? Date.now;
    // Node's own timeouts stay as a backstop; the guard and readBody enforce the configured ones to the ms.
    // The backstop fires a second later, so on a busy box its own 408 never races the guard's close.
    const backstopHeadersMs = config.headersTimeoutMs + BACKSTOP_MARGIN_MS;
    this.server = createServer(
      {
        connectionsCheckingInterval: Math.min(1_000, config.headersTimeoutMs),
        headersTimeout: backstopHeadersMs,
        requestTimeout: backstopHeadersMs + config.bodyTimeoutMs + BACKSTOP_MARGIN_MS,
      },
      (req, res) => void this.handle(req, res).catch((error: unknown) => this.failed(res, error)),
    );
    this.server.keepAliveTimeout = Math.min(5_000, config.headersTimeoutMs);
    this.guard = new ConnectionGuard(config, (reason) => deps.metrics?.connectionRefused?.(reason));
    this.guard.attach(this.server);
  }

  /** Starts listening; resolves with the bound port (useful with port 0). */
  async listen(): Promise<number> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(this.deps.config.port, this.deps.config.host, () => {
        this.server.off('error', reject);
        resolve();
      });
    });
    return (this.server.address() as AddressInfo).port;
  }

  /** Stops accepting, closes open connections, and forgets the nonce store's timers. */
  async close(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.server.closeAllConnections();
    await closed;
    await this.deps.nonces.close();
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const socket = req.socket;
    this.guard.requestStarted(socket);
    res.once('finish', () => this.guard.requestDone(socket));
    if (!this.guard.allowRequest(socket.remoteAddress ?? 'unknown')) return this.reject(req, res, 'unknown', new Rejection(429, 'rate_limited'));
    const url = new URL(req.url ?? '/', 'http://receiver');
    if (url.pathname === '/health' && req.method === 'GET') return reply(res, 200, 'text/plain', 'ok');
    const match = /^\/receipts\/([a-z]+)\/([A-Za-z0-9._-]{1,128})\/?$/.exec(url.pathname);
    const vendor = match?.[1];
    if (!match || !vendor || !isReceiptVendor(vendor)) return this.reject(req, res, 'unknown', new Rejection(404, 'unknown_route'));
    const rules = vendorReceipts(vendor);
    if (req.method !== 'POST') return this.reject(req, res, vendor, new Rejection(405, 'method_not_allowed'));
    const appId = match[2]!;

    // Credentials first: nothing of the body is read for an unknown app or a bad key or signature.
    const secrets = this.deps.config.apps.get(appId)?.vendors[vendor];
    const now = this.now();
    const callback: CallbackRequest = { header: (name) => header(req, name), query: (name) => url.searchParams.get(name) ?? undefined };
    if (!secrets) {
      verifySharedSecret(presentedKey(callback) ?? '', NO_SECRET);
      return this.reject(req, res, vendor, new Rejection(UNAUTHORIZED.status, 'unknown_app'));
    }
    const checked = rules.auth.verify(callback, secrets, { now, maxSkewMs: this.deps.config.hmsMaxSkewMs });
    if (!checked.ok) return this.reject(req, res, vendor, new Rejection(UNAUTHORIZED.status, checked.reason));
    const nonce = checked.nonce;

    let body: Buffer;
    try {
      body = await readBody(req, this.deps.config.maxBodyBytes, this.deps.config.bodyTimeoutMs);
    } catch (error) {
      return this.reject(req, res, vendor, error instanceof Rejection ? error : new Rejection(400, 'malformed'));
    }

    let duplicate = false;
    if (nonce !== undefined) {
      let verdict: NonceVerdict;
      try {
        verdict = await this.deps.nonces.check(`${vendor}/${appId}`, nonce, body, now);
      } catch (error) {
        this.deps.metrics?.nonceCheckFailed?.(errorCode(error));
        this.deps.logger?.warn('HMS nonce memory unavailable; answering 503', { vendor, appId, code: errorCode(error) });
        return reply(res, 503, 'text/plain', 'unavailable');
      }
      if (verdict === 'replayed') return this.reject(req, res, vendor, new Rejection(UNAUTHORIZED.status, 'replayed_nonce'));
      duplicate = verdict === 'duplicate';
    }

    const contentType = header(req, 'content-type');
    let receipts: readonly ParsedReceipt[];
    try {
      receipts = this.deps.parse(vendor, body, contentType);
    } catch {
      receipts = []; // a body the parser refuses is answered 400 malformed just below
    }
    if (receipts.length === 0 || receipts.some((r) => r.vendor !== vendor)) return this.reject(req, res, vendor, new Rejection(400, 'malformed'));
    // The ingest rules the receipts stage applies again (it dead-letters what breaks them): an
    // absurd or fractional time would otherwise sit in the join until it fails to be written.
    for (const r of receipts) {
      const broken = r.vendorMessageId ? receiptViolation(r, now, this.deps.config.ingest) : undefined;
      if (broken) {
        this.deps.logger?.debug('receipt callback breaks an ingest rule', { vendor, appId, rule: broken });
        return this.reject(req, res, vendor, new Rejection(400, 'invalid_receipt'));
      }
    }

    try {
      await this.deps.publisher.publish([
        {
          key: receiptRawKey(vendor, receipts),
          record: {
            receipt_id: createHash('sha256').update(`${vendor}\n`).update(body).digest('hex'),
            vendor,
            app_id: appId,
            content_type: contentType ?? null,
            body,
            received_at: now,
          },
        },
      ]);
    } catch (error) {
      this.deps.metrics?.publishFailed?.(vendor, errorCode(error));
      this.deps.logger?.warn('receipt not handed to Kafka; answering 503', { vendor, appId, code: errorCode(error) });
      return reply(res, 503, 'text/plain', 'unavailable');
    }
    this.deps.metrics?.accepted?.(vendor, appId, receipts.length, duplicate);
    reply(res, 200, rules.ack.contentType, rules.ack.body);
  }

  /**
   * A request whose handling threw (a bug, not the caller's doing) gets a 500 instead of ending the
   * process with an unhandled rejection. Only the error's code is logged: its message can quote the
   * request URL, whose query may carry a receipt key.
   */
  private failed(res: ServerResponse, error: unknown): void {
    this.deps.logger?.error('receipt callback failed; answering 500', { code: errorCode(error) });
    if (res.headersSent) res.destroy();
    else reply(res, 500, 'text/plain', 'error');
  }

  /**
   * Answers and closes the connection, without reading what is left of the body. Authentication
   * failures all get the same status, headers and body; the reason goes only to the metrics.
   */
  private reject(req: IncomingMessage, res: ServerResponse, vendor: string, rejection: Rejection): void {
    this.deps.metrics?.rejected?.(vendor, rejection.reason, rejection.status);
    this.deps.logger?.debug('receipt callback rejected', { vendor, reason: rejection.reason, status: rejection.status });
    res.setHeader('connection', 'close');
    if (rejection.status === 429) res.setHeader('retry-after', '1');
    reply(res, rejection.status, 'text/plain', rejection.status === UNAUTHORIZED.status ? UNAUTHORIZED.body : rejection.reason);
    const socket = req.socket;
    const destroy = () => socket.destroy();
    res.once('finish', destroy);
    // A client that does not read its answer does not keep the connection either.
    setTimeout(destroy, 1_000).unref();
  }
}

function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

function reply(res: ServerResponse, status: number, contentType: string, body: string): void {
  if (res.headersSent) return;
  res.writeHead(status, { 'content-type': contentType, 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

/**
 * Reads the body up to `limit` bytes within `timeoutMs` of the call; a larger body (declared or
 * streamed) is a 413 rejection, a slower one a 408.
 */
function readBody(req: IncomingMessage, limit: number, timeoutMs: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length'] ?? NaN);
  if (Number.isFinite(declared) && declared > limit) return Promise.reject(new Rejection(413, 'oversized'));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const timer = setTimeout(() => fail(new Rejection(408, 'body_timeout')), timeoutMs);
    const fail = (rejection: Rejection) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      req.pause();
      reject(rejection);
    };
    req.on('data', (chunk: Buffer) => {
      if (done) return;
      size += chunk.length;
      if (size > limit) return fail(new Rejection(413, 'oversized'));
      chunks.push(chunk);
    });
    req.on('end', () => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      resolve(Buffer.concat(chunks, size));
    });
    req.on('error', () => fail(new Rejection(400, 'malformed')));
    req.on('close', () => fail(new Rejection(400, 'malformed')));
  });
}
