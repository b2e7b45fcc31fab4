import { createHash } from 'node:crypto';
import type { ApnsAppConfig } from './index.ts';
import { noAnswer, outcomeOf, retryAfterOf, ruleFor } from '../outcomes.ts';
import type { ParsedReceipt, PushMessage, SubmitOutcome, VendorAdapter } from '../../../processors/fan-out/vendor-port.ts';
import { APNS_REASONS, APNS_STATUS_FALLBACK } from './codes.ts';
import { ApnsConnectionPool, LostStreamError } from './connection-pool.ts';
import { clientSecureContext } from './certificate.ts';
import { apnsMaxPayloadBytes, apnsPayload } from './payload.ts';
import type { ProviderToken } from './provider-token.ts';

export const APNS_HOSTS = {
  production: 'https://api.push.apple.com',
  sandbox: 'https://api.sandbox.push.apple.com',
} as const;

export interface ApnsAdapterDeps {
  /** Token auth: the provider token of this app's (team, key), shared with other apps of the same key. */
  readonly providerToken?: ProviderToken;
  readonly ca?: string | undefined;
  readonly now?: () => number;
}

/** Attempts per notification when streams are lost (GOAWAY, reset, connection loss), within its deadline. */
const MAX_STREAM_ATTEMPTS = 3;

