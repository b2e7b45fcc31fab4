import { createPublicKey, generateKeyPairSync, randomBytes, verify, type KeyObject } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { type EmulatorSetup, type Fault, HttpsEmulator, pemOf, randomId, randomSecret, sleep } from './common.ts';
import { applyConnectionFault, type Route, sendJson } from './https-server.ts';
import type { VendorJson } from './common.ts';

/** FCM error codes → (HTTP status, google.rpc status) as FCM documents them (docs/vendors.md, Sources). */
export const FCM_ERROR_SHAPES: Readonly<Record<string, readonly [number, string]>> = {
  UNREGISTERED: [404, 'NOT_FOUND'],
  INVALID_ARGUMENT: [400, 'INVALID_ARGUMENT'],
  SENDER_ID_MISMATCH: [403, 'PERMISSION_DENIED'],
  QUOTA_EXCEEDED: [429, 'RESOURCE_EXHAUSTED'],
  UNAVAILABLE: [503, 'UNAVAILABLE'],
  INTERNAL: [500, 'INTERNAL'],
  THIRD_PARTY_AUTH_ERROR: [401, 'UNAUTHENTICATED'],
  UNSPECIFIED_ERROR: [400, 'UNKNOWN'],
};

const SCOPE = 'https://www.googleapis.com/auth/firebase.messaging';

export interface FcmServiceAccountRegistration {
  readonly clientEmail: string;
  readonly projectId: string;
  /** The app id recordings carry. */
  readonly appId: string;
  readonly publicKey: string | KeyObject;
}

/**
 * Google's OAuth2 token endpoint (JWT-bearer grant: RS256 assertion signed by a registered
 * service account, aud = this endpoint, firebase.messaging scope, exp − iat ≤ 1 h) and FCM HTTP v1
 * messages:send (bearer checked, project matched, message validated, 4096-byte limit), with
 * Google's error envelopes (FcmError detail + status; a 429 without detail as a variant).
 */
export class FcmEmulator extends HttpsEmulator {
  private readonly accounts = new Map<string, { projectId: string; appId: string; publicKey: KeyObject }>();
  private readonly accessTokens = new Map<string, { email: string; expiresAtMs: number }>();
  /** Access tokens minted (tests check caching). */
  tokensMinted = 0;

  constructor() {
    super('fcm');
  }

  get tokenUrl(): string {
    return `${this.baseUrl}/token`;
  }

  registerServiceAccount(reg: FcmServiceAccountRegistration): void {
    const publicKey = typeof reg.publicKey === 'string' ? createPublicKey(reg.publicKey) : reg.publicKey;
    this.accounts.set(reg.clientEmail, { projectId: reg.projectId, appId: reg.appId, publicKey });
  }

  protected route(path: string): Route | undefined {
    if (path === '/token' || path === '/o/oauth2/token') return (req, res, body) => this.token(req, res, body);
    if (/^\/v1\/projects\/[^/]+\/messages:send$/.test(path)) return (req, res, body, url) => this.send(req, res, body, url);
    return undefined;
  }

