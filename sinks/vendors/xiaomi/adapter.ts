import type { XiaomiAppConfig } from './index.ts';
import { joinUrl, jsonOf } from '../http.ts';
import { answerOf, HttpVendorAdapter, type HttpAdapterDeps } from '../http-adapter.ts';
import { httpStatusRule, outcomeOf, retryAfterOf, ruleFor } from '../outcomes.ts';
import { notifyId } from '../../../processors/model/ids.ts';
import { channelOf } from '../channel-id.ts';
import type { ParsedReceipt, PushMessage, SubmitOutcome, VendorAdapter } from '../../../processors/fan-out/vendor-port.ts';
import { XIAOMI_CALLBACK_TYPE, XIAOMI_CODES } from './codes.ts';
import { xiaomiPayloadBytes, xiaomiText, XIAOMI_PAYLOAD_LIMITS } from './payload.ts';
import { XIAOMI_RECEIPTS } from './receipts.ts';
import { withFields } from '../../../common/objects.ts';

export const XIAOMI_BASE_URL = 'https://api.xmpush.xiaomi.com';

/**
 * Xiaomi MiPush v3: `Authorization: key=<AppSecret>`, form POST to /v3/message/regid with a
 * comma-joined regId list per identical message, private (IM) channel via `extra.channel_id`,
 * tray replacement via `notify_id`, receipts requested per message through `extra.callback`.
 */
export class XiaomiAdapter extends HttpVendorAdapter implements VendorAdapter {
  readonly vendor = 'xiaomi' as const;
  /** UNCONFIRMED vendor cap; 1000 is the common figure. */
  readonly maxBatchSize = 1000;
  /** UNCONFIRMED (65009 "content too long"); 4 KB over title + description + payload. */
  readonly maxPayloadBytes = XIAOMI_PAYLOAD_LIMITS.maxBytes;
  constructor(
    private readonly config: XiaomiAppConfig,
    deps: HttpAdapterDeps = {},
  ) {
    super(config, deps);
  }

  private form(m: PushMessage): Record<string, string> {
    const text = xiaomiText(m);
    const form: Record<string, string> = {
      restricted_package_name: this.config.packageName,
      pass_through: '0',
      title: text.title,
      description: text.description,
      payload: text.payload,
      notify_type: m.silent ? '4' : '-1',
      time_to_live: String(Math.max(0, m.ttlSeconds) * 1000),
      notify_id: String(notifyId(m.collapseId)),
      'extra.channel_id': channelOf(m, this.config),
      'extra.notify_effect': '1',
    };
    if (this.config.receiptUrl) {
      form['extra.callback'] = this.config.receiptUrl;
      form['extra.callback.type'] = String(XIAOMI_CALLBACK_TYPE);
      if (m.recipient) form['extra.callback.param'] = m.recipient;
    }
    return form;
  }

  payloadBytes(m: PushMessage): number {
    return xiaomiPayloadBytes(m);
  }

  /** Settles within the app's timeout. */
  submit(messages: readonly PushMessage[]): Promise<SubmitOutcome[]> {
    return this.submitGrouped(
      messages,
      (m) => JSON.stringify(this.form(m)),
      this.maxBatchSize,
      async (group, deadline) => {
        const outcome = await this.send(group, deadline);
        return group.map(() => outcome);
      },
    );
  }

  /** One request; MiPush answers for the request as a whole. */
  private async send(group: readonly PushMessage[], deadline: number): Promise<SubmitOutcome> {
    if (this.payloadBytes(group[0]!) > this.maxPayloadBytes) return { kind: 'payload-too-large', code: '65009' };
    // A fresh form per request: the tokens go straight into it.
    const form = this.form(group[0]!);
    form.registration_id = group.map((m) => m.token).join(',');
    const answer = await answerOf(
      this.http.postForm(
        joinUrl(this.config.baseUrl ?? XIAOMI_BASE_URL, '/v3/message/regid'),
        { authorization: `key=${this.config.appSecret}` },
        form,
        deadline,
      ),
    );
    if ('kind' in answer) return answer;
    const extra = retryAfterOf(answer.headers, this.now());
    const body = jsonOf(answer.text) as { result?: string; code?: number; data?: { id?: string } } | undefined;
    if (answer.status !== 200 || typeof body?.code !== 'number') return outcomeOf(httpStatusRule(answer.status), `HTTP_${answer.status}`, extra);
    const code = String(body.code);
    const rule = ruleFor(XIAOMI_CODES, code);
    return outcomeOf(rule, code, withFields(extra, { vendorMessageId: body.data?.id ?? '' }));
  }

  parseReceipt(body: Buffer, contentType: string | undefined): ParsedReceipt[] {
    return XIAOMI_RECEIPTS.parse(body, contentType, this.now);
  }
}