/** A canonical UUID derived from the task id: the same task always carries the same apns-id. */
export function apnsIdOf(taskId: string): string {
  const h = createHash('sha1').update(taskId).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-${((parseInt(h[16]!, 16) & 0x3) | 0x8).toString(16)}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/**
 * The code of a push not sent because the app's provider certificate has expired by the adapter's
 * clock: APNs would refuse the connection, so none is made (not an Apple reason).
 */
export const CERTIFICATE_EXPIRED = 'CERTIFICATE_EXPIRED';

/**
 * APNs over HTTP/2: one pooled adapter per app. Token auth sends the provider token in every
 * request's `authorization`; certificate auth presents the app's provider certificate as the TLS
 * client certificate of each connection and sends no `authorization`. Either way the same pool,
 * reconnects and GOAWAY handling. No batch sends, no receipts.
 */
export class ApnsAdapter implements VendorAdapter {
  readonly vendor = 'apns' as const;
  readonly maxBatchSize = 1;
  readonly maxPayloadBytes: number;
  private readonly pool: ApnsConnectionPool;
  private readonly now: () => number;
  private readonly timeoutMs: number;
  /** Certificate auth: when the provider certificate expires, epoch ms. */
  private readonly certificateExpiresAtMs: number | undefined;

  constructor(
    private readonly config: ApnsAppConfig,
    private readonly deps: ApnsAdapterDeps,
  ) {
    if (config.auth === 'token' && deps.providerToken === undefined) throw new Error('APNs token auth needs a provider token');
    this.maxPayloadBytes = apnsMaxPayloadBytes(config.pushType);
    this.now = deps.now ?? Date.now;
    this.timeoutMs = config.timeoutMs ?? 10_000;
    this.certificateExpiresAtMs = config.auth === 'certificate' ? config.certificate.notAfterMs : undefined;
    this.pool = new ApnsConnectionPool({
      origin: config.baseUrl ?? APNS_HOSTS[config.environment],
      ca: deps.ca,
      ...(config.auth === 'certificate' ? { secureContext: clientSecureContext(config.certificate, deps.ca) } : {}),
      connections: config.connections,
      timeoutMs: config.timeoutMs,
    });
  }

  /** Connections opened so far (reconnects included). */
  get connectionsOpened(): number {
    return this.pool.connectionsOpened;
  }

  payloadBytes(m: PushMessage): number {
    return Buffer.byteLength(apnsPayload(m, this.maxPayloadBytes));
  }

  /** Each message settles within the app's timeout: lost streams are resent only while time is left. */
  submit(messages: readonly PushMessage[]): Promise<SubmitOutcome[]> {
    const deadline = performance.now() + this.timeoutMs;
    return Promise.all(messages.map((m) => this.submitOne(m, deadline)));
  }

  private async submitOne(m: PushMessage, deadline: number): Promise<SubmitOutcome> {
    const body = apnsPayload(m, this.maxPayloadBytes);
    if (Buffer.byteLength(body) > this.maxPayloadBytes) return { kind: 'payload-too-large', code: 'PayloadTooLarge' };
    if (this.certificateExpiresAtMs !== undefined && this.now() >= this.certificateExpiresAtMs) return { kind: 'auth-failed', code: CERTIFICATE_EXPIRED };
    const topic = this.config.pushType === 'voip' ? `${this.config.topic}.voip` : this.config.topic;
    const expiration = m.ttlSeconds <= 0 ? '0' : String(Math.floor(this.now() / 1000) + m.ttlSeconds);
    const apnsId = apnsIdOf(m.taskId);
    const priority = this.config.pushType === 'background' ? '5' : '10';
    // The request's headers with the provider token current at each attempt (none with certificate
    // auth): literals, not a spread of the fixed ones plus the token (common/objects.ts says why).
    const headers = (jwt: string | undefined) =>
      jwt === undefined
        ? {
            ':path': `/3/device/${m.token}`,
            'apns-topic': topic,
            'apns-push-type': this.config.pushType,
            'apns-priority': priority,
            'apns-expiration': expiration,
            'apns-collapse-id': m.collapseId,
            'apns-id': apnsId,
            'content-type': 'application/json',
          }
        : {
            ':path': `/3/device/${m.token}`,
            'apns-topic': topic,
            'apns-push-type': this.config.pushType,
            'apns-priority': priority,
            'apns-expiration': expiration,
            'apns-collapse-id': m.collapseId,
            'apns-id': apnsId,
            'content-type': 'application/json',
            authorization: `bearer ${jwt}`,
          };
    let authRetried = false;
    let lost = 0;
    /** Some attempt reached APNs without an answer: if none is answered, the outcome is unknown. */
    let written = false;
    for (;;) {
      const jwt = this.deps.providerToken?.current();
      let answer;
      try {
        answer = await this.pool.request(headers(jwt), body, deadline);
      } catch (error) {
        if (!(error instanceof LostStreamError)) throw error;
        written ||= error.written;
        if (error.retryAfterMs !== undefined || ++lost >= MAX_STREAM_ATTEMPTS || performance.now() >= deadline) return noAnswer(written, error.retryAfterMs);
        continue;
      }
      if (answer.status === 200) return { kind: 'accepted', vendorMessageId: String(answer.headers['apns-id'] ?? apnsId) };
      const reason = reasonOf(answer.body);
      const rule =
        reason !== undefined && Object.hasOwn(APNS_REASONS, reason) ? ruleFor(APNS_REASONS, reason) : ruleFor(APNS_STATUS_FALLBACK, String(answer.status));
      const code = reason ?? String(answer.status);
      if (rule === 'auth-refresh' && !authRetried) {
        authRetried = true;
        // Apple wedges a connection after ExpiredProviderToken: new token, new connection.
        this.pool.retire(answer.session);
        if (jwt !== undefined && this.deps.providerToken?.renew(jwt) === true) continue;
      }
      if (reason === 'TooManyProviderTokenUpdates') this.pool.retire(answer.session);
      const outcome = outcomeOf(rule, code, retryAfterOf(answer.headers, this.now()));
      // TooManyRequests: "too many requests to the same device token"; the app's other tokens are fine.
      return reason === 'TooManyRequests' && outcome.kind === 'rate-limited' ? { ...outcome, perToken: true } : outcome;
    }
  }

  /** APNs has no delivery receipts (the 410 answer is the only token signal). */
  parseReceipt(): ParsedReceipt[] {
    return [];
  }

  close(): Promise<void> {
    return this.pool.close();
  }
}

function reasonOf(body: string): string | undefined {
  try {
    const parsed = JSON.parse(body) as { reason?: unknown };
    return typeof parsed.reason === 'string' ? parsed.reason : undefined;
  } catch {
    return undefined;
  }
}
