import { createHash } from 'node:crypto';
import type { OppoAppConfig } from './index.ts';
import type { MintedCredential } from '../credential.ts';
import { deadlineAfter, joinUrl, jsonOf, type HttpAnswer } from '../http.ts';
import { CredentialedHttpAdapter, CredentialRefused, REFRESH, type HttpAdapterDeps } from '../http-adapter.ts';
import { httpStatusRule, outcomeOf, retryAfterOf, ruleFor } from '../outcomes.ts';
import { notifyId } from '../../../processors/model/ids.ts';
import { channelOf } from '../channel-id.ts';
import type { ParsedReceipt, PushMessage, SubmitOutcome, VendorAdapter } from '../../../processors/fan-out/vendor-port.ts';
import { OPPO_CODES } from './codes.ts';
import { oppoActionParameters, oppoText, OPPO_PAYLOAD_LIMITS, OPPO_STYLE } from './payload.ts';
import { OPPO_RECEIPTS } from './receipts.ts';

export const OPPO_BASE_URL = 'https://api.push.oppomobile.com';

interface OppoBody {
  code?: number;
  message?: string;
  data?: { auth_token?: string; messageId?: string } | Array<{ messageId?: string; registrationId?: string; errorCode?: number }>;
}

/**
 * OPPO PUSH: `sign = sha256(appKey + timestamp + masterSecret)` → auth_token (24 h, refreshed after
 * 23 h); unicast for one message, unicast_batch (≤1000, per-item results) for more; the
 * communication class via `category` + `notify_level`; `app_message_id` = task id (vendor dedupe).
 */
export class OppoAdapter extends CredentialedHttpAdapter implements VendorAdapter {
  readonly vendor = 'oppo' as const;
  readonly maxBatchSize = 1000;
  /** `action_parameters` (the custom data) ≤ 4000 characters, counted here in UTF-8 bytes (stricter). */
  readonly maxPayloadBytes = OPPO_PAYLOAD_LIMITS.actionParametersMax;
  private readonly base: string;

  constructor(
    private readonly config: OppoAppConfig,
    deps: HttpAdapterDeps = {},
  ) {
    super(config, deps, 60 * 60_000);
    this.base = config.baseUrl ?? OPPO_BASE_URL;
  }

  protected async mintCredential(): Promise<MintedCredential> {
    const timestamp = String(this.now());
    const sign = createHash('sha256')
      .update(this.config.appKey + timestamp + this.config.masterSecret)
      .digest('hex');
    const answer = await this.http.postForm(joinUrl(this.base, '/server/v1/auth'), {}, { app_key: this.config.appKey, timestamp, sign });
    const body = jsonOf(answer.text) as OppoBody | undefined;
    const token = !Array.isArray(body?.data) ? body?.data?.auth_token : undefined;
    if (answer.status !== 200 || body?.code !== 0 || !token) throw new CredentialRefused('OPPO auth', String(body?.code ?? `HTTP_${answer.status}`));
    return { value: token, expiresAtMs: Number(timestamp) + 24 * 3600_000 };
  }

  private message(m: PushMessage): Record<string, unknown> {
    const text = oppoText(m);
    return {
      target_type: 2,
      target_value: m.token,
      notification: {
        app_message_id: m.taskId,
        style: OPPO_STYLE,
        title: text.title,
        content: text.content,
        click_action_type: 0,
        action_parameters: oppoActionParameters(m),
        off_line: true,
        off_line_ttl: Math.min(864_000, Math.max(1, m.ttlSeconds)),
        channel_id: channelOf(m, this.config),
        notify_id: notifyId(m.collapseId),
        category: m.classification?.category ?? this.config.category,
        notify_level: m.silent ? 1 : Number(m.classification?.notify_level ?? 2),
        ...(this.config.receiptUrl ? { call_back_url: this.config.receiptUrl, call_back_parameter: m.recipient ?? m.taskId.slice(0, 100) } : {}),
      },
    };
  }

