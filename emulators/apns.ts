import { createPublicKey, generateKeyPairSync, randomUUID, verify, X509Certificate, type KeyObject } from 'node:crypto';
import { constants, createSecureServer, type Http2SecureServer, type Http2Session, type ServerHttp2Stream, type IncomingHttpHeaders } from 'node:http2';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { EmulatorCore, pemOf, sleep, type ConnectionFault, type EmulatorSetup, type Fault } from './common.ts';
import { resetConnection } from './https-server.ts';
import { issuePushCertificate, type CertificateAuthority, type PushCertificate, type PushCertificateOptions, type TestTls } from './tls.ts';

/** Status of every APNs reason (docs/vendors.md, Sources), for scripted `code` faults. */
export const APNS_REASON_STATUS: Readonly<Record<string, number>> = {
  BadCollapseId: 400,
  BadDeviceToken: 400,
  BadExpirationDate: 400,
  BadMessageId: 400,
  BadPriority: 400,
  BadTopic: 400,
  DeviceTokenNotForTopic: 400,
  DuplicateHeaders: 400,
  IdleTimeout: 400,
  InvalidPushType: 400,
  MissingDeviceToken: 400,
  MissingTopic: 400,
  PayloadEmpty: 400,
  TopicDisallowed: 400,
  BadCertificate: 403,
  BadCertificateEnvironment: 403,
  ExpiredProviderToken: 403,
  Forbidden: 403,
  InvalidProviderToken: 403,
  MissingProviderToken: 403,
  UnrelatedKeyIdInToken: 403,
  BadEnvironmentKeyIdInToken: 403,
  BadPath: 404,
  MethodNotAllowed: 405,
  Unregistered: 410,
  ExpiredToken: 410,
  PayloadTooLarge: 413,
  TooManyProviderTokenUpdates: 429,
  TooManyRequests: 429,
  InternalServerError: 500,
  ServiceUnavailable: 503,
  Shutdown: 503,
};

const PUSH_TYPES = new Set(['alert', 'background', 'location', 'voip', 'complication', 'fileprovider', 'mdm', 'liveactivity', 'pushtotalk']);
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A signing key registered with the emulated Apple developer account. */
export interface ApnsKeyRegistration {
  readonly teamId: string;
  readonly keyId: string;
  /** PEM (SPKI) or KeyObject of the .p8 key's public half. */
  readonly publicKey: string | KeyObject;
  /** The app id (for recordings) per bundle id this key may push to. */
  readonly topics: Readonly<Record<string, string>>;
}

interface ConnectionAuth {
  teamId?: string;
  jwt?: string;
  changedAtMs?: number;
  /** What `jwt` was verified as: the same token string on the same connection is not verified again. */
  verified?: VerifiedToken;
}

/** A registered key, by its key id. */
interface ApnsKey {
  readonly teamId: string;
  readonly publicKey: KeyObject;
  readonly topics: Readonly<Record<string, string>>;
}

interface VerifiedToken {
  readonly key: ApnsKey;
  readonly iat: number;
}

/**
 * The DER of the extension ids Apple's push certificates carry for the environment they may
 * connect to: 1.2.840.113635.100.6.3.1 (sandbox) and .2 (production).
 */
const ENVIRONMENT_OID_DER = {
  sandbox: Buffer.from('060a2a864886f763640603' + '01', 'hex'),
  production: Buffer.from('060a2a864886f763640603' + '02', 'hex'),
} as const;

/** The bundle id of a push certificate: its subject's UID, as Apple writes it (the CN repeats it after "Push Services: "). */
function certificateTopic(cert: X509Certificate): string | undefined {
  const uid = /^UID=(.+)$/m.exec(cert.subject)?.[1];
  return uid ?? /^CN=.*Push Services: (.+)$/m.exec(cert.subject)?.[1];
}

export interface ApnsEmulatorOptions {
  /** Least time between provider-token changes on one connection before 429, ms. Default 20 min. */
  readonly minTokenUpdateIntervalMs?: number;
  /** `sandbox` answers carry apns-unique-id. Default production. */
  readonly environment?: 'production' | 'sandbox';
}

