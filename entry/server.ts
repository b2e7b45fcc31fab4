import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { errorCode } from '../common/errors.ts';
import type { Logger } from '../common/log.ts';
import { requestId } from '../processors/business/transfer.ts';
import { cancelRecord, type PushRequestRecord } from '../processors/campaigns/records.ts';
import { ConnectionGuard } from '../receipts/guard.ts';
import { MetricsRegistry } from '../sinks/metrics/prometheus.ts';
import type { EntryConfig } from './config.ts';
import type { ApiKeys, BusinessKey } from './keys.ts';
import type { CampaignReport } from './progress.ts';
import type { EntryPublisher } from './publisher.ts';
import { KeyRateLimits } from './rate.ts';
import { FieldError, campaignIdOf, parseCampaignBody, parsePushBody } from './validate.ts';

/** A campaign's report for its sender (entry/progress.ts). */
export interface CampaignReports {
  report(campaignId: string, sender: string): Promise<CampaignReport | undefined>;
}

export interface EntryServerDeps {
  readonly config: EntryConfig;
  readonly keys: Pick<ApiKeys, 'authenticate'>;
  readonly publisher: EntryPublisher;
  readonly campaigns: CampaignReports;
  /** The pipeline's own checks of a request (entry/validate.ts `transferCheck`). */
  readonly check?: (request: PushRequestRecord) => void;
  readonly logger?: Logger;
  /** Clock, epoch ms. Default Date.now. */
  readonly now?: () => number;
}

/** An answer other than 2xx: `{"error": {"field": ..., "message": ...}}`. */
class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly field: string,
    message: string,
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
  }
}

const CAMPAIGN_PATH = /^\/v1\/campaigns\/([^/]+)\/?$/;
/** `application/json`, with parameters (`; charset=utf-8`) or none. */
const JSON_TYPE = /^\s*application\/json\s*(;|$)/i;

/**
 * The HTTP entry for senders without Kafka (docs/entry.md), node:http. Routes: `POST /v1/pushes`,
 * `POST /v1/campaigns`, `GET /v1/campaigns/{id}`, `DELETE /v1/campaigns/{id}`, `GET /health`,
 * `GET /metrics` (Prometheus: `push_entry_requests_total` by route and status; no key, like a worker's).
 * In order: connection caps and the headers deadline (receipts/guard.ts), the route, the API key
 * (`Authorization: Bearer pk_…`, 401), the key's rate (429 with Retry-After), then the body (415
 * unless `application/json`, 413 over PUSH_ENTRY_MAX_BODY_BYTES, 400 naming the field for anything
 * invalid). An accepted request is answered 202 only after Kafka acknowledged its record; it only
 * produces to Kafka (push.requests, push.campaigns) and reads the campaigns' progress.
 */
export class EntryServer {
  private readonly server: Server;
  private readonly guard: ConnectionGuard;
  private readonly rates = new KeyRateLimits();
  private readonly now: () => number;
  private readonly metrics = new MetricsRegistry();
  private readonly requests = this.metrics.counter('push_entry_requests_total', 'Requests answered by the entry, by route and HTTP status');

  constructor(private readonly deps: EntryServerDeps) {
    const c = deps.config;
    this.now = deps.now ?? Date.now;
    this.server = createServer(
      { connectionsCheckingInterval: 1_000, headersTimeout: c.headersTimeoutMs, requestTimeout: c.headersTimeoutMs + c.bodyTimeoutMs },
      (req, res) => void this.handle(req, res),
    );
    this.guard = new ConnectionGuard({
      maxConnections: c.maxConnections,
      maxConnectionsPerClient: c.maxConnections,
      // Rates are per API key (below), not per address: many senders may share a proxy.
      clientRequestsPerSecond: Number.MAX_SAFE_INTEGER,
      headersTimeoutMs: c.headersTimeoutMs,
    });
    this.guard.attach(this.server);
  }

  /** Starts listening; resolves with the bound port (rejects with the listen error). */
  async listen(): Promise<number> {
    await once(this.server.listen(this.deps.config.port, this.deps.config.host), 'listening');
    return (this.server.address() as AddressInfo).port;
  }

  /** Stops accepting and closes open connections. */
  async close(): Promise<void> {
    const closed = once(this.server.close(), 'close');
    this.server.closeAllConnections();
    await closed;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    this.guard.requestStarted(req.socket);
    res.once('finish', () => {
      this.guard.requestDone(req.socket);
      this.requests.inc({ route: routeName(req.url), status: String(res.statusCode) });
    });
    if (routeName(req.url) === 'metrics' && req.method === 'GET') {
      res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' }).end(this.metrics.render());
      return;
    }
    try {
      const [status, body] = await this.route(req);
      json(res, status, body);
    } catch (error) {
      if (error instanceof HttpError) {
        if (error.retryAfterSeconds !== undefined) res.setHeader('retry-after', String(error.retryAfterSeconds));
        if (error.status === 413) res.setHeader('connection', 'close');
        json(res, error.status, { error: { field: error.field, message: error.message } });
        return;
      }
      // The message could quote the request; only the code is logged.
      this.deps.logger?.error('entry request failed; answering 500', { code: errorCode(error) });
      json(res, 500, { error: { field: '', message: 'internal error' } });
    }
  }