  payloadBytes(m: PushMessage): number {
    return Buffer.byteLength(oppoActionParameters(m));
  }

  /** Settles within the app's timeout (auth token mint included). */
  async submit(messages: readonly PushMessage[]): Promise<SubmitOutcome[]> {
    const deadline = deadlineAfter(this.config.timeoutMs);
    const outcomes: SubmitOutcome[] = new Array(messages.length);
    const sendable: number[] = [];
    messages.forEach((m, i) => {
      if (this.payloadBytes(m) > this.maxPayloadBytes) outcomes[i] = { kind: 'payload-too-large', code: 'action_parameters' };
      else sendable.push(i);
    });
    if (sendable.length === 0) return outcomes;
    const batch = sendable.map((i) => messages[i]!);
    const results = batch.length === 1 ? [await this.sendOne(batch[0]!, deadline)] : await this.sendBatch(batch, deadline);
    sendable.forEach((i, k) => (outcomes[i] = results[k]!));
    return outcomes;
  }

  /** Posts with the auth token (form field and header); refreshes it once on 11 / 29. */
  private call(path: string, form: Record<string, string>, deadline: number): Promise<{ answer: HttpAnswer; body: OppoBody | undefined } | SubmitOutcome> {
    return this.callWithCredential(
      deadline,
      (token) => this.http.postForm(joinUrl(this.base, path), { auth_token: token }, { auth_token: token, ...form }, deadline),
      (answer, mayRefresh) => {
        const body = jsonOf(answer.text) as OppoBody | undefined;
        return ruleFor(OPPO_CODES, String(body?.code)) === 'auth-refresh' && mayRefresh ? REFRESH : { answer, body };
      },
    );
  }

  private failure(answer: HttpAnswer, body: OppoBody | undefined): SubmitOutcome | undefined {
    const extra = retryAfterOf(answer.headers, this.now());
    if (typeof body?.code !== 'number') return outcomeOf(httpStatusRule(answer.status), `HTTP_${answer.status}`, extra);
    return body.code === 0 ? undefined : outcomeOf(ruleFor(OPPO_CODES, String(body.code)), String(body.code), extra);
  }

  private async sendOne(m: PushMessage, deadline: number): Promise<SubmitOutcome> {
    const r = await this.call('/server/v1/message/notification/unicast', { message: JSON.stringify(this.message(m)) }, deadline);
    if ('kind' in r) return r;
    const failed = this.failure(r.answer, r.body);
    if (failed) return failed;
    const data = r.body?.data;
    return { kind: 'accepted', vendorMessageId: (!Array.isArray(data) && data?.messageId) || '' };
  }

  private async sendBatch(batch: readonly PushMessage[], deadline: number): Promise<SubmitOutcome[]> {
    const r = await this.call('/server/v1/message/notification/unicast_batch', { messages: JSON.stringify(batch.map((m) => this.message(m))) }, deadline);
    if ('kind' in r) return batch.map(() => r);
    const failed = this.failure(r.answer, r.body);
    if (failed) return batch.map(() => failed);
    const items = Array.isArray(r.body?.data) ? r.body.data : [];
    const byToken = new Map(items.map((item) => [item.registrationId, item]));
    return batch.map((m, k) => {
      const item = byToken.get(m.token) ?? items[k];
      if (!item) return { kind: 'retryable', code: 'MISSING_ITEM' };
      if (item.errorCode !== undefined && item.errorCode !== 0) return outcomeOf(ruleFor(OPPO_CODES, String(item.errorCode)), String(item.errorCode));
      return { kind: 'accepted', vendorMessageId: item.messageId ?? '' };
    });
  }

  parseReceipt(body: Buffer, contentType: string | undefined): ParsedReceipt[] {
    return OPPO_RECEIPTS.parse(body, contentType, this.now);
  }
}