  private token(_req: IncomingMessage, res: ServerResponse, body: string): void {
    const form = new URLSearchParams(body);
    const grant = (description: string, error = 'invalid_grant') => sendJson(res, 400, { error, error_description: description });
    if (form.get('grant_type') !== 'urn:ietf:params:oauth:grant-type:jwt-bearer') return grant('Invalid grant_type', 'unsupported_grant_type');
    const parts = (form.get('assertion') ?? '').split('.');
    if (parts.length !== 3) return grant('Invalid JWT');
    let header: { alg?: string };
    let claims: { iss?: string; scope?: string; aud?: string; iat?: number; exp?: number };
    try {
      header = JSON.parse(Buffer.from(parts[0]!, 'base64url').toString());
      claims = JSON.parse(Buffer.from(parts[1]!, 'base64url').toString());
    } catch {
      return grant('Invalid JWT');
    }
    const account = claims.iss === undefined ? undefined : this.accounts.get(claims.iss);
    if (header.alg !== 'RS256' || !account) return grant('Invalid JWT Signature.');
    if (!verify('sha256', Buffer.from(`${parts[0]}.${parts[1]}`), account.publicKey, Buffer.from(parts[2]!, 'base64url')))
      return grant('Invalid JWT Signature.');
    if (claims.aud !== this.tokenUrl && claims.aud !== `${this.baseUrl}/o/oauth2/token`) return grant('Invalid JWT: audience');
    const nowS = this.clock.now() / 1000;
    if (typeof claims.iat !== 'number' || typeof claims.exp !== 'number' || claims.exp - claims.iat > 3600 || claims.iat > nowS + 60 || claims.exp < nowS) {
      return grant('Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe.');
    }
    if (!(claims.scope ?? '').split(' ').includes(SCOPE)) return grant('Invalid OAuth scope or ID token audience provided.', 'invalid_scope');
    const accessToken = `ya29.${randomBytes(24).toString('base64url')}`;
    this.accessTokens.set(accessToken, { email: claims.iss!, expiresAtMs: this.clock.now() + 3599_000 });
    this.tokensMinted++;
    sendJson(res, 200, { access_token: accessToken, expires_in: 3599, token_type: 'Bearer' });
  }

  private error(
    res: ServerResponse,
    errorCode: string | undefined,
    status: number,
    rpcStatus: string,
    message: string,
    extraDetails: unknown[] = [],
    headers: Record<string, string> = {},
  ): void {
    const details = [...(errorCode ? [{ '@type': 'type.googleapis.com/google.firebase.fcm.v1.FcmError', errorCode }] : []), ...extraDetails];
    sendJson(res, status, { error: { code: status, message, status: rpcStatus, ...(details.length ? { details } : {}) } }, headers);
  }

  private async send(req: IncomingMessage, res: ServerResponse, body: string, url: URL): Promise<void> {
    this.sendRequests++;
    if (this.latencyMs > 0) await sleep(this.latencyMs);
    const bearer = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    const session = bearer === undefined ? undefined : this.accessTokens.get(bearer);
    const unauth = () =>
      this.error(
        res,
        undefined,
        401,
        'UNAUTHENTICATED',
        'Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.',
      );
    if (!session || session.expiresAtMs <= this.clock.now()) return unauth();
    const account = this.accounts.get(session.email)!;
    const project = url.pathname.split('/')[3];
    if (project !== account.projectId) return this.error(res, undefined, 403, 'PERMISSION_DENIED', 'Permission denied on resource project.');
    let message: VendorJson;
    try {
      message = (JSON.parse(body) as { message: VendorJson }).message;
    } catch {
      return this.error(res, undefined, 400, 'INVALID_ARGUMENT', 'Invalid JSON payload received.');
    }
    const token = typeof message?.token === 'string' ? message.token : '';
    const record = (answer: string) =>
      this.record({
        client: req.headers['user-agent'],
        appId: account.appId,
        token,
        request: message,
        answer,
        title: message?.notification?.title,
        body: message?.notification?.body,
        collapseId: message?.android?.collapse_key,
        data: message?.data,
      });
    const invalid = (text: string, field: string) => {
      record('INVALID_ARGUMENT');
      this.error(res, 'INVALID_ARGUMENT', 400, 'INVALID_ARGUMENT', text, [
        { '@type': 'type.googleapis.com/google.rpc.BadRequest', fieldViolations: [{ field, description: text }] },
      ]);
    };
    if (!message || token === '') return invalid('Recipient of the message is not set.', 'message.token');
    if (message.data && Object.values(message.data).some((v) => typeof v !== 'string'))
      return invalid("Invalid value at 'message.data[0].value'", 'message.data');
    if (Buffer.byteLength(JSON.stringify({ notification: message.notification, data: message.data })) > 4096) return invalid('Message is too big', 'message');
    const priority = message.android?.priority;
    if (priority !== undefined && !/^(normal|high)$/i.test(priority)) return invalid('Invalid value at message.android.priority', 'message.android.priority');
    const connectionFault = this.takeConnectionFault([token]);
    if (connectionFault && applyConnectionFault(connectionFault, req, res)) return;
    const fault = this.takeFault([token]) ?? (this.deadTokens.has(token) ? { kind: 'dead-token' as const } : undefined);
    if (fault) return this.fault(res, fault, record);
    record('accepted');
    sendJson(res, 200, { name: `projects/${project}/messages/${randomId('0:')}` });
  }