/**
 * The APNs provider API over HTTP/2 + TLS: verifies the ES256 provider token (kid registered,
 * signature in JOSE r||s form, iss = the key's team, iat ≤ 1 h old, one team per connection, no
 * token change within 20 min on a connection), validates every apns-* header and the payload size,
 * and answers with Apple's statuses and `{"reason"}` bodies. GOAWAY can be scripted mid-stream, and
 * connection faults (common.ts ConnectionFault: TCP reset without GOAWAY, stalled or late answers).
 *
 * A connection that presents a TLS client certificate is a certificate-based connection: no
 * provider token is read. The certificate must be issued by the emulator's CA (it issues them:
 * `issueCertificate`), valid by the emulator's clock, marked for the emulator's environment, and
 * its bundle id (subject UID) must be the apns-topic (with a .voip / .complication suffix at
 * most); else 403 BadCertificate, 403 BadCertificateEnvironment or 400 TopicDisallowed. Apple's
 * servers are reported to refuse an expired or foreign certificate already in the TLS handshake;
 * node's TLS server cannot refuse one there while taking connections without a certificate (token
 * auth) on the same port, so the handshake completes and each request of that connection is
 * answered with Apple's documented reason for an invalid certificate, BadCertificate
 * (docs/vendors.md, "APNs certificate auth").
 */
export class ApnsEmulator extends EmulatorCore {
  private server: Http2SecureServer | undefined;
  private readonly keys = new Map<string, ApnsKey>();
  private readonly auth = new WeakMap<Http2Session, ConnectionAuth>();
  private readonly sessions = new Set<Http2Session>();
  /** Last stream id a GOAWAY promised to process, per connection: later streams are refused. */
  private readonly goneAway = new WeakMap<Http2Session, number>();
  /** The client certificate each certificate-based connection presented. */
  private readonly clientCertificates = new WeakMap<Http2Session, X509Certificate>();
  /** The app (for recordings) of each bundle id a certificate was issued for. */
  private readonly certificateApps = new Map<string, string>();
  /** The CA whose client certificates the emulator trusts, and issues. */
  private authority: CertificateAuthority | undefined;
  private trustedCa: X509Certificate | undefined;
  baseUrl = '';
  /** GOAWAY frames sent so far. */
  goaways = 0;
  private closing = false;

  constructor(private readonly options: ApnsEmulatorOptions = {}) {
    super('apns');
  }

  /** Keys registered so far. */
  get registeredKeys(): number {
    return this.keys.size;
  }

  registerKey(reg: ApnsKeyRegistration): void {
    const publicKey = typeof reg.publicKey === 'string' ? createPublicKey(reg.publicKey) : reg.publicKey;
    this.keys.set(reg.keyId, { teamId: reg.teamId, publicKey, topics: reg.topics });
  }

  /**
   * Issues a provider certificate for `appId` (bundle id `com.example.<appId>` unless given), as
   * Apple does for an app of the developer account; its pushes are recorded under `appId`.
   */
  async issueCertificate(appId: string, options: Partial<PushCertificateOptions> = {}): Promise<PushCertificate> {
    if (!this.authority) throw new Error('the APNs emulator issues certificates once started');
    const topic = options.topic ?? `com.example.${appId}`;
    this.certificateApps.set(topic, appId);
    return issuePushCertificate(this.authority, { ...options, topic });
  }

  /** Open certificate-based connections whose certificate names `topic` (tests check pool sizes and closes). */
  certificateConnections(topic: string): number {
    let n = 0;
    for (const s of this.sessions) {
      const cert = this.clientCertificates.get(s);
      if (cert && !s.closed && !s.destroyed && certificateTopic(cert) === topic) n++;
    }
    return n;
  }

