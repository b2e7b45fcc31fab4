import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { errorCode } from '../common/errors.ts';
import type { Logger } from '../common/log.ts';
import type { ParsedReceipt } from '../sinks/vendors/types.ts';
import { RECEIPT_VENDORS, type ReceiptReceiverConfig, type ReceiptVendor } from './config.ts';
import type { ReceiptMetricsListener, RejectReason } from './metrics.ts';
import type { ReceiptPublisher } from './publisher.ts';
import { NonceCache, verifyHmsCallback, verifySharedSecret, type VerifyResult } from './verify.ts';

/**
 * Parses one verified callback body into receipts: the vendor adapters' `parseReceipt`
 * (sinks/vendors/<vendor>/). Throws, or returns no receipts, for a malformed body.
 */
export type ReceiptParser = (vendor: ReceiptVendor, body: Buffer, contentType: string | undefined) => readonly ParsedReceipt[];

export interface ReceiptReceiverDeps {
  readonly config: ReceiptReceiverConfig;
  readonly publisher: ReceiptPublisher;
  readonly parse: ReceiptParser;
  readonly metrics?: ReceiptMetricsListener;
  readonly logger?: Logger;
  /** Clock for signature freshness, epoch ms. Default Date.now. */
  readonly now?: () => number;
}

/** What each vendor expects back on success (the body is informational; the status is what counts). */
const ACK_BODY: Readonly<Record<ReceiptVendor, { contentType: string; body: string }>> = {
  hms: { contentType: 'application/json', body: '{"errno":"0","errmsg":"success"}' },
  xiaomi: { contentType: 'text/plain', body: 'ok' },
  oppo: { contentType: 'application/json', body: '{"code":0,"message":"success"}' },
  vivo: { contentType: 'application/json', body: '{"result":0,"desc":"success"}' },
};

class Rejection {
  constructor(readonly status: number, readonly reason: RejectReason) {}
}

/**
 * The vendor receipt receiver (node:http). Routes: `POST /receipts/{hms|xiaomi|oppo|vivo}/{appId}`
 * (the URL registered with the vendor for that app; Xiaomi/OPPO/vivo URLs end in
 * `?key=<sharedSecret>`), `GET /health`. A callback is answered 200 only after Kafka acknowledged
 * it; forged, malformed and oversized callbacks get 4xx, are counted, and never reach Kafka.
 */
export class ReceiptReceiver {
  private readonly server: Server;
  private readonly nonces: NonceCache;
  private readonly now: () => number;

  constructor(private readonly deps: ReceiptReceiverDeps) {
    this.now = deps.now ?? Date.now;
    this.nonces = new NonceCache(2 * deps.config.hmsMaxSkewMs);
    this.server = createServer((req, res) => void this.handle(req, res));
    this.server.requestTimeout = deps.config.bodyTimeoutMs;
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

  async close(): Promise<void> {
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://receiver');
    if (url.pathname === '/health' && req.method === 'GET') return reply(res, 200, 'text/plain', 'ok');
    const match = /^\/receipts\/([a-z]+)\/([A-Za-z0-9._-]{1,128})\/?$/.exec(url.pathname);
    const vendor = match?.[1] as ReceiptVendor | undefined;
    if (!match || !vendor || !RECEIPT_VENDORS.includes(vendor)) return this.reject(req, res, 'unknown', new Rejection(404, 'unknown_route'));
    if (req.method !== 'POST') return this.reject(req, res, vendor, new Rejection(405, 'method_not_allowed'));
    const appId = match[2]!;
    const auth = this.deps.config.apps.get(appId)?.vendors[vendor];
    if (!auth) return this.reject(req, res, vendor, new Rejection(404, 'unknown_app'));

    let body: Buffer;
    try {
      body = await readBody(req, this.deps.config.maxBodyBytes);
    } catch (error) {
      return this.reject(req, res, vendor, error instanceof Rejection ? error : new Rejection(400, 'malformed'));
    }

    const verdict: VerifyResult =
      auth.kind === 'hms-hmac'
        ? verifyHmsCallback(header(req, 'x-huawei-callback-id'), auth.credentials, body, this.now(), this.deps.config.hmsMaxSkewMs, this.nonces)
        : verifySharedSecret(url.searchParams.get('key') ?? header(req, 'x-push-receipt-key'), auth.sharedSecret);
    if (!verdict.ok) return this.reject(req, res, vendor, new Rejection(401, verdict.reason));

    const contentType = header(req, 'content-type');
    let receipts: readonly ParsedReceipt[];
    try {
      receipts = this.deps.parse(vendor, body, contentType);
    } catch {
      receipts = [];
    }
    if (receipts.length === 0 || receipts.some((r) => r.vendor !== vendor)) return this.reject(req, res, vendor, new Rejection(400, 'malformed'));

    try {
      await this.deps.publisher.publish([
        {
          receipt_id: createHash('sha256').update(`${vendor}\n`).update(body).digest('hex'),
          vendor,
          app_id: appId,
          content_type: contentType ?? null,
          body,
          received_at: this.now(),
        },
      ]);
    } catch (error) {
      this.deps.metrics?.publishFailed?.(vendor, errorCode(error));
      this.deps.logger?.warn('receipt not handed to Kafka; answering 503', { vendor, appId, code: errorCode(error) });
      return reply(res, 503, 'text/plain', 'unavailable');
    }
    this.deps.metrics?.accepted?.(vendor, appId, receipts.length, verdict.duplicate);
    const ack = ACK_BODY[vendor];
    reply(res, 200, ack.contentType, ack.body);
  }

  private reject(req: IncomingMessage, res: ServerResponse, vendor: string, rejection: Rejection): void {
    this.deps.metrics?.rejected?.(vendor, rejection.reason, rejection.status);
    this.deps.logger?.debug('receipt callback rejected', { vendor, reason: rejection.reason, status: rejection.status });
    // Do not read the rest of an oversized or unauthenticated body: answer and close.
    if (!req.complete) res.setHeader('connection', 'close');
    reply(res, rejection.status, 'text/plain', rejection.reason);
    if (!req.complete) res.once('finish', () => req.destroy());
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

/** Reads the body up to `limit` bytes; a larger body (declared or streamed) is a 413 rejection. */
function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length'] ?? NaN);
  if (Number.isFinite(declared) && declared > limit) return Promise.reject(new Rejection(413, 'oversized'));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const fail = (rejection: Rejection) => {
      if (done) return;
      done = true;
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
      resolve(Buffer.concat(chunks, size));
    });
    req.on('error', () => fail(new Rejection(400, 'malformed')));
    req.on('aborted', () => fail(new Rejection(400, 'body_timeout')));
  });
}