  private fault(res: ServerResponse, fault: Fault, record: (answer: string) => void): void {
    const retry = (s: number | undefined): Record<string, string> => (s === undefined ? {} : { 'retry-after': String(s) });
    switch (fault.kind) {
      case 'dead-token':
        record('UNREGISTERED');
        return this.error(res, 'UNREGISTERED', 404, 'NOT_FOUND', 'Requested entity was not found.');
      case 'rate-limit':
      case 'quota':
        record('QUOTA_EXCEEDED');
        return this.error(
          res,
          'QUOTA_EXCEEDED',
          429,
          'RESOURCE_EXHAUSTED',
          'Quota exceeded for quota metric.',
          [{ '@type': 'type.googleapis.com/google.rpc.QuotaFailure', violations: [{ subject: 'device', description: 'Device message rate exceeded.' }] }],
          retry(fault.kind === 'rate-limit' ? fault.retryAfterS : 60),
        );
      case 'server-error':
        record('UNAVAILABLE');
        return this.error(res, 'UNAVAILABLE', 503, 'UNAVAILABLE', 'The service is currently unavailable.', [], retry(fault.retryAfterS));
      case 'expired-auth':
        record('UNAUTHENTICATED');
        return this.error(res, undefined, 401, 'UNAUTHENTICATED', 'Request had invalid authentication credentials.');
      case 'goaway':
        record('UNAVAILABLE');
        return this.error(res, 'UNAVAILABLE', 503, 'UNAVAILABLE', 'The service is currently unavailable.');
      case 'code': {
        record(fault.code);
        if (fault.variant === 'no-detail') {
          // A project-level quota: RESOURCE_EXHAUSTED with only an ErrorInfo detail.
          return this.error(res, undefined, 429, 'RESOURCE_EXHAUSTED', 'Quota exceeded.', [
            {
              '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
              reason: 'RATE_LIMIT_EXCEEDED',
              metadata: { quota_limit: 'SendsPerMinutePerProject', quota_metric: 'fcm.googleapis.com/send_requests' },
            },
          ]);
        }
        const [status, rpc] = FCM_ERROR_SHAPES[fault.code] ?? [400, 'INVALID_ARGUMENT'];
        if (fault.code === 'INVALID_ARGUMENT' && fault.variant === 'token') {
          return this.error(res, 'INVALID_ARGUMENT', 400, 'INVALID_ARGUMENT', 'The registration token is not a valid FCM registration token', [
            { '@type': 'type.googleapis.com/google.rpc.BadRequest', fieldViolations: [{ field: 'message.token', description: 'Invalid registration token' }] },
          ]);
        }
        const message = fault.code === 'INVALID_ARGUMENT' ? 'Invalid TTL: the TTL must be within 0 and 2419200 seconds' : `${fault.code}`;
        return this.error(res, fault.code, status, rpc, message);
      }
    }
  }
}

/** A service account per app, its key registered with the emulated token endpoint. */
export const FCM_EMULATOR: EmulatorSetup<FcmEmulator> = {
  create: () => new FcmEmulator(),
  register: (fcm, appIds) =>
    appIds.map((appId) => {
      const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
      const clientEmail = `push@${appId}.iam.gserviceaccount.com`;
      fcm.registerServiceAccount({ clientEmail, projectId: `project-${appId}`, appId, publicKey: rsa.publicKey });
      return {
        serviceAccount: {
          type: 'service_account',
          project_id: `project-${appId}`,
          private_key_id: randomSecret(),
          private_key: pemOf(rsa.privateKey, 'pkcs8'),
          client_email: clientEmail,
          token_uri: fcm.tokenUrl,
        },
      };
    }),
};
