import type { IncomingMessage, ServerResponse } from 'node:http';
import { type EmulatorSetup, type Fault, HttpsEmulator, keyedReceiptBatch, randomId, randomSecret, sleep, vendorCharCount, type VendorJson } from './common.ts';
import { applyConnectionFault, type Route, sendJson, tryJson } from './https-server.ts';

export interface XiaomiAppRegistration {
  readonly appSecret: string;
  readonly packageName: string;
  /** Registered notification channels (the private IM channel among them). */
  readonly channelIds: readonly string[];
  readonly appId: string;
}

/**
 * MiPush /v3/message/regid (and /v2): `Authorization: key=<AppSecret>`, form body validated
 * (package, title/description, channel_id, size), answers `{"result","code",...}` with HTTP 200;
 * dead regIds are accepted synchronously and reported by receipt type 16, posted to the message's
 * `extra.callback` URL as form field `data`.
 */
export class XiaomiEmulator extends HttpsEmulator {
  private readonly apps = new Map<string, XiaomiAppRegistration>();

  constructor() {
    super('xiaomi');
  }

  registerApp(reg: XiaomiAppRegistration): void {
    this.apps.set(reg.appSecret, reg);
  }

  protected route(path: string): Route | undefined {
    return path === '/v3/message/regid' || path === '/v2/message/regid' ? (req, res, body) => this.send(req, res, body) : undefined;
  }

  private error(res: ServerResponse, code: number, description: string): void {
    sendJson(res, 200, { result: 'error', code, description, reason: description, trace_id: randomId('Xm') });
  }

  private async send(req: IncomingMessage, res: ServerResponse, body: string): Promise<void> {
    this.sendRequests++;
    if (this.latencyMs > 0) await sleep(this.latencyMs);
    const secret = /^key=(.+)$/.exec(req.headers.authorization ?? '')?.[1];
    const app = secret === undefined ? undefined : this.apps.get(secret);
    if (!app) return this.error(res, 21301, '认证失败');
    const form = new URLSearchParams(body);
    const regIds = (form.get('registration_id') ?? '').split(',').filter(Boolean);
    const record = (answer: string) => {
      for (const token of regIds) {
        this.record({
          client: req.headers['user-agent'],
          appId: app.appId,
          token,
          request: Object.fromEntries(form),
          answer,
          title: form.get('title') ?? undefined,
          body: form.get('description') ?? undefined,
          collapseId: form.get('notify_id') ?? undefined,
          data: tryJson(form.get('payload') ?? undefined),
        });
      }
    };
    const refuse = (code: number, description: string) => {
      record(String(code));
      this.error(res, code, description);
    };
    if (regIds.length === 0) return refuse(10016, 'registration_id is required');
    if (form.get('restricted_package_name') !== app.packageName) return refuse(22022, 'illegal package name');
    if (form.get('pass_through') !== '1') {
      // Documented: not all whitespace; title shorter than 50, description shorter than 128 characters.
      const title = form.get('title') ?? '';
      const description = form.get('description') ?? '';
      if (title.trim() === '' || description.trim() === '') return refuse(10017, 'title and description are required and not blank');
      if (vendorCharCount.oneEach(title) >= 50) return refuse(65009, 'title too long');
      if (vendorCharCount.oneEach(description) >= 128) return refuse(65009, 'description too long');
    }
    const channel = form.get('extra.channel_id');
    if (!channel || !app.channelIds.includes(channel)) return refuse(27001, 'channel info mismatch');
    const size = Buffer.byteLength(form.get('title') ?? '') + Buffer.byteLength(form.get('description') ?? '') + Buffer.byteLength(form.get('payload') ?? '');
    if (size > 4096) return refuse(65009, 'message content too long');
    const connectionFault = this.takeConnectionFault(regIds);
    if (connectionFault && applyConnectionFault(connectionFault, req, res)) return;
    const fault = this.takeFault(regIds);
    // MiPush accepts dead regIds and reports them later (receipt type 16).
    if (fault?.kind === 'dead-token') regIds.forEach((r) => this.deadTokens.add(r));
    else if (fault) return this.fault(fault, refuse);
    record('accepted');
    const id = randomId('slm');
    sendJson(res, 200, {
      result: 'ok',
      code: 0,
      trace_id: randomId('Xm'),
      description: '成功',
      info: `Received push messages for ${regIds.length} REGID`,
      data: { id, day_quota: '0', day_acked: String(this.acceptedCount), channel_exceed_quota: '' },
    });
    this.receiptFor(id, regIds, form);
  }

  private fault(fault: Fault, refuse: (code: number, description: string) => void): void {
    switch (fault.kind) {
      case 'rate-limit':
        return refuse(10027, 'app api call too frequently');
      case 'quota':
        return refuse(10034, 'app send too many messages today');
      case 'dead-token':
      case 'server-error':
      case 'goaway':
        return refuse(-1, 'unknown error');
      case 'expired-auth':
        return refuse(21301, '认证失败');
      case 'code':
        return refuse(Number(fault.code), fault.code);
    }
  }

  /** Receipts to the message's `extra.callback` URL (else the configured one), types limited by `extra.callback.type`. */
  private receiptFor(msgId: string, regIds: readonly string[], form: URLSearchParams): void {
    const url = form.get('extra.callback') ?? this.receipts.url;
    if (!url) return;
    const wanted = Number(form.get('extra.callback.type') ?? 3);
    const bits = { delivered: 1, 'dead-token': 16, failed: 32 } as const;
    // One entry per receipt type under the message id, as MiPush groups targets by type.
    const entry = (targets: readonly string[]) => (): Array<[string, VendorJson]> => {
      const byType = new Map<number, string[]>();
      for (const r of targets) {
        const type = bits[this.receiptOutcome(r)];
        if ((wanted & type) !== 0) byType.set(type, [...(byType.get(type) ?? []), r]);
      }
      return [...byType].map(([type, group]) => [
        msgId,
        {
          param: form.get('extra.callback.param') ?? '',
          type,
          targets: group.join(','),
          jobkey: form.get('extra.jobkey') ?? '',
          barStatus: 'Enable',
          timestamp: this.clock.now(),
        },
      ]);
    };
    // Form field `data`: a JSON object keyed by message id, one receipt type per key.
    const batch = keyedReceiptBatch(url, 'application/x-www-form-urlencoded', (body) => new URLSearchParams({ data: JSON.stringify(body) }).toString());
    for (const r of regIds) this.rememberReceipt(r, { batch, entry: entry([r]) });
    this.scheduleReceipt({ batch, entry: entry(regIds) });
  }
}

/** An app secret per app, with a private and a marketing channel; receipts go to the apps file's `receiptUrl`. */
export const XIAOMI_EMULATOR: EmulatorSetup<XiaomiEmulator> = {
  create: () => new XiaomiEmulator(),
  register: (xiaomi, appIds, receiptUrl) =>
    appIds.map((appId) => {
      const app = { appSecret: randomSecret(), packageName: `com.example.${appId}`, channelIds: ['im_private', 'marketing'], appId };
      xiaomi.registerApp(app);
      return {
        appSecret: app.appSecret,
        packageName: app.packageName,
        channelId: 'im_private',
        marketingChannelId: 'marketing',
        ...(receiptUrl ? { receiptUrl } : {}),
      };
    }),
};