  private async route(req: IncomingMessage): Promise<[number, unknown]> {
    const path = new URL(req.url ?? '/', 'http://entry').pathname;
    const method = req.method ?? 'GET';
    if (path === '/health') return [200, { status: 'ok' }];
    const campaign = CAMPAIGN_PATH.exec(path);
    const allowed = path === '/v1/pushes' || path === '/v1/campaigns' || path === '/v1/campaigns/' ? ['POST'] : campaign ? ['GET', 'DELETE'] : undefined;
    if (!allowed) throw new HttpError(404, 'path', 'no such route');
    if (!allowed.includes(method)) throw new HttpError(405, 'method', `expected ${allowed.join(' or ')}`);
    const key = await this.authenticate(req);
    const wait = this.rates.take(key.keyId, key.requestsPerSecond ?? this.deps.config.keyRequestsPerSecond);
    if (wait > 0) throw new HttpError(429, 'authorization', 'over the rate limit of this API key', wait);
    if (campaign) {
      const id = campaignIdOf(campaign[1]!);
      return method === 'GET' ? this.show(id, key) : this.cancel(id, key);
    }
    const body = await this.readJson(req);
    const ctx = { sender: key.business, now: this.now(), newId: () => randomUUID(), idempotencyHeader: header(req, 'idempotency-key'), check: this.deps.check };
    try {
      if (path === '/v1/pushes') {
        const record = parsePushBody(body, ctx);
        await this.publish(() => this.deps.publisher.request(record), key);
        // The pipeline's id of the request: its task rows are (uid, biz:<request_id>, 0, device), its events carry it as msg_id.
        return [202, { request_id: requestId(record.uid, record.sender, record.idempotency_key), idempotency_key: record.idempotency_key }];
      }
      const record = parseCampaignBody(body, ctx, this.deps.config.maxCampaignUids);
      await this.publish(() => this.deps.publisher.campaign(record), key);
      return [202, { campaign_id: record.campaign_id, uids: record.uids.length }];
    } catch (error) {
      if (error instanceof FieldError) throw new HttpError(400, error.field, error.message);
      throw error;
    }
  }

  private async show(campaignId: string, key: BusinessKey): Promise<[number, unknown]> {
    const report = await this.deps.campaigns.report(campaignId, key.business);
    if (!report) throw notFound();
    return [200, report];
  }

  /** Cancels a campaign: 202 once the CANCEL is in push.campaigns (the expansion stops within a commit interval). */
  private async cancel(campaignId: string, key: BusinessKey): Promise<[number, unknown]> {
    const before = await this.deps.campaigns.report(campaignId, key.business);
    if (before?.state === 'cancelled') return [200, before];
    const at = this.now();
    const record = cancelRecord(campaignId, key.business, at);
    await this.publish(() => this.deps.publisher.campaign(record), key);
    // What was already submitted stays submitted: the answer says how much that was so far.
    return [202, { campaign_id: campaignId, state: 'cancelling', cancel_requested_at: new Date(at).toISOString(), before: before ?? null }];
  }

  private async authenticate(req: IncomingMessage): Promise<BusinessKey> {
    const m = /^Bearer\s+(\S+)$/i.exec(header(req, 'authorization') ?? '');
    const key = m ? await this.deps.keys.authenticate(m[1]!) : undefined;
    if (!key) throw new HttpError(401, 'authorization', 'missing, unknown or revoked API key (Authorization: Bearer pk_…)');
    return key;
  }

  private async publish(send: () => Promise<void>, key: BusinessKey): Promise<void> {
    try {
      await send();
    } catch (error) {
      this.deps.logger?.warn('request not handed to Kafka; answering 503', { keyId: key.keyId, code: errorCode(error) });
      throw new HttpError(503, '', 'Kafka is unavailable; try again', 1);
    }
  }

  /** Reads the JSON body within the size and time limits. */
  private async readJson(req: IncomingMessage): Promise<unknown> {
    const limit = this.deps.config.maxBodyBytes;
    // No Content-Type is refused as any other type is: the body is read as JSON only when the client says it is.
    if (!JSON_TYPE.test(header(req, 'content-type') ?? '')) throw new HttpError(415, 'content-type', 'expected application/json');
    if (Number(req.headers['content-length'] ?? 0) > limit) throw new HttpError(413, 'body', `larger than ${limit} bytes (PUSH_ENTRY_MAX_BODY_BYTES)`);
    const chunks: Buffer[] = [];
    let size = 0;
    const timer = setTimeout(() => req.destroy(), this.deps.config.bodyTimeoutMs);
    try {
      for await (const chunk of req as AsyncIterable<Buffer>) {
        size += chunk.length;
        if (size > limit) throw new HttpError(413, 'body', `larger than ${limit} bytes (PUSH_ENTRY_MAX_BODY_BYTES)`);
        chunks.push(chunk);
      }
    } finally {
      clearTimeout(timer);
    }
    try {
      return JSON.parse(Buffer.concat(chunks, size).toString('utf8')) as unknown;
    } catch {
      throw new HttpError(400, 'body', 'not valid JSON');
    }
  }
}

/** The route a request's path names, as the metrics label it (a campaign's id left out). */
function routeName(url: string | undefined): 'pushes' | 'campaigns' | 'campaign' | 'health' | 'metrics' | 'other' {
  const path = new URL(url ?? '/', 'http://entry').pathname;
  if (path === '/v1/pushes') return 'pushes';
  if (path === '/v1/campaigns' || path === '/v1/campaigns/') return 'campaigns';
  if (CAMPAIGN_PATH.test(path)) return 'campaign';
  if (path === '/health') return 'health';
  return path === '/metrics' ? 'metrics' : 'other';
}

function notFound(): HttpError {
  return new HttpError(404, 'campaign_id', 'no campaign of this sender with this id (a new campaign is known once the expansion took it, within seconds)');
}

function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

function json(res: ServerResponse, status: number, body: unknown): void {
  if (res.headersSent) return;
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}