  async start(tls: TestTls, port = 0): Promise<string> {
    this.closing = false;
    this.authority = tls;
    this.trustedCa = new X509Certificate(tls.ca);
    // A client certificate is asked for, never required: token-based connections present none.
    this.server = createSecureServer({ key: tls.key, cert: tls.cert, allowHTTP1: false, requestCert: true, rejectUnauthorized: false, ca: tls.ca });
    this.server.on('session', (session) => {
      // A connection accepted just before close() is dropped too.
      if (this.closing) return session.destroy();
      this.sessions.add(session);
      const peer = (session.socket as TLSSocket).getPeerCertificate();
      if (peer?.raw) this.clientCertificates.set(session, new X509Certificate(peer.raw));
      // A client that resets its connection or stream is normal traffic for a vendor endpoint: nothing is left to answer.
      session.on('error', () => undefined);
      session.on('close', () => this.sessions.delete(session));
    });
    this.server.on('stream', (stream, headers) => {
      stream.on('error', () => undefined);
      // A handler that throws answers the stream with INTERNAL_ERROR, as a vendor's failing front end would.
      this.handle(stream, headers).catch(() => {
        if (!stream.destroyed) stream.close(constants.NGHTTP2_INTERNAL_ERROR);
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(port, '127.0.0.1', resolve));
    this.baseUrl = `https://localhost:${(this.server.address() as AddressInfo).port}`;
    return this.baseUrl;
  }

  /** Open client connections (tests check reconnects). */
  get openConnections(): number {
    return this.sessions.size;
  }

  async close(): Promise<void> {
    this.stopTimers();
    // Stop listening first: clients that reconnect at once must not keep the server open.
    this.closing = true;
    const server = this.server;
    const stopped = new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    const closing = [...this.sessions].map(
      (s) =>
        new Promise<void>((resolve) => {
          if (s.destroyed) return resolve();
          s.once('close', () => resolve());
          s.destroy();
        }),
    );
    await Promise.all([...closing, stopped]);
  }

  private answer(stream: ServerHttp2Stream, status: number, reason?: string, extra: Record<string, string> = {}, apnsId: string = randomUUID()): void {
    if (stream.destroyed || stream.closed) return;
    const headers: Record<string, string | number> = { ':status': status, 'apns-id': apnsId, ...extra };
    if (this.options.environment === 'sandbox') headers['apns-unique-id'] = randomUUID();
    if (reason === undefined) {
      stream.respond(headers, { endStream: true });
      return;
    }
    const body = JSON.stringify(status === 410 ? { reason, timestamp: this.clock.now() } : { reason });
    stream.respond({ ...headers, 'content-type': 'application/json' });
    stream.end(body);
  }

  private verifyToken(session: Http2Session, authorization: string | undefined, topic: string | undefined): { reason?: string; appId?: string } {
    if (!authorization || !authorization.startsWith('bearer ') || authorization.length <= 7) return { reason: 'MissingProviderToken' };
    const jwt = authorization.slice(7).trim();
    const conn = this.auth.get(session) ?? {};
    this.auth.set(session, conn);
    const token = conn.jwt === jwt && conn.verified ? conn.verified : verifyProviderToken(jwt, this.keys);
    if (!token) return { reason: 'InvalidProviderToken' };
    const key = token.key;
    if (conn.teamId !== undefined && conn.teamId !== key.teamId) return { reason: 'InvalidProviderToken' };
    if (this.clock.now() > token.iat * 1000 + 3600_000) return { reason: 'ExpiredProviderToken' };
    if (conn.jwt !== undefined && conn.jwt !== jwt) {
      if (this.clock.now() - (conn.changedAtMs ?? 0) < (this.options.minTokenUpdateIntervalMs ?? 20 * 60_000)) return { reason: 'TooManyProviderTokenUpdates' };
    }
    if (conn.jwt !== jwt) {
      conn.jwt = jwt;
      conn.changedAtMs = this.clock.now();
    }
    conn.verified = token;
    conn.teamId = key.teamId;
    if (topic === undefined) return { reason: 'MissingTopic' };
    const appId = key.topics[topic.replace(/\.(voip|complication)$/, '')];
    if (appId === undefined) return { reason: 'TopicDisallowed' };
    return { appId };
  }

  /** A certificate-based connection's request: the certificate and the topic checked as APNs does (see the class). */
  private verifyCertificate(cert: X509Certificate, topic: string | undefined): { reason?: string; appId?: string } {
    const now = this.clock.now();
    const ca = this.trustedCa;
    const trusted = ca !== undefined && cert.checkIssued(ca) && cert.verify(ca.publicKey);
    if (!trusted || now < Date.parse(cert.validFrom) || now > Date.parse(cert.validTo)) return { reason: 'BadCertificate' };
    if (!cert.raw.includes(ENVIRONMENT_OID_DER[this.options.environment ?? 'production'])) return { reason: 'BadCertificateEnvironment' };
    const bundle = certificateTopic(cert);
    // Without apns-topic, APNs takes the certificate's subject as the topic.
    const requested = topic ?? bundle;
    if (requested === undefined || bundle === undefined) return { reason: 'MissingTopic' };
    if (requested.replace(/\.(voip|complication)$/, '') !== bundle) return { reason: 'TopicDisallowed' };
    return { appId: this.certificateApps.get(bundle) ?? bundle };
  }

  private async handle(stream: ServerHttp2Stream, headers: IncomingHttpHeaders): Promise<void> {
    this.sendRequests++;
    const chunks: Buffer[] = [];
    for await (const chunk of stream) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    if (this.latencyMs > 0) await sleep(this.latencyMs);
    // After GOAWAY, streams above its last-stream-id are not processed (the client resends them).
    const lastStreamId = this.goneAway.get(stream.session!);
    if (lastStreamId !== undefined && (stream.id ?? 0) > lastStreamId) return;
    const apnsIdHeader = headers['apns-id'] as string | undefined;
    if (apnsIdHeader !== undefined && !UUID.test(apnsIdHeader)) return this.answer(stream, 400, 'BadMessageId');
    const apnsId = apnsIdHeader ?? randomUUID();
    // Known once the token is read; reply() may answer (a bad request) before that.
    // eslint-disable-next-line prefer-const -- assigned below, after reply() is defined and maybe used
    let connectionFault: ConnectionFault | undefined;
    const reply = (status: number, reason?: string, extra?: Record<string, string>) => {
      const answer = () => this.answer(stream, status, reason, extra, apnsId);
      if (connectionFault?.kind === 'reset') return resetConnection(stream.session!.socket);
      if (connectionFault?.kind === 'late') return void setTimeout(answer, connectionFault.delayMs);
      if (connectionFault?.kind !== 'stall') answer();
    };
    if (headers[':method'] !== 'POST') return reply(405, 'MethodNotAllowed');
    const path = String(headers[':path'] ?? '');
    if (!path.startsWith('/3/device/')) return reply(404, 'BadPath');
    const token = path.slice('/3/device/'.length);
    if (token === '') return reply(400, 'MissingDeviceToken');
    const topic = headers['apns-topic'] as string | undefined;
    const clientCertificate = this.clientCertificates.get(stream.session!);
    const auth = clientCertificate
      ? this.verifyCertificate(clientCertificate, topic)
      : this.verifyToken(stream.session!, headers.authorization as string | undefined, topic);
    const record = (answer: string) =>
      this.record({
        client: headers['user-agent'],
        appId: auth.appId ?? '',
        token,
        request: { ...headers },
        answer,
        collapseId: headers['apns-collapse-id'] as string | undefined,
        ...payloadFields(body),
      });
    if (auth.reason) {
      record(auth.reason);
      return reply(APNS_REASON_STATUS[auth.reason]!, auth.reason);
    }
    connectionFault = this.takeConnectionFault([token]);
    if (connectionFault && connectionFault.kind !== 'late' && !connectionFault.after) {
      // Before processing: reset the connection, or leave the stream unanswered.
      if (connectionFault.kind === 'reset') resetConnection(stream.session!.socket);
      return;
    }
    const fault = this.takeFault([token]);
    if (fault?.kind === 'goaway') return this.goaway(stream);
    const refused =
      this.validate(token, headers, body) ??
      this.faultReason(fault, clientCertificate !== undefined) ??
      (this.deadTokens.has(token) ? 'Unregistered' : undefined);
    record(refused ?? 'accepted');
    if (refused) {
      const retryAfter = fault && 'retryAfterS' in fault && fault.retryAfterS !== undefined ? { 'retry-after': String(fault.retryAfterS) } : undefined;
      return reply(APNS_REASON_STATUS[refused] ?? 400, refused, retryAfter);
    }
    reply(200);
  }

  private validate(token: string, headers: IncomingHttpHeaders, body: string): string | undefined {
    if (!/^[0-9a-fA-F]{64}$/.test(token)) return 'BadDeviceToken';
    const pushType = (headers['apns-push-type'] as string | undefined) ?? 'alert';
    if (!PUSH_TYPES.has(pushType)) return 'InvalidPushType';
    const priority = headers['apns-priority'] as string | undefined;
    if (priority !== undefined && !['1', '5', '10'].includes(priority)) return 'BadPriority';
    const expiration = headers['apns-expiration'] as string | undefined;
    if (expiration !== undefined && !/^\d+$/.test(expiration)) return 'BadExpirationDate';
    const collapse = headers['apns-collapse-id'] as string | undefined;
    if (collapse !== undefined && Buffer.byteLength(collapse) > 64) return 'BadCollapseId';
    if (body.length === 0) return 'PayloadEmpty';
    if (Buffer.byteLength(body) > (pushType === 'voip' ? 5120 : 4096)) return 'PayloadTooLarge';
    return undefined;
  }

  /** The reason a scripted fault answers with; an expired credential of a certificate-based connection is its certificate. */
  private faultReason(fault: Fault | undefined, certificateBased: boolean): string | undefined {
    switch (fault?.kind) {
      case undefined:
        return undefined;
      case 'dead-token':
        return 'Unregistered';
      case 'rate-limit':
      case 'quota':
        return 'TooManyRequests';
      case 'server-error':
        return 'ServiceUnavailable';
      case 'expired-auth':
        return certificateBased ? 'BadCertificate' : 'ExpiredProviderToken';
      case 'code':
        return fault.code;
      case 'goaway':
        return undefined;
    }
  }

  /**
   * GOAWAY naming the previous stream as the last processed: this stream and any later one on the
   * connection are left unanswered (refused) and the connection is torn down shortly after.
   * (Resetting the stream right after the GOAWAY frame crashes node 20's http2 natively.)
   */
  private goaway(stream: ServerHttp2Stream): void {
    const session = stream.session!;
    const lastStreamId = Math.max(0, (stream.id ?? 2) - 2);
    this.goaways++;
    this.goneAway.set(session, lastStreamId);
    session.goaway(constants.NGHTTP2_NO_ERROR, lastStreamId);
    setTimeout(() => session.destroy(), 50);
  }
}

function payloadFields(body: string): { title?: string; body?: string; data?: unknown } {
  try {
    const p = JSON.parse(body) as { aps?: { alert?: { title?: string; body?: string } } } & Record<string, unknown>;
    const { aps, ...data } = p;
    return { title: aps?.alert?.title, body: aps?.alert?.body, data };
  } catch {
    return {};
  }
}

/** An ES256 provider token signed by one of `keys`, issued by its team; undefined when it is not. */
function verifyProviderToken(jwt: string, keys: ReadonlyMap<string, ApnsKey>): VerifiedToken | undefined {
  const parts = jwt.split('.');
  if (parts.length !== 3) return undefined;
  let header: { alg?: string; kid?: string };
  let claims: { iss?: string; iat?: number };
  try {
    header = JSON.parse(Buffer.from(parts[0]!, 'base64url').toString());
    claims = JSON.parse(Buffer.from(parts[1]!, 'base64url').toString());
  } catch {
    return undefined;
  }
  const key = header.kid === undefined ? undefined : keys.get(header.kid);
  if (header.alg !== 'ES256' || !key) return undefined;
  // Apple takes the JOSE form: raw r||s (64 bytes), not DER.
  const signature = Buffer.from(parts[2]!, 'base64url');
  const ok = signature.length === 64 && verify('sha256', Buffer.from(`${parts[0]}.${parts[1]}`), { key: key.publicKey, dsaEncoding: 'ieee-p1363' }, signature);
  if (!ok || claims.iss !== key.teamId || typeof claims.iat !== 'number') return undefined;
  return { key, iat: claims.iat };
}

/**
 * One team key shared by the apps registered together, as in an Apple developer account with several
 * bundle ids (apps registered later get a key of their own, the team's keys before it stay valid);
 * tokens of 64 hex digits.
 */
export const APNS_EMULATOR: EmulatorSetup<ApnsEmulator> = {
  create: () => new ApnsEmulator(),
  register(apns, appIds) {
    const key = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const teamId = 'TEAM4PUSH1';
    const keyId = `KEY4PUSH${String(apns.registeredKeys + 1).padStart(2, '0')}`;
    apns.registerKey({ teamId, keyId, publicKey: key.publicKey, topics: Object.fromEntries(appIds.map((a) => [`com.example.${a}`, a])) });
    const privateKey = pemOf(key.privateKey, 'pkcs8');
    return appIds.map((appId) => ({ teamId, keyId, privateKey, topic: `com.example.${appId}`, environment: 'sandbox' }));
  },
  token: (seed) => Buffer.from(seed).toString('hex').padEnd(64, '0').slice(0, 64),
};
