import { parseAppsConfig, type AppsConfig } from '../sinks/vendors/apps-config.ts';
import type { ReceiptVendor } from '../sinks/vendors/modules.ts';
import { VENDORS, type Vendor } from '../processors/fan-out/vendor-port.ts';
import { APNS_EMULATOR, ApnsEmulator } from './apns.ts';
import { EmulatorClock, restartEmulator, type EmulatorCore, type EmulatorSetup, type RestartableEmulator, type RestartHooks } from './common.ts';
import { FCM_EMULATOR, FcmEmulator } from './fcm.ts';
import { HMS_EMULATOR, HmsEmulator, type HmsReceiptSigning } from './hms.ts';
import { OPPO_EMULATOR, OppoEmulator } from './oppo.ts';
import { testTls } from './tls.ts';
import { VIVO_EMULATOR, VivoEmulator } from './vivo.ts';
import { XIAOMI_EMULATOR, XiaomiEmulator } from './xiaomi.ts';

export type { ConnectionFault, Fault, ReceivedPush } from './common.ts';
export { ApnsEmulator, FcmEmulator, HmsEmulator, OppoEmulator, VivoEmulator, XiaomiEmulator };

/** Every vendor's emulator, one per name in VENDORS (a vendor without one fails the typecheck). */
const EMULATORS = {
  apns: APNS_EMULATOR,
  fcm: FCM_EMULATOR,
  hms: HMS_EMULATOR,
  xiaomi: XIAOMI_EMULATOR,
  oppo: OPPO_EMULATOR,
  vivo: VIVO_EMULATOR,
} as const satisfies { readonly [V in Vendor]: EmulatorSetup<EmulatorCore & RestartableEmulator> };

const SETUPS: { readonly [V in Vendor]: EmulatorSetup<EmulatorCore & RestartableEmulator> } = EMULATORS;

/** One app's entry of an apps file, as JSON (docs/vendors.md). */
export interface RawAppEntry {
  appId: string;
  vendors: Record<string, Record<string, unknown>>;
}

/** An apps file as JSON: the emulators' CA and the apps. */
export interface RawAppsFile {
  ca: string;
  apps: RawAppEntry[];
}

/** The running emulator of each vendor. */
export type Emulators = { readonly [V in Vendor]: ReturnType<(typeof EMULATORS)[V]['create']> };

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
  readonly receiptUrls?: Partial<Record<ReceiptVendor, string>>;
  /** Connections per app and vendor in the generated apps config. Default: the apps config's per-vendor default. */
  readonly connections?: number;
  /** Per (vendor, app) rate limit in the generated apps config. Default 5000/s. */
  readonly ratePerSecond?: number;
  /**
   * Apps (of `apps`) whose APNs entry authenticates with a provider certificate the APNs emulator
   * issued (`certificate` and `key`, PEM) instead of the team's token key. Default none.
   */
  readonly apnsCertificateApps?: readonly string[];
}

export interface StartedEmulators extends Emulators {
  /** PEM of the throwaway CA every emulator's certificate chains to. */
  readonly ca: string;
  /** The vendors' shared clock: advance it to cross credential lifetimes; give adapters `() => clock.now()`. */
  readonly clock: EmulatorClock;
  readonly baseUrls: Readonly<Record<Vendor, string>>;
  /** Ready-to-use apps configuration (credentials inline, base URLs and CA pointing here). */
  readonly appsConfig: AppsConfig;
  /** The same as JSON-serialisable raw config (to write a PUSH_APPS_CONFIG file for workers). */
  readonly rawAppsConfig: RawAppsFile;
  /** Key and username the HMS receipts are signed with (X-HUAWEI-CALLBACK-ID). */
  readonly hmsReceiptSigning: HmsReceiptSigning;
  /** Device tokens in each vendor's format (APNs wants 64 hex digits). */
  token(vendor: Vendor, seed: string): string;
  all(): EmulatorCore[];
  /** Clears faults, dead tokens and recordings of every emulator. */
  reset(): void;
  /** Every emulator forgets its recordings made in [fromMs, untilMs) (EmulatorCore.forget); returns how many in all. */
  forget(fromMs: number, untilMs: number): number;
  /**
   * Registers more apps with every emulator (after start, as apps added to a running fleet) and
   * returns their entries of the apps file, as `rawAppsConfig.apps` holds them. `receiptUrls` as in
   * startEmulators; `apnsCertificateApps` among them use APNs certificate auth.
   */
  addApps(
    appIds: readonly string[],
    options?: { receiptUrls?: Partial<Record<ReceiptVendor, string>>; apnsCertificateApps?: readonly string[] },
  ): Promise<RawAppEntry[]>;
  /** Restarts one vendor's server: connections dropped, port refusing for `downMs`, then back on the same port. */
  restart(vendor: Vendor, downMs: number, hooks?: RestartHooks): Promise<void>;
  close(): Promise<void>;
}

