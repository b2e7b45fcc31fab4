import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { type EmulatorSetup, type Fault, HttpsEmulator, randomId, randomSecret, type ReceiptBatch, sleep } from './common.ts';
import { applyConnectionFault, postCallback, type Route, sendJson, tryJson } from './https-server.ts';
import type { VendorJson } from './common.ts';

/** One entry of an HMS receipt callback's `statuses`. */
interface HmsStatus {
  readonly biTag: string;
  readonly appid: string;
  readonly token: string;
  readonly status: number;
  readonly timestamp: number;
  readonly requestId: string;
}

/** HTTP status Huawei pairs with a business code (UNCONFIRMED per code; 401 auth, 500/503 server). */
export function hmsHttpStatus(code: string): number {
  if (code === '80000000' || code === '80100000') return 200;
  if (code.startsWith('802')) return 401;
  if (code === '81000001') return 500;
  return 400;
}

const CATEGORIES = new Set([
  'IM',
  'VOIP',
  'SUBSCRIPTION',
  'TRAVEL',
  'HEALTH',
  'WORK',
  'ACCOUNT',
  'EXPRESS',
  'FINANCE',
  'DEVICE_REMINDER',
  'MAIL',
  'PLAY_VOICE',
  'MARKETING',
]);

export interface HmsAppRegistration {
  readonly clientId: string;
  readonly clientSecret: string;
  /** The app id recordings carry. */
  readonly appId: string;
}

/** Receipt signing of the emulated AppGallery Connect receipt configuration. */
export interface HmsReceiptSigning {
  readonly callbackKey: string;
  readonly callbackUsername: string;
}

/** `X-HUAWEI-CALLBACK-ID: timestamp=<ms>;nonce=<n>;value=base64(HMAC-SHA256(key, timestamp + nonce + username))`. */
export function hmsCallbackId(signing: HmsReceiptSigning, timestampMs: number, nonce: string): string {
  const value = createHmac('sha256', signing.callbackKey).update(`${timestampMs}${nonce}${signing.callbackUsername}`).digest('base64');
  return `timestamp=${timestampMs};nonce=${nonce};value=${value}`;
}

/**
 * Huawei OAuth (client credentials, 3600 s tokens) and Push Kit v1 messages:send: bearer checked
 * per app, message validated (category, click_action, ≤1000 tokens, 4096-byte body excluding
 * tokens), per-token dead tokens as 80100000 `illegal_tokens` / 80300007, 503 flow control, and
 * signed receipts `{"statuses":[…]}` with X-HUAWEI-CALLBACK-ID.
 */
export class HmsEmulator extends HttpsEmulator {
  private readonly apps = new Map<string, HmsAppRegistration>();
  private readonly accessTokens = new Map<string, { clientId: string; expiresAtMs: number }>();
  tokensMinted = 0;
  receiptSigning: HmsReceiptSigning = { callbackKey: randomBytes(16).toString('hex'), callbackUsername: 'push-receipts' };

  constructor() {
    super('hms');
    this.limitedClassCapPerDevice = 2;
  }

  get authUrl(): string {
    return `${this.baseUrl}/oauth2/v3/token`;
  }

  /** Registers an app, or gives a registered client id a new secret (a secret reset in AppGallery Connect: tokens minted before stay valid). */
  registerApp(reg: HmsAppRegistration): void {
    this.apps.set(reg.clientId, reg);
  }

  /** Client ids registered so far. */
  get registeredApps(): number {
    return this.apps.size;
  }

  protected route(path: string): Route | undefined {
    if (path === '/oauth2/v3/token') return (_req, res, body) => this.token(res, body);
    if (/^\/v1\/[^/]+\/messages:send$/.test(path)) return (req, res, body, url) => this.send(req, res, body, url);
    return undefined;
  }

  private token(res: ServerResponse, body: string): void {
    const form = new URLSearchParams(body);
    const app = this.apps.get(form.get('client_id') ?? '');
    if (form.get('grant_type') !== 'client_credentials') return sendJson(res, 400, { error: 1101, sub_error: 20001, error_description: 'invalid grant_type' });
    if (!app || app.clientSecret !== form.get('client_secret'))
      return sendJson(res, 400, { error: 1101, sub_error: 20002, error_description: 'invalid client' });
    const accessToken = randomBytes(32).toString('base64');
    this.accessTokens.set(accessToken, { clientId: app.clientId, expiresAtMs: this.clock.now() + 3600_000 });
    this.tokensMinted++;
    sendJson(res, 200, { access_token: accessToken, expires_in: 3600, token_type: 'Bearer' });
  }

  private answer(res: ServerResponse, code: string, msg: string, status = hmsHttpStatus(code)): void {
    sendJson(res, status, { code, msg, requestId: randomId() });
  }

