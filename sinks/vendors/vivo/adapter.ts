import { createHash } from 'node:crypto';
import type { VivoAppConfig } from './index.ts';
import type { MintedCredential } from '../credential.ts';
import { joinUrl, jsonOf } from '../http.ts';
import { CredentialedHttpAdapter, CredentialRefused, REFRESH, type HttpAdapterDeps } from '../http-adapter.ts';
import { httpStatusRule, noAnswer, outcomeOf, retryAfterOf, ruleFor } from '../outcomes.ts';
import { notifyId } from '../../../processors/model/ids.ts';
import { isUnknownOutcome, type ParsedReceipt, type PushMessage, type SubmitOutcome, type VendorAdapter } from '../../../processors/fan-out/vendor-port.ts';
import { VIVO_INVALID_USER, VIVO_RESULTS } from './codes.ts';
import { vivoCustomMapBytes, vivoText, VIVO_PAYLOAD_LIMITS } from './payload.ts';
import { VIVO_RECEIPTS } from './receipts.ts';
import { withFields } from '../../../common/objects.ts';

export const VIVO_BASE_URL = 'https://api-push.vivo.com.cn';

interface VivoBody {
  result?: number;
  desc?: string;
  authToken?: string;
  taskId?: string;
  invalidUser?: { userid?: string; status?: number };
  invalidUsers?: Array<{ userid?: string; status?: number }>;
}

/** vivo requestId: ≤ 64 characters, unique per request (vivo dedupes on it). */
const requestIdOf = (id: string) => (id.length <= 64 ? id : createHash('sha256').update(id).digest('hex'));

/**
 * vivo push: `sign = md5(appId + appKey + timestamp + appSecret)` → authToken header (valid a day,
 * refreshed hourly as vivo advises); /message/send for one, saveListPayload + pushToList for
 * identical messages to 2–1000 regIds; system classification (`classification` 1 + `category`).
 */
export class VivoAdapter extends CredentialedHttpAdapter implements VendorAdapter {
  readonly vendor = 'vivo' as const;
  readonly maxBatchSize = 1000;
  /** clientCustomMap ≤ 1024 characters (counted in UTF-8 bytes of its JSON, stricter). */
  readonly maxPayloadBytes = VIVO_PAYLOAD_LIMITS.clientCustomMapMax;
  private readonly base: string;

  constructor(
    private readonly config: VivoAppConfig,
    deps: HttpAdapterDeps = {},
  ) {
    super(config, deps, 23 * 3600_000);
    this.base = config.baseUrl ?? VIVO_BASE_URL;
  }

  protected async mintCredential(): Promise<MintedCredential> {
    const { appId, appKey, appSecret } = this.config;
    const timestamp = this.now();
    const sign = createHash('md5')
      .update(appId + appKey + timestamp + appSecret)
      .digest('hex');
    const answer = await this.http.postJson(joinUrl(this.base, '/message/auth'), {}, { appId, appKey, timestamp, sign });
    const body = jsonOf(answer.text) as VivoBody | undefined;
    if (answer.status !== 200 || body?.result !== 0 || !body.authToken)
      throw new CredentialRefused('vivo auth', String(body?.result ?? `HTTP_${answer.status}`));
    return { value: body.authToken, expiresAtMs: timestamp + 24 * 3600_000 };
  }

  private content(m: PushMessage): Record<string, unknown> {
    const text = vivoText(m);
    return {
      appId: /^\d+$/.test(this.config.appId) ? Number(this.config.appId) : this.config.appId,
      notifyType: m.silent ? 1 : 4,
      title: text.title,
      content: text.content,
      timeToLive: Math.min(86_400, Math.max(60, m.ttlSeconds)),
      skipType: 1,
      networkType: -1,
      classification: Number(m.classification?.classification ?? 1),
      category: m.classification?.category ?? this.config.category,
      clientCustomMap: m.data,
      notifyId: notifyId(m.collapseId),
      pushMode: 0,
      ...(this.config.receiptId
        ? {
            extra: {
              callback: this.config.receiptId,
              'callback.param': m.recipient ?? m.collapseId.slice(0, 64) /* per recipient or conversation, so a campaign's identical messages still batch */,
            },
          }
        : {}),
    };
  }

  payloadBytes(m: PushMessage): number {
    return vivoCustomMapBytes(m);
  }

  /** Settles within the app's timeout (auth token mint included). */
  submit(messages: readonly PushMessage[]): Promise<SubmitOutcome[]> {
    return this.submitGrouped(
      messages,
      (m) => JSON.stringify(this.content(m)),
      this.maxBatchSize,
      (group, deadline) => this.send(group, deadline),
    );
  }

  private call(path: string, body: unknown, deadline: number): Promise<VivoBody | SubmitOutcome> {
    return this.callWithCredential<VivoBody | SubmitOutcome>(
      deadline,
      (token) => this.http.postJson(joinUrl(this.base, path), { authToken: token }, body, deadline),
      (answer, mayRefresh) => {
        const parsed = jsonOf(answer.text) as VivoBody | undefined;
        const extra = retryAfterOf(answer.headers, this.now());
        if (answer.status !== 200 || typeof parsed?.result !== 'number') return outcomeOf(httpStatusRule(answer.status), `HTTP_${answer.status}`, extra);
        const code = String(parsed.result);
        const rule = ruleFor(VIVO_RESULTS, code);
        if (rule === 'auth-refresh' && mayRefresh) return REFRESH;
        return rule === 'accepted' ? parsed : outcomeOf(rule, code, extra);
      },
    );
  }

  private async send(group: readonly PushMessage[], deadline: number): Promise<SubmitOutcome[]> {
    const all = (o: SubmitOutcome) => group.map(() => o);
    if (this.payloadBytes(group[0]!) > this.maxPayloadBytes) return all({ kind: 'payload-too-large', code: 'clientCustomMap' });
    const content = this.content(group[0]!);
    let answer: VivoBody | SubmitOutcome;
    if (group.length === 1) {
      answer = await this.call('/message/send', withFields(content, { regId: group[0]!.token, requestId: requestIdOf(group[0]!.taskId) }), deadline);
    } else {
      const requestId = requestIdOf(group.map((m) => m.taskId).join('|'));
      const saved = await this.call('/message/saveListPayload', withFields(content, { requestId }), deadline);
      // A lost answer to saveListPayload sent nothing to the devices: the push was not submitted.
      if ('kind' in saved) return all(isUnknownOutcome(saved) ? noAnswer(false) : saved);
      answer = await this.call('/message/pushToList', { regIds: group.map((m) => m.token), taskId: saved.taskId, requestId, pushMode: 0 }, deadline);
      if (!('kind' in answer)) answer = { ...answer, taskId: answer.taskId ?? saved.taskId };
    }
    if ('kind' in answer) return all(answer);
    const invalid = new Map<string, number>();
    for (const u of [...(answer.invalidUsers ?? []), ...(answer.invalidUser ? [answer.invalidUser] : [])]) {
      if (u.userid !== undefined) invalid.set(u.userid, Number(u.status));
    }
    return group.map((m): SubmitOutcome => {
      const status = invalid.get(m.token);
      if (status !== undefined) return outcomeOf(ruleFor(VIVO_INVALID_USER, String(status)), `invalidUser.${status}`);
      return { kind: 'accepted', vendorMessageId: answer.taskId ?? '' };
    });
  }

  parseReceipt(body: Buffer, contentType: string | undefined): ParsedReceipt[] {
    return VIVO_RECEIPTS.parse(body, contentType, this.now);
  }
}
