import type { FcmAppConfig } from './index.ts';
import type { MintedCredential } from '../credential.ts';
import { deadlineAfter, joinUrl, jsonOf } from '../http.ts';
import { CredentialedHttpAdapter, CredentialRefused, REFRESH, type HttpAdapterDeps } from '../http-adapter.ts';
import { signRs256 } from '../jwt.ts';
import { outcomeOf, retryAfterOf, ruleFor, type CodeRule } from '../outcomes.ts';
import type { ParsedReceipt, PushMessage, SubmitOutcome, VendorAdapter } from '../../../processors/fan-out/vendor-port.ts';
import { FCM_ERRORS, FCM_STATUS_FALLBACK } from './codes.ts';
import { fcmCountedPayload, fcmNotification, FCM_PAYLOAD_LIMITS } from './payload.ts';

export const FCM_BASE_URL = 'https://fcm.googleapis.com';
export const FCM_SCOPE = 'https://www.googleapis.com/auth/firebase.messaging';

interface GoogleError {
  code?: number;
  message?: string;
  status?: string;
  details?: Array<{ '@type'?: string; errorCode?: string; fieldViolations?: Array<{ field?: string }> }>;
}

/**
 * FCM HTTP v1: a service-account RS256 assertion is exchanged at the OAuth2 token endpoint for a
 * bearer cached until 5 minutes before expiry; one messages:send per token (v1 has no batch).
 */
export class FcmAdapter extends CredentialedHttpAdapter implements VendorAdapter {
  readonly vendor = 'fcm' as const;
  readonly maxBatchSize = 1;
  /** Google documents 4096 bytes; 4000 keeps clear of the localized "4000 bytes" rule. */
  readonly maxPayloadBytes = FCM_PAYLOAD_LIMITS.maxBytes;
  private readonly tokenUrl: string;

  constructor(
    private readonly config: FcmAppConfig,
    deps: HttpAdapterDeps = {},
  ) {
    super(config, deps, 5 * 60_000);
    this.tokenUrl = config.tokenUrl ?? config.serviceAccount.token_uri;
  }

  protected async mintCredential(): Promise<MintedCredential> {
    const sa = this.config.serviceAccount;
    const iat = Math.floor(this.now() / 1000);
    const header = sa.private_key_id ? { alg: 'RS256', typ: 'JWT', kid: sa.private_key_id } : { alg: 'RS256', typ: 'JWT' };
    const assertion = signRs256(header, { iss: sa.client_email, scope: FCM_SCOPE, aud: sa.token_uri, iat, exp: iat + 3600 }, sa.private_key);
    const answer = await this.http.postForm(this.tokenUrl, {}, { grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer', assertion });
    const body = jsonOf(answer.text) as { access_token?: string; expires_in?: number; error?: string } | undefined;
    if (answer.status !== 200 || !body?.access_token) throw new CredentialRefused('FCM token endpoint', body?.error ?? `HTTP_${answer.status}`);
    return { value: body.access_token, expiresAtMs: iat * 1000 + (body.expires_in ?? 3600) * 1000 };
  }

  private message(m: PushMessage, withToken: boolean): Record<string, unknown> {
    const text = fcmNotification(m);
    return {
      ...(withToken ? { token: m.token } : {}),
      notification: { title: text.title, body: text.body },
      data: m.data,
      android: {
        collapse_key: m.collapseId,
        priority: m.silent ? 'NORMAL' : 'HIGH',
        ttl: `${Math.max(0, m.ttlSeconds)}s`,
        notification: { tag: m.collapseId, notification_count: m.badge, ...(m.silent ? {} : { sound: 'default' }) },
      },
    };
  }

  payloadBytes(m: PushMessage): number {
    return Buffer.byteLength(fcmCountedPayload(m, fcmNotification(m)));
  }

  /** Each message settles within the app's timeout (credential mint included). */
  submit(messages: readonly PushMessage[]): Promise<SubmitOutcome[]> {
    const deadline = deadlineAfter(this.config.timeoutMs);
    return Promise.all(messages.map((m) => this.submitOne(m, deadline)));
  }

  private async submitOne(m: PushMessage, deadline: number): Promise<SubmitOutcome> {
    if (this.payloadBytes(m) > this.maxPayloadBytes) return { kind: 'payload-too-large', code: 'MESSAGE_TOO_BIG' };
    const url = joinUrl(this.config.baseUrl ?? FCM_BASE_URL, `/v1/projects/${this.config.serviceAccount.project_id}/messages:send`);
    return this.callWithCredential<SubmitOutcome>(
      deadline,
      (bearer) => this.http.postJson(url, { authorization: `Bearer ${bearer}` }, { validate_only: false, message: this.message(m, true) }, deadline),
      (answer, mayRefresh) => {
        if (answer.status === 200) {
          const name = (jsonOf(answer.text) as { name?: string } | undefined)?.name ?? '';
          return { kind: 'accepted', vendorMessageId: name };
        }
        const { code, rule } = classify(answer.status, jsonOf(answer.text) as { error?: GoogleError } | undefined);
        if (rule === 'auth-refresh' && mayRefresh) return REFRESH;
        return outcomeOf(rule, code, retryAfterOf(answer.headers, this.now()));
      },
    );
  }

  /** FCM has no receipt callbacks (delivery data lives in BigQuery export). */
  parseReceipt(): ParsedReceipt[] {
    return [];
  }
}

function classify(status: number, body: { error?: GoogleError } | undefined): { code: string; rule: CodeRule } {
  const error = body?.error;
  const fcmCode = error?.details?.find((d) => d['@type']?.endsWith('google.firebase.fcm.v1.FcmError'))?.errorCode;
  const code = fcmCode ?? error?.status ?? String(status);
  if (status === 429) return { code, rule: 'rate-limited' };
  if (code === 'INVALID_ARGUMENT') {
    const aboutToken =
      /registration token/i.test(error?.message ?? '') || (error?.details ?? []).some((d) => d.fieldViolations?.some((f) => f.field === 'message.token'));
    if (aboutToken) return { code, rule: 'dead-token' };
    if (/too big|too large|exceeds/i.test(error?.message ?? '')) return { code, rule: 'payload-too-large' };
  }
  if (Object.hasOwn(FCM_ERRORS, code)) return { code, rule: ruleFor(FCM_ERRORS, code) };
  return { code, rule: ruleFor(FCM_STATUS_FALLBACK, String(status)) };
}
