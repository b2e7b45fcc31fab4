import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { parseAppsConfig, type AppsConfig } from '../sinks/vendors/apps-config.ts';
import type { Vendor } from '../processors/fan-out/vendor-port.ts';
import { ApnsEmulator } from './apns.ts';
import { EmulatorClock, restartEmulator, type EmulatorCore, type RestartHooks } from './common.ts';
import { FcmEmulator } from './fcm.ts';
import { HmsEmulator, type HmsReceiptSigning } from './hms.ts';
import { OppoEmulator } from './oppo.ts';
import { testTls } from './tls.ts';
import { VivoEmulator } from './vivo.ts';
import { XiaomiEmulator } from './xiaomi.ts';

export type { ConnectionFault, Fault, ReceivedPush } from './common.ts';
export { ApnsEmulator, FcmEmulator, HmsEmulator, OppoEmulator, VivoEmulator, XiaomiEmulator };

export interface StartEmulatorsOptions {
  /** App ids to register with every vendor. Default `['app-1']`. */
  readonly apps?: readonly string[];
  /** Fixed ports per vendor (0 or absent = any free port). */
  readonly ports?: Partial<Record<Vendor, number>>;
  /**
   * Receipt receiver URLs per vendor. HMS and vivo post to the URL "configured in their console"
   * (the emulator's); Xiaomi and OPPO to the per-message callback URL, so theirs go into the apps
   * config as `receiptUrl` and travel with each message. Put a shared secret in the query if the
   * receiver wants one. APNs and FCM have no receipts.
   */
  readonly receiptUrls?: Partial<Record<'hms' | 'xiaomi' | 'oppo' | 'vivo', string>>;
  /** Connections per app and vendor in the generated apps config. Default: the apps config's per-vendor default. */
  readonly connections?: number;
  /** Per (vendor, app) rate limit in the generated apps config. Default 5000/s. */
  readonly ratePerSecond?: number;
}

export interface StartedEmulators {
  /** PEM of the throwaway CA every emulator's certificate chains to. */
  readonly ca: string;
  /** The vendors' shared clock: advance it to cross credential lifetimes; give adapters `() => clock.now()`. */
  readonly clock: EmulatorClock;
  readonly apns: ApnsEmulator;
  readonly fcm: FcmEmulator;
  readonly hms: HmsEmulator;
  readonly xiaomi: XiaomiEmulator;
  readonly oppo: OppoEmulator;
  readonly vivo: VivoEmulator;
  readonly baseUrls: Readonly<Record<Vendor, string>>;
  /** Ready-to-use apps configuration (credentials inline, base URLs and CA pointing here). */
  readonly appsConfig: AppsConfig;
  /** The same as JSON-serialisable raw config (to write a PUSH_APPS_CONFIG file for workers). */
  readonly rawAppsConfig: Record<string, unknown>;
  /** Key and username the HMS receipts are signed with (X-HUAWEI-CALLBACK-ID). */
  readonly hmsReceiptSigning: HmsReceiptSigning;
  /** Device tokens in each vendor's format (APNs wants 64 hex digits). */
  token(vendor: Vendor, seed: string): string;
  all(): EmulatorCore[];
  /** Clears faults, dead tokens and recordings of every emulator. */
  reset(): void;
  /** Every emulator forgets its recordings made in [fromMs, untilMs) (EmulatorCore.forget); returns how many in all. */
  forget(fromMs: number, untilMs: number): number;
  /** Restarts one vendor's server: connections dropped, port refusing for `downMs`, then back on the same port. */
  restart(vendor: Vendor, downMs: number, hooks?: RestartHooks): Promise<void>;
  close(): Promise<void>;
}

const pem = (k: { export(o: { format: 'pem'; type: 'pkcs8' | 'spki' }): string | Buffer }, type: 'pkcs8' | 'spki') =>
  k.export({ format: 'pem', type }).toString();
const secret = () => randomBytes(12).toString('hex');

/**
 * Starts all six vendor emulators over TLS with a fresh test CA and registers generated
 * credentials for every app. Used by tests, the demo and the benchmark.
 */