/**
 * Starts every vendor's emulator over TLS with a fresh test CA and registers generated
 * credentials for every app. Used by tests, the demo and the benchmark.
 */
export async function startEmulators(options: StartEmulatorsOptions = {}): Promise<StartedEmulators> {
  const tls = await testTls();
  const appIds = options.apps ?? ['app-1'];
  const emulators = Object.fromEntries(VENDORS.map((v) => [v, EMULATORS[v].create()])) as Emulators;
  const all = (): Array<EmulatorCore & RestartableEmulator> => VENDORS.map((v) => emulators[v]);
  const clock = new EmulatorClock();
  for (const e of all()) e.clock = clock;
  const baseUrls = {} as Record<Vendor, string>;
  for (const v of VENDORS) baseUrls[v] = await emulators[v].start(tls, options.ports?.[v] ?? 0);

  const common = {
    ...(options.connections === undefined ? {} : { connections: options.connections }),
    ratePerSecond: options.ratePerSecond ?? 5000,
    concurrency: 256,
    timeoutMs: 10_000,
  };
  /** Registers `ids` with every emulator; their entries of the apps file. */
  const register = async (ids: readonly string[], receiptUrls: Partial<Record<Vendor, string>>, certificateApps: readonly string[]): Promise<RawAppEntry[]> => {
    const entries = VENDORS.map((v) => [v, SETUPS[v].register(emulators[v], ids, receiptUrls[v])] as const);
    return Promise.all(
      ids.map(async (appId, i) => {
        const vendors: Record<string, Record<string, unknown>> = Object.fromEntries(
          entries.map(([v, byApp]) => [v, { ...common, baseUrl: baseUrls[v], ...byApp[i] }]),
        );
        if (certificateApps.includes(appId)) {
          const { cert, key } = await emulators.apns.issueCertificate(appId);
          const { teamId: _t, keyId: _k, privateKey: _p, ...rest } = vendors.apns!;
          vendors.apns = { ...rest, certificate: cert, key };
        }
        return { appId, vendors };
      }),
    );
  };
  const apps = await register(appIds, options.receiptUrls ?? {}, options.apnsCertificateApps ?? []);
  const rawAppsConfig: RawAppsFile = { ca: tls.ca, apps };
  return {
    ...emulators,
    ca: tls.ca,
    clock,
    baseUrls,
    rawAppsConfig,
    appsConfig: parseAppsConfig(rawAppsConfig),
    hmsReceiptSigning: emulators.hms.receiptSigning,
    token: (vendor, seed) => SETUPS[vendor].token?.(seed) ?? `${vendor}-${seed}`,
    all,
    addApps: (ids, o = {}) => register(ids, o.receiptUrls ?? {}, o.apnsCertificateApps ?? []),
    reset: () => all().forEach((e) => e.reset()),
    forget: (fromMs, untilMs) => all().reduce((n, e) => n + e.forget(fromMs, untilMs), 0),
    restart: (vendor, downMs, hooks) => restartEmulator(emulators[vendor], tls, downMs, hooks),
    close: async () => {
      await Promise.all(all().map((e) => e.close()));
    },
  };
}
