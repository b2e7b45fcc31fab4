import { createHash, randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { type EmulatorSetup, type Fault, HttpsEmulator, randomId, randomSecret, type Receipt, type ReceiptBatch, sleep, vendorCharCount } from './common.ts';
import { applyConnectionFault, postCallback, type Route, sendJson, tryJson } from './https-server.ts';
import type { VendorJson } from './common.ts';

/** Longest `content` per notification style (1 standard, 2 long text, 3 big picture). */
const CONTENT_MAX_BY_STYLE: Readonly<Record<number, number>> = { 1: 50, 2: 128, 3: 50 };

/** The documented text limits of a notification; the code OPPO answers (41 invalid arguments) or undefined. */
function textError(n: VendorJson): number | undefined {
  const count = vendorCharCount.oneEach;
  const style = n.style ?? 1;
  if (!(style in CONTENT_MAX_BY_STYLE)) return 41;
  if (count(String(n.title)) > 50 || count(String(n.content)) > CONTENT_MAX_BY_STYLE[style]!) return 41;
  if (n.sub_title !== undefined && count(String(n.sub_title)) > 10) return 41;
  if (typeof n.action_parameters === 'string' && count(n.action_parameters) > 4000) return 41;
  return undefined;
}

/** OPPO's communication & service class (UNCONFIRMED enum); anything else is content & marketing. */
const COMMUNICATION_CATEGORIES = new Set(['IM', 'ACCOUNT', 'DEVICE_REMINDER', 'ORDER', 'TODO', 'SUBSCRIPTION']);

export interface OppoAppRegistration {
  readonly appKey: string;
  readonly masterSecret: string;
  readonly channelIds: readonly string[];
  readonly appId: string;
}

/**
 * OPPO PUSH: /server/v1/auth (sha256(appKey + timestamp + masterSecret), timestamp within 10 min,
 * auth_token valid 24 h, accepted as form field or header), unicast and unicast_batch (per-item
 * errorCode), int return codes, receipts posted as a JSON array to the message's call_back_url.
 */
export class OppoEmulator extends HttpsEmulator {
  private readonly apps = new Map<string, OppoAppRegistration>();
  private readonly authTokens = new Map<string, { appKey: string; expiresAtMs: number }>();
  tokensMinted = 0;

  constructor() {
    super('oppo');
    this.limitedClassCapPerDevice = 2;
  }

  registerApp(reg: OppoAppRegistration): void {
    this.apps.set(reg.appKey, reg);
  }

  protected route(path: string): Route | undefined {
    if (path === '/server/v1/auth') return (_req, res, body) => this.auth(res, body);
    if (path === '/server/v1/message/notification/unicast') return (req, res, body) => this.send(req, res, body, false);
    if (path === '/server/v1/message/notification/unicast_batch') return (req, res, body) => this.send(req, res, body, true);
    return undefined;
  }

  private auth(res: ServerResponse, body: string): void {
    const form = new URLSearchParams(body);
    const app = this.apps.get(form.get('app_key') ?? '');
    const timestamp = Number(form.get('timestamp'));
    if (!app) return sendJson(res, 200, { code: 14, message: 'Invalid AppKey' });
    if (!Number.isFinite(timestamp) || Math.abs(this.clock.now() - timestamp) > 10 * 60_000)
      return sendJson(res, 200, { code: 19, message: 'Invalid Timestamp' });
    const expected = createHash('sha256')
      .update(app.appKey + form.get('timestamp') + app.masterSecret)
      .digest('hex');
    if (form.get('sign') !== expected) return sendJson(res, 200, { code: 16, message: 'Invalid Sign' });
    const token = randomBytes(18).toString('hex');
    this.authTokens.set(token, { appKey: app.appKey, expiresAtMs: this.clock.now() + 24 * 3600_000 });
    this.tokensMinted++;
    sendJson(res, 200, { code: 0, message: '', data: { auth_token: token, create_time: this.clock.now() } });
  }

  private async send(req: IncomingMessage, res: ServerResponse, body: string, batch: boolean): Promise<void> {
    this.sendRequests++;
    if (this.latencyMs > 0) await sleep(this.latencyMs);
    const form = new URLSearchParams(body);
    const token = form.get('auth_token') ?? (req.headers.auth_token as string | undefined);
    if (!token) return sendJson(res, 200, { code: 29, message: 'Missing Auth Token' });
    const session = this.authTokens.get(token);
    if (!session || session.expiresAtMs <= this.clock.now()) return sendJson(res, 200, { code: 11, message: 'Invalid AuthToken' });
    const app = this.apps.get(session.appKey)!;
    let messages: Array<VendorJson>;
    try {
      messages = batch ? JSON.parse(form.get('messages') ?? '[]') : [JSON.parse(form.get('message') ?? 'null')];
    } catch {
      return sendJson(res, 200, { code: 41, message: 'Invalid Arguments' });
    }
    if (!Array.isArray(messages) || messages.length === 0 || messages.length > 1000 || messages.some((m) => !m))
      return sendJson(res, 200, { code: 41, message: 'Invalid Arguments' });
    const tokens = messages.map((m) => String(m.target_value ?? ''));
    const record = (m: VendorJson, answer: string) =>
      this.record({
        client: req.headers['user-agent'],
        appId: app.appId,
        token: String(m.target_value ?? ''),
        request: m,
        answer,
        title: m.notification?.title,
        body: m.notification?.content,
        collapseId: m.notification?.notify_id === undefined ? undefined : String(m.notification.notify_id),
        data: tryJson(m.notification?.action_parameters),
      });
    const connectionFault = this.takeConnectionFault(tokens);
    if (connectionFault && applyConnectionFault(connectionFault, req, res)) return;
    const fault = this.takeFault(tokens);
    if (fault && fault.kind !== 'dead-token') {
      const code = faultCode(fault);
      messages.forEach((m) => record(m, String(code)));
      return sendJson(res, 200, { code, message: `fault ${code}` });
    }
    const results = messages.map((m) => {
      const n = m.notification ?? {};
      const error =
        m.target_type !== 2 || !m.target_value
          ? 41
          : !n.title || !n.content
            ? 40
            : n.notify_level !== undefined && !n.category
              ? 67
              : !n.channel_id || !app.channelIds.includes(n.channel_id)
                ? 41
                : (textError(n) ?? (this.deadTokens.has(m.target_value) || fault?.kind === 'dead-token' ? 10000 : 0));
      const capped = error === 0 && !COMMUNICATION_CATEGORIES.has(n.category) && this.overLimitedClassCap(String(m.target_value));
      record(m, error !== 0 ? String(error) : capped ? 'class-capped' : 'accepted');
      const messageId = `${app.appId}-1-1-${randomId()}`;
      if (error === 0) this.receiptFor(app.appId, messageId, m, capped);
      return { messageId, registrationId: m.target_value, error };
    });
    if (!batch) {
      const r = results[0]!;
      if (r.error !== 0) return sendJson(res, 200, { code: r.error, message: r.error === 10000 ? 'Invalid Registration_id' : 'Invalid Arguments' });
      return sendJson(res, 200, { code: 0, message: '', data: { messageId: r.messageId } });
    }
    sendJson(res, 200, {
      code: 0,
      message: '',
      data: results.map((r) =>
        r.error === 0
          ? { messageId: r.messageId, registrationId: r.registrationId }
          : { messageId: r.messageId, registrationId: r.registrationId, errorCode: r.error, errorMessage: 'Invalid Registration_id' },
      ),
    });
  }

  private receiptFor(appId: string, messageId: string, m: VendorJson, capped: boolean): void {
    const url = m.notification?.call_back_url ?? this.receipts.url;
    if (!url) return;
    const token = String(m.target_value);
    const events = { delivered: 'push_arrive', 'dead-token': 'regid_invalid', failed: 'push_failed' } as const;
    const receipt: Receipt<VendorJson> = {
      batch: this.receiptBatch(url),
      entry: () => ({
        messageId,
        appId,
        taskId: messageId,
        registrationIds: token,
        eventTime: this.clock.now(),
        eventType: capped ? events.failed : events[this.receiptOutcome(token)],
        param: m.notification?.call_back_parameter ?? '',
      }),
    };
    this.rememberReceipt(token, receipt);
    this.scheduleReceipt(receipt);
  }

  /** One callback to `url`: a JSON array with a structure per receipt. */
  private receiptBatch(url: string): ReceiptBatch<VendorJson> {
    return { key: url, post: (entries) => postCallback(url, { 'content-type': 'application/json' }, JSON.stringify(entries)) };
  }
}

function faultCode(fault: Exclude<Fault, { kind: 'dead-token' }>): number {
  switch (fault.kind) {
    case 'rate-limit':
      return -2;
    case 'quota':
      return 33;
    case 'server-error':
    case 'goaway':
      return -1;
    case 'expired-auth':
      return 11;
    case 'code':
      return Number(fault.code);
  }
}

/** An app key and master secret per app, with a communication and a marketing channel; receipts go to the apps file's `receiptUrl`. */
export const OPPO_EMULATOR: EmulatorSetup<OppoEmulator> = {
  create: () => new OppoEmulator(),
  register: (oppo, appIds, receiptUrl) =>
    appIds.map((appId) => {
      const app = { appKey: randomSecret(), masterSecret: randomSecret(), channelIds: ['im_message', 'marketing'], appId };
      oppo.registerApp(app);
      return {
        appKey: app.appKey,
        masterSecret: app.masterSecret,
        channelId: 'im_message',
        marketingChannelId: 'marketing',
        ...(receiptUrl ? { receiptUrl } : {}),
      };
    }),
};