export async function startEmulators(options: StartEmulatorsOptions = {}): Promise<StartedEmulators> {
  const tls = await testTls();
  const appIds = options.apps ?? ['app-1'];
  const apns = new ApnsEmulator();
  const fcm = new FcmEmulator();
  const hms = new HmsEmulator();
  const xiaomi = new XiaomiEmulator();
  const oppo = new OppoEmulator();
  const vivo = new VivoEmulator();
  const clock = new EmulatorClock();
  for (const e of [apns, fcm, hms, xiaomi, oppo, vivo]) e.clock = clock;
  const port = (v: Vendor) => options.ports?.[v] ?? 0;
  const baseUrls: Record<Vendor, string> = {
    apns: await apns.start(tls, port('apns')),
    fcm: await fcm.start(tls, port('fcm')),
    hms: await hms.start(tls, port('hms')),
    xiaomi: await xiaomi.start(tls, port('xiaomi')),
    oppo: await oppo.start(tls, port('oppo')),
    vivo: await vivo.start(tls, port('vivo')),
  };
  hms.receipts.url = options.receiptUrls?.hms;
  vivo.receipts.url = options.receiptUrls?.vivo;

  const common = {
    ...(options.connections === undefined ? {} : { connections: options.connections }),
    ratePerSecond: options.ratePerSecond ?? 5000,
    concurrency: 256,
    timeoutMs: 10_000,
  };
  // One team key shared by every app, as in an Apple developer account with several bundle ids.
  const apnsKey = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const teamId = 'TEAM4PUSH1';
  const keyId = 'KEY4PUSH01';
  apns.registerKey({ teamId, keyId, publicKey: apnsKey.publicKey, topics: Object.fromEntries(appIds.map((a) => [`com.example.${a}`, a])) });

  const apps = appIds.map((appId, i) => {
    const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const clientEmail = `push@${appId}.iam.gserviceaccount.com`;
    fcm.registerServiceAccount({ clientEmail, projectId: `project-${appId}`, appId, publicKey: rsa.publicKey });
    const hmsApp = { clientId: String(100_000_000 + i), clientSecret: secret(), appId };
    hms.registerApp(hmsApp);
    const xiaomiApp = { appSecret: secret(), packageName: `com.example.${appId}`, channelIds: ['im_private', 'marketing'], appId };
    xiaomi.registerApp(xiaomiApp);
    const oppoApp = { appKey: secret(), masterSecret: secret(), channelIds: ['im_message', 'marketing'], appId };
    oppo.registerApp(oppoApp);
    const vivoApp = { appId: String(10_000 + i), appKey: secret(), appSecret: secret() };
    vivo.registerApp(vivoApp);
    return {
      appId,
      vendors: {
        apns: {
          ...common,
          teamId,
          keyId,
          privateKey: pem(apnsKey.privateKey, 'pkcs8'),
          topic: `com.example.${appId}`,
          environment: 'sandbox',
          baseUrl: baseUrls.apns,
        },
        fcm: {
          ...common,
          baseUrl: baseUrls.fcm,
          serviceAccount: {
            type: 'service_account',
            project_id: `project-${appId}`,
            private_key_id: secret(),
            private_key: pem(rsa.privateKey, 'pkcs8'),
            client_email: clientEmail,
            token_uri: fcm.tokenUrl,
          },
        },
        hms: { ...common, baseUrl: baseUrls.hms, authUrl: hms.authUrl, clientId: hmsApp.clientId, clientSecret: hmsApp.clientSecret, receiptId: 'RCP-1' },
        xiaomi: {
          ...common,
          baseUrl: baseUrls.xiaomi,
          appSecret: xiaomiApp.appSecret,
          packageName: xiaomiApp.packageName,
          channelId: 'im_private',
          marketingChannelId: 'marketing',
          ...(options.receiptUrls?.xiaomi ? { receiptUrl: options.receiptUrls.xiaomi } : {}),
        },
        oppo: {
          ...common,
          baseUrl: baseUrls.oppo,
          appKey: oppoApp.appKey,
          masterSecret: oppoApp.masterSecret,
          channelId: 'im_message',
          marketingChannelId: 'marketing',
          ...(options.receiptUrls?.oppo ? { receiptUrl: options.receiptUrls.oppo } : {}),
        },
        vivo: { ...common, baseUrl: baseUrls.vivo, appId: vivoApp.appId, appKey: vivoApp.appKey, appSecret: vivoApp.appSecret, receiptId: 'receipt-1' },
      },
    };
  });
  const rawAppsConfig = { ca: tls.ca, apps };
  const all = () => [apns, fcm, hms, xiaomi, oppo, vivo];
  return {
    ca: tls.ca,
    clock,
    apns,
    fcm,
    hms,
    xiaomi,
    oppo,
    vivo,
    baseUrls,
    rawAppsConfig,
    appsConfig: parseAppsConfig(rawAppsConfig),
    hmsReceiptSigning: hms.receiptSigning,
    token: (vendor, seed) => (vendor === 'apns' ? Buffer.from(seed).toString('hex').padEnd(64, '0').slice(0, 64) : `${vendor}-${seed}`),
    all,
    reset: () => all().forEach((e) => e.reset()),
    forget: (fromMs, untilMs) => all().reduce((n, e) => n + e.forget(fromMs, untilMs), 0),
    restart: (vendor, downMs, hooks) => restartEmulator({ apns, fcm, hms, xiaomi, oppo, vivo }[vendor], tls, downMs, hooks),
    close: async () => {
      await Promise.all([apns.close(), fcm.close(), hms.close(), xiaomi.close(), oppo.close(), vivo.close()]);
    },
  };
}
