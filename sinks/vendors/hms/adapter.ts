import type { HmsAppConfig } from './index.ts';
import type { MintedCredential } from '../credential.ts';
import { joinUrl, jsonOf } from '../http.ts';
import { CredentialedHttpAdapter, CredentialRefused, REFRESH, type HttpAdapterDeps } from '../http-adapter.ts';
import { outcomeOf, retryAfterOf, ruleFor } from '../outcomes.ts';
import type { ParsedReceipt, PushMessage, SubmitOutcome, VendorAdapter } from '../../../processors/fan-out/vendor-port.ts';
import { HMS_CODES, HMS_STATUS_FALLBACK } from './codes.ts';
import { hmsCountedBody, hmsMessage, HMS_PAYLOAD_LIMITS } from './payload.ts';
import { HMS_RECEIPTS } from './receipts.ts';

export const HMS_BASE_URL = 'https://push-api.cloud.huawei.com';
export const HMS_AUTH_URL = 'https://oauth-login.cloud.huawei.com/oauth2/v3/token';

/**
 * Huawei Push Kit v1: OAuth2 client credentials → bearer (3600 s, refreshed 5 min early);
 * messages:send with up to 1000 tokens per identical message; IM self-classification
 * (`android.category`); per-token dead tokens from 80100000 `illegal_tokens`.
 */
export class HmsAdapter extends CredentialedHttpAdapter implements VendorAdapter {
  readonly vendor = 'hms' as const;
  readonly maxBatchSize = 1000;
  /** Message body excluding tokens (80300008 above it). */
  readonly maxPayloadBytes = HMS_PAYLOAD_LIMITS.maxBytes;

  constructor(
    private readonly config: HmsAppConfig,
    deps: HttpAdapterDeps = {},
  ) {
    super(config, deps, 5 * 60_000);
  }

  protected async mintCredential(): Promise<MintedCredential> {
    const started = this.now();
    const answer = await this.http.postForm(
      this.config.authUrl ?? HMS_AUTH_URL,
      {},
      {
        grant_type: 'client_credentials',
        client_id: this.config.clientId,
        client_secret: this.config.clientSecret,
      },
    );
    const body = jsonOf(answer.text) as { access_token?: string; expires_in?: number; error?: number | string } | undefined;
    if (answer.status !== 200 || !body?.access_token) throw new CredentialRefused('HMS OAuth', String(body?.error ?? `HTTP_${answer.status}`));
    return { value: body.access_token, expiresAtMs: started + (body.expires_in ?? 3600) * 1000 };
  }

  private message(m: PushMessage): Record<string, unknown> {
    return hmsMessage(m, this.config);
  }

  payloadBytes(m: PushMessage): number {
    return Buffer.byteLength(hmsCountedBody(this.message(m)));
  }

  /** Settles within the app's timeout (credential mint included). */
  submit(messages: readonly PushMessage[]): Promise<SubmitOutcome[]> {
    return this.submitGrouped(
      messages,
      (m) => JSON.stringify(this.message(m)),
      this.maxBatchSize,
      (group, deadline) => this.send(group, deadline),
    );
  }

  private async send(group: readonly PushMessage[], deadline: number): Promise<SubmitOutcome[]> {
    const all = (o: SubmitOutcome) => group.map(() => o);
    if (this.payloadBytes(group[0]!) > this.maxPayloadBytes) return all({ kind: 'payload-too-large', code: '80300008' });
    const url = joinUrl(this.config.baseUrl ?? HMS_BASE_URL, `/v1/${encodeURIComponent(this.config.clientId)}/messages:send`);
    // A fresh message object per request: the tokens go straight into it.
    const message = this.message(group[0]!);
    message.token = group.map((m) => m.token);
    const body = { validate_only: false, message };
    const sent = await this.callWithCredential<SubmitOutcome[]>(
      deadline,
      (bearer) => this.http.postJson(url, { authorization: `Bearer ${bearer}` }, body, deadline),
      (answer, mayRefresh) => {
        const extra = retryAfterOf(answer.headers, this.now());
        // Huawei's answers must be read from the body whatever the status; 503 is flow control.
        const parsed = jsonOf(answer.text) as { code?: string; msg?: string; requestId?: string } | undefined;
        const code = typeof parsed?.code === 'string' ? parsed.code : undefined;
        if (answer.status === 503) return all(outcomeOf('rate-limited', code ?? '503', extra));
        if (code === undefined || !Object.hasOwn(HMS_CODES, code)) {
          return all(outcomeOf(ruleFor(HMS_STATUS_FALLBACK, String(answer.status)), code ?? String(answer.status), extra));
        }
        const rule = ruleFor(HMS_CODES, code);
        if (rule === 'auth-refresh' && mayRefresh) return REFRESH;
        if (rule !== 'accepted') return all(outcomeOf(rule, code, extra));
        const illegal = new Set(code === '80100000' ? illegalTokens(parsed?.msg) : []);
        return group.map((m) => (illegal.has(m.token) ? { kind: 'dead-token', code } : { kind: 'accepted', vendorMessageId: parsed?.requestId ?? '' }));
      },
    );
    return Array.isArray(sent) ? sent : all(sent);
  }

  /** Signature checked by the receiver (receipts.ts). */
  parseReceipt(body: Buffer, contentType: string | undefined): ParsedReceipt[] {
    return HMS_RECEIPTS.parse(body, contentType, this.now);
  }
}

/** 80100000's `msg` is a JSON string: `{"success":3,"failure":1,"illegal_tokens":[...]}`. */
function illegalTokens(msg: string | undefined): string[] {
  const parsed = jsonOf(msg ?? '') as { illegal_tokens?: unknown } | undefined;
  return Array.isArray(parsed?.illegal_tokens) ? parsed.illegal_tokens.filter((t): t is string => typeof t === 'string') : [];
}