  private async send(req: IncomingMessage, res: ServerResponse, body: string, url: URL): Promise<void> {
    this.sendRequests++;
    if (this.latencyMs > 0) await sleep(this.latencyMs);
    const clientId = url.pathname.split('/')[2]!;
    const bearer = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    const session = bearer === undefined ? undefined : this.accessTokens.get(bearer);
    if (!session || session.clientId !== clientId) return this.answer(res, '80200001', 'Oauth authentication error');
    if (session.expiresAtMs <= this.clock.now()) return this.answer(res, '80200003', 'Oauth Token expired.');
    const app = this.apps.get(clientId)!;
    let message: VendorJson;
    try {
      message = (JSON.parse(body) as { message: VendorJson }).message;
    } catch {
      return this.answer(res, '80100003', 'Incorrect message structure');
    }
    const tokens: string[] = Array.isArray(message?.token) ? message.token : [];
    const n = message?.android?.notification;
    const record = (answer: string, token: string) =>
      this.record({
        client: req.headers['user-agent'],
        appId: app.appId,
        token,
        request: message,
        answer,
        title: n?.title,
        body: n?.body,
        collapseId: n?.tag,
        data: tryJson(message?.data),
      });
    const refuse = (code: string, msg: string, status?: number) => {
      for (const t of tokens) record(code, t);
      this.answer(res, code, msg, status);
    };
    if (tokens.length === 0) return refuse('80100001', 'token is empty');
    if (tokens.length > 1000) return refuse('80300010', 'The number of tokens exceeds the default value');
    const { token: _tokens, ...withoutTokens } = message;
    if (Buffer.byteLength(JSON.stringify({ validate_only: false, message: withoutTokens })) > 4096)
      return refuse('80300008', 'The message body size exceeds the default value');
    if (n && !n.click_action) return refuse('80100003', 'click_action is mandatory');
    const ck = message.android?.collapse_key;
    if (ck !== undefined && (!Number.isInteger(ck) || ck < -1 || ck > 100)) return refuse('80100013', 'collapse_key is illegal');
    if (message.android?.category !== undefined && !CATEGORIES.has(message.android.category)) return refuse('80100001', 'category is invalid');
    const connectionFault = this.takeConnectionFault(tokens);
    if (connectionFault && applyConnectionFault(connectionFault, req, res)) return;
    const fault = this.takeFault(tokens);
    if (fault) return this.fault(fault, refuse);
    const illegal = tokens.filter((t) => this.deadTokens.has(t));
    if (illegal.length === tokens.length) return refuse('80300007', 'All the tokens are invalid');
    const requestId = randomId();
    const marketing = message.android?.category === undefined || message.android.category === 'MARKETING';
    const capped = new Set(tokens.filter((t) => !illegal.includes(t) && marketing && this.overLimitedClassCap(t)));
    for (const t of tokens) record(illegal.includes(t) ? '80100000' : capped.has(t) ? 'class-capped' : 'accepted', t);
    if (illegal.length > 0) {
      sendJson(res, 200, {
        code: '80100000',
        msg: JSON.stringify({ success: tokens.length - illegal.length, failure: illegal.length, illegal_tokens: illegal }),
        requestId,
      });
    } else {
      sendJson(res, 200, { code: '80000000', msg: 'Success', requestId });
    }
    this.receiptFor(
      app.appId,
      tokens.filter((t) => !illegal.includes(t)),
      requestId,
      message.android?.bi_tag,
      capped,
    );
  }

  private fault(fault: Fault, refuse: (code: string, msg: string, status?: number) => void): void {
    switch (fault.kind) {
      case 'dead-token':
        return refuse('80300007', 'All the tokens are invalid');
      case 'rate-limit':
      case 'quota':
        return refuse('80100017', 'Flow control', 503);
      case 'server-error':
      case 'goaway':
        return refuse('81000001', 'System inner error');
      case 'expired-auth':
        return refuse('80200003', 'Oauth Token expired.');
      case 'code':
        return refuse(fault.code, fault.code);
    }
  }

  private receiptFor(appid: string, tokens: readonly string[], requestId: string, biTag: string | undefined, capped: ReadonlySet<string>): void {
    const url = this.receipts.url;
    if (!url || tokens.length === 0) return;
    const kinds = { delivered: 0, 'dead-token': 5, failed: 14 } as const;
    const status = (token: string) => ({
      biTag: biTag ?? '',
      appid,
      token,
      status: capped.has(token) ? 102 : kinds[this.receiptOutcome(token)],
      timestamp: this.clock.now(),
      requestId,
    });
    const batch = this.receiptBatch(url);
    for (const t of tokens) this.rememberReceipt(t, { batch, entry: () => [status(t)] });
    this.scheduleReceipt({ batch, entry: () => tokens.map(status) });
  }

  /** One signed callback to `url` with the statuses of every receipt in it. */
  private receiptBatch(url: string): ReceiptBatch<HmsStatus[]> {
    return {
      key: url,
      post: async (entries) => {
        const callbackId = hmsCallbackId(this.receiptSigning, this.clock.now(), randomUUID());
        await postCallback(url, { 'content-type': 'application/json', 'x-huawei-callback-id': callbackId }, JSON.stringify({ statuses: entries.flat() }));
      },
    };
  }
}

/** OAuth client credentials per app; receipts go to the URL "configured in AppGallery Connect", `receiptUrl`. */
export const HMS_EMULATOR: EmulatorSetup<HmsEmulator> = {
  create: () => new HmsEmulator(),
  register(hms, appIds, receiptUrl) {
    // The console URL is one per vendor account: apps registered later leave it as it is.
    if (receiptUrl !== undefined) hms.receipts.url = receiptUrl;
    return appIds.map((appId) => {
      // Numbered in registration order, so apps registered later (a reload's new app) get ids of their own.
      const app = { clientId: String(100_000_000 + hms.registeredApps), clientSecret: randomSecret(), appId };
      hms.registerApp(app);
      return { authUrl: hms.authUrl, clientId: app.clientId, clientSecret: app.clientSecret, receiptId: 'RCP-1' };
    });
  },
};
