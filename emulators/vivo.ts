import { createHash, randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { type EmulatorSetup, type Fault, HttpsEmulator, keyedReceiptBatch, randomId, randomSecret, type Receipt, sleep, vendorCharCount } from './common.ts';
import { applyConnectionFault, type Route, sendJson } from './https-server.ts';
import type { VendorJson } from './common.ts';

export interface VivoAppRegistration {
  readonly appId: string;
  readonly appKey: string;
  readonly appSecret: string;
}

/** Secondary categories of the system class (classification 1); others belong to operation (0). */
const SYSTEM_CATEGORIES = new Set(['IM', 'ACCOUNT', 'TODO', 'DEVICE_REMINDER', 'ORDER', 'SUBSCRIPTION']);

/**
 * vivo push: /message/auth (md5(appId + appKey + timestamp + appSecret), ±10 min, authToken a
 * day, `authToken` header), /message/send, /message/saveListPayload + /message/pushToList,
 * `{"result":int,"desc"}` answers with `invalidUser(s)`, field limits (title 40, content 100,
 * clientCustomMap 1024, TTL 60 s–1 day), category/classification consistency (10097), and
 * receipts `{"<taskId>":{"param","targets","ackTime","ackType"}}` to the console-configured URL.
 */
export class VivoEmulator extends HttpsEmulator {
  private readonly apps = new Map<string, VivoAppRegistration>();
  private readonly authTokens = new Map<string, { appId: string; expiresAtMs: number }>();
  private readonly listPayloads = new Map<string, VendorJson>();
  tokensMinted = 0;

  constructor() {
    super('vivo');
    this.limitedClassCapPerDevice = 5;
  }

  registerApp(reg: VivoAppRegistration): void {
    this.apps.set(String(reg.appId), reg);
  }

  /** Apps registered so far. */
  get registeredApps(): number {
    return this.apps.size;
  }

  protected route(path: string): Route | undefined {
    if (path === '/message/auth') return (_req, res, body) => this.auth(res, body);
    if (path === '/message/send') return (req, res, body) => this.send(req, res, body, 'single');
    if (path === '/message/saveListPayload') return (req, res, body) => this.send(req, res, body, 'save');
    if (path === '/message/pushToList') return (req, res, body) => this.send(req, res, body, 'list');
    return undefined;
  }

  private auth(res: ServerResponse, body: string): void {
    let req: { appId?: unknown; appKey?: string; timestamp?: number; sign?: string };
    try {
      req = JSON.parse(body);
    } catch {
      return sendJson(res, 200, { result: 10050, desc: 'bad request' });
    }
    const app = this.apps.get(String(req.appId));
    if (!app || app.appKey !== req.appKey) return sendJson(res, 200, { result: 10000, desc: 'appId or appKey invalid' });
    if (typeof req.timestamp !== 'number' || Math.abs(this.clock.now() - req.timestamp) > 10 * 60_000)
      return sendJson(res, 200, { result: 10000, desc: 'timestamp out of range' });
    const expected = createHash('md5').update(`${app.appId}${app.appKey}${req.timestamp}${app.appSecret}`).digest('hex');
    if (req.sign !== expected) return sendJson(res, 200, { result: 10000, desc: 'sign invalid' });
    const authToken = randomBytes(16).toString('hex');
    this.authTokens.set(authToken, { appId: app.appId, expiresAtMs: this.clock.now() + 24 * 3600_000 });
    this.tokensMinted++;
    sendJson(res, 200, { result: 0, desc: '请求成功', authToken });
  }

  private validate(m: VendorJson): number | undefined {
    // Documented: title ≤ 20 Chinese / 40 English characters, content ≤ 50 / 100 (one Chinese counts two).
    if (typeof m.title !== 'string' || m.title.length === 0 || vendorCharCount.chineseTwo(m.title) > 40) return 10055;
    if (typeof m.content !== 'string' || m.content.length === 0 || vendorCharCount.chineseTwo(m.content) > 100) return 10055;
    if (typeof m.timeToLive === 'number' && (m.timeToLive < 60 || m.timeToLive > 86_400)) return 10055;
    if (m.clientCustomMap && vendorCharCount.chineseTwo(JSON.stringify(m.clientCustomMap)) > 1024) return 10055;
    if (m.category !== undefined) {
      if (typeof m.category !== 'string' || m.category !== m.category.toUpperCase()) return 10096;
      if ((m.classification === 1) !== SYSTEM_CATEGORIES.has(m.category)) return 10097;
    }
    if (typeof m.requestId !== 'string' || m.requestId.length === 0 || m.requestId.length > 64) return 10055;
    return undefined;
  }

  private async send(req: IncomingMessage, res: ServerResponse, body: string, mode: 'single' | 'save' | 'list'): Promise<void> {
    this.sendRequests++;
    if (this.latencyMs > 0 && mode !== 'save') await sleep(this.latencyMs);
    const token = req.headers.authtoken as string | undefined;
    const session = token === undefined ? undefined : this.authTokens.get(token);
    if (!session || session.expiresAtMs <= this.clock.now()) return sendJson(res, 200, { result: 10000, desc: 'authToken invalid or expired' });
    let m: VendorJson;
    try {
      m = JSON.parse(body);
    } catch {
      return sendJson(res, 200, { result: 10050, desc: 'bad request' });
    }
    if (mode === 'save') {
      const invalid = this.validate(m);
      if (invalid) return sendJson(res, 200, { result: invalid, desc: 'invalid parameter' });
      const taskId = randomId();
      this.listPayloads.set(taskId, m);
      return sendJson(res, 200, { result: 0, desc: '请求成功', taskId });
    }
    const content = mode === 'single' ? m : { ...this.listPayloads.get(String(m.taskId)), requestId: m.requestId };
    if (mode === 'list' && !this.listPayloads.has(String(m.taskId))) return sendJson(res, 200, { result: 10050, desc: 'taskId not found' });
    const regIds: string[] = mode === 'single' ? [String(m.regId ?? '')] : Array.isArray(m.regIds) ? m.regIds.map(String) : [];
    const record = (answer: string, r: string) =>
      this.record({
        client: req.headers['user-agent'],
        appId: session.appId,
        token: r,
        request: content,
        answer,
        title: content.title,
        body: content.content,
        collapseId: content.notifyId === undefined ? undefined : String(content.notifyId),
        data: content.clientCustomMap,
      });
    const refuse = (result: number, desc: string) => {
      regIds.forEach((r) => record(String(result), r));
      sendJson(res, 200, { result, desc });
    };
    if (regIds.length === 0 || regIds.some((r) => r === '') || (mode === 'list' && (regIds.length < 2 || regIds.length > 1000)))
      return refuse(10050, 'regId invalid');
    const invalid = this.validate(content);
    if (invalid) return refuse(invalid, 'invalid parameter');
    const connectionFault = this.takeConnectionFault(regIds);
    if (connectionFault && applyConnectionFault(connectionFault, req, res)) return;
    const fault = this.takeFault(regIds);
    if (fault && fault.kind !== 'dead-token') return this.fault(fault, refuse, res);
    const dead = regIds.filter((r) => this.deadTokens.has(r) || fault?.kind === 'dead-token');
    const taskId = mode === 'list' ? String(m.taskId) : randomId();
    const capped = new Set(regIds.filter((r) => !dead.includes(r) && content.classification !== 1 && this.overLimitedClassCap(r)));
    regIds.forEach((r) => record(dead.includes(r) ? 'invalidUser.2' : capped.has(r) ? 'class-capped' : 'accepted', r));
    const invalidUsers = dead.map((userid) => ({ userid, status: 2 }));
    sendJson(res, 200, {
      result: 0,
      desc: '请求成功',
      taskId,
      ...(mode === 'single' ? (invalidUsers[0] ? { invalidUser: invalidUsers[0] } : {}) : invalidUsers.length ? { invalidUsers } : {}),
    });
    this.receiptFor(
      taskId,
      regIds.filter((r) => !dead.includes(r)),
      content,
      capped,
    );
  }

  private fault(fault: Exclude<Fault, { kind: 'dead-token' }>, refuse: (result: number, desc: string) => void, res: ServerResponse): void {
    switch (fault.kind) {
      case 'rate-limit':
        return refuse(10073, 'push frequency exceeds limit');
      case 'quota':
        return refuse(10070, 'exceeds the total push limit');
      case 'server-error':
      case 'goaway':
        return sendJson(
          res,
          500,
          { result: 500, desc: 'Internal Server Error' },
          fault.kind === 'server-error' && fault.retryAfterS !== undefined ? { 'retry-after': String(fault.retryAfterS) } : {},
        );
      case 'expired-auth':
        return refuse(10000, 'authToken invalid or expired');
      case 'code':
        return refuse(Number(fault.code), fault.code);
    }
  }

  private receiptFor(taskId: string, regIds: readonly string[], content: VendorJson, capped: ReadonlySet<string>): void {
    const url = this.receipts.url;
    if (!url || regIds.length === 0 || !content.extra?.callback) return;
    const ack = { delivered: 1, 'dead-token': 2, failed: 3 } as const;
    // A JSON object keyed by task id, one receipt per key.
    const batch = keyedReceiptBatch(url, 'application/json', (body) => JSON.stringify(body));
    for (const r of regIds) {
      const receipt: Receipt<Array<[string, VendorJson]>> = {
        batch,
        entry: () => [
          [
            taskId,
            {
              param: content.extra?.['callback.param'] ?? '',
              targets: r,
              ackTime: this.clock.now(),
              ackType: capped.has(r) ? ack.failed : ack[this.receiptOutcome(r)],
            },
          ],
        ],
      };
      this.rememberReceipt(r, receipt);
      this.scheduleReceipt(receipt);
    }
  }
}

/** App id, key and secret per app; receipts go to the URL registered in the vivo console, `receiptUrl`. */
export const VIVO_EMULATOR: EmulatorSetup<VivoEmulator> = {
  create: () => new VivoEmulator(),
  register(vivo, appIds, receiptUrl) {
    // The console URL is one per vendor account: apps registered later leave it as it is.
    if (receiptUrl !== undefined) vivo.receipts.url = receiptUrl;
    return appIds.map(() => {
      // Numbered in registration order, so apps registered later (a reload's new app) get ids of their own.
      const app = { appId: String(10_000 + vivo.registeredApps), appKey: randomSecret(), appSecret: randomSecret() };
      vivo.registerApp(app);
      return { appId: app.appId, appKey: app.appKey, appSecret: app.appSecret, receiptId: 'receipt-1' };
    });
  },
};
