import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { ConfigError } from '../../common/errors.ts';
import type { Vendor } from '../../processors/fan-out/vendor-port.ts';

/**
 * The multi-app vendor configuration: one JSON file listing every app this process pushes for,
 * with per-vendor credentials (inline, or `…File` paths relative to the config file), connection
 * counts, rate limits and overridable base URLs. See config/apps.example.json.
 * Validated once at start; every error names the field, e.g. `apps[1].vendors.apns.keyId`.
 */
export interface VendorCommon {
  /** Override of the vendor's production base URL (emulators, proxies). */
  readonly baseUrl?: string;
  /**
   * Connections per origin. APNs: HTTP/2 connections in the pool (each multiplexes many
   * streams), default 2. The HTTP/1.1 vendors answer one request per connection at a time, so
   * their default is 16. Range 1–64.
   */
  readonly connections: number;
  /** Most submissions per second for this (vendor, app). Default 3 000, range 1–100 000. */
  readonly ratePerSecond: number;
  /** Most submit calls in flight at once for this (vendor, app). Default 64, range 1–10 000. */
  readonly concurrency: number;
  /** Time allowed for one vendor answer, ms. Default 10 000. */
  readonly timeoutMs: number;
}

export interface ApnsAppConfig extends VendorCommon {
  readonly teamId: string;
  readonly keyId: string;
  /** PKCS#8 PEM of the .p8 key (from `privateKey` or `privateKeyFile`). */
  readonly privateKey: string;
  /** The app's bundle id, sent as apns-topic. */
  readonly topic: string;
  /** `production` (api.push.apple.com) or `sandbox` (api.sandbox.push.apple.com). Default production. */
  readonly environment: 'production' | 'sandbox';
  /** apns-push-type. Default `alert`. */
  readonly pushType: 'alert' | 'background' | 'voip';
  /** Regenerate the provider token after this many minutes (20–60). Default 50. */
  readonly tokenRefreshMinutes: number;
}

export interface ServiceAccount {
  readonly project_id: string;
  readonly private_key_id?: string;
  readonly private_key: string;
  readonly client_email: string;
  readonly token_uri: string;
}

export interface FcmAppConfig extends VendorCommon {
  readonly serviceAccount: ServiceAccount;
  /** Override of the OAuth2 token endpoint (else the key file's token_uri). */
  readonly tokenUrl?: string;
}

export interface HmsAppConfig extends VendorCommon {
  readonly clientId: string;
  readonly clientSecret: string;
  /** OAuth endpoint. Default https://oauth-login.cloud.huawei.com/oauth2/v3/token. */
  readonly authUrl?: string;
  /** android.category; IM needs Huawei's self-classification entitlement. Default IM. */
  readonly category: string;
  /** android.receipt_id selecting a receipt URL configured in AppGallery Connect. */
  readonly receiptId?: string;
  /** Launcher activity for badge.class. */
  readonly badgeClass?: string;
}

export interface XiaomiAppConfig extends VendorCommon {
  readonly appSecret: string;
  readonly packageName: string;
  /** extra.channel_id of the private (IM) channel. */
  readonly channelId: string;
  /** extra.channel_id of the public (marketing) channel, for campaigns; without it they go on `channelId`. */
  readonly marketingChannelId?: string;
  /** extra.callback: where Xiaomi posts receipts (may carry a shared secret in its query). */
  readonly receiptUrl?: string;
}

export interface OppoAppConfig extends VendorCommon {
  readonly appKey: string;
  readonly masterSecret: string;
  /** channel_id of the communication channel (Android 9+). */
  readonly channelId: string;
  /** channel_id of the content & marketing channel, for campaigns; without it they go on `channelId`. */
  readonly marketingChannelId?: string;
  /** category of the communication class. Default IM. */
  readonly category: string;
  /** call_back_url for receipts (may carry a shared secret in its query). */
  readonly receiptUrl?: string;
}

export interface VivoAppConfig extends VendorCommon {
  readonly appId: string;
  readonly appKey: string;
  readonly appSecret: string;
  /** Secondary category of the system class (classification 1). Default IM. */
  readonly category: string;
  /** The receipt id registered in the vivo console (sent as extra.callback). */
  readonly receiptId?: string;
}

export interface VendorConfigs {
  readonly apns?: ApnsAppConfig;
  readonly fcm?: FcmAppConfig;
  readonly hms?: HmsAppConfig;
  readonly xiaomi?: XiaomiAppConfig;
  readonly oppo?: OppoAppConfig;
  readonly vivo?: VivoAppConfig;
}

export interface AppConfig {
  readonly appId: string;
  readonly vendors: VendorConfigs;
}

export interface AppsConfig {
  /** PEM of extra CAs trusted by every vendor client (e.g. the emulators' test CA). */
  readonly ca?: string;
  readonly apps: readonly AppConfig[];
}

type Raw = Record<string, unknown>;

class Reader {
  constructor(private readonly baseDir: string) {}

  obj(v: unknown, key: string): Raw {
    if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new ConfigError(key, 'expected an object');
    return v as Raw;
  }

  str(o: Raw, field: string, key: string, fallback?: string): string {
    const v = o[field];
    if (v === undefined && fallback !== undefined) return fallback;
    if (typeof v !== 'string' || v.trim() === '') throw new ConfigError(`${key}.${field}`, 'required non-empty string');
    return v;
  }

  optStr(o: Raw, field: string, key: string): string | undefined {
    return o[field] === undefined ? undefined : this.str(o, field, key);
  }

  int(o: Raw, field: string, key: string, fallback: number, min: number, max: number): number {
    const v = o[field] ?? fallback;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
      throw new ConfigError(`${key}.${field}`, `must be an integer within [${min}, ${max}], got ${JSON.stringify(v)}`);
    }
    return v;
  }

  oneOf<T extends string>(o: Raw, field: string, key: string, fallback: T, allowed: readonly T[]): T {
    const v = o[field] ?? fallback;
    if (!allowed.includes(v as T)) throw new ConfigError(`${key}.${field}`, `expected one of ${allowed.join(' | ')}, got ${JSON.stringify(v)}`);
    return v as T;
  }

  /** A secret given inline as `field` or as a file path in `fieldFile`. */
  secret(o: Raw, field: string, key: string): string {
    if (o[field] !== undefined) return this.str(o, field, key);
    const file = o[`${field}File`];
    if (typeof file !== 'string' || file === '') throw new ConfigError(`${key}.${field}`, `required (inline, or a path in ${field}File)`);
    try {
      return readFileSync(resolve(this.baseDir, file), 'utf8');
    } catch (error) {
      throw new ConfigError(`${key}.${field}File`, `cannot read ${file}: ${(error as Error).message}`);
    }
  }

  url(o: Raw, field: string, key: string): string | undefined {
    const v = this.optStr(o, field, key);
    if (v === undefined) return undefined;
    try {
      const u = new URL(v);
      if (u.protocol !== 'https:' && u.protocol !== 'http:') throw new Error('not http(s)');
    } catch {
      throw new ConfigError(`${key}.${field}`, `expected an http(s) URL, got ${JSON.stringify(v)}`);
    }
    return v;
  }

  common(o: Raw, key: string, defaultConnections = HTTP1_CONNECTIONS): VendorCommon {
    const baseUrl = this.url(o, 'baseUrl', key);
    return {
      ...(baseUrl === undefined ? {} : { baseUrl }),
      connections: this.int(o, 'connections', key, defaultConnections, 1, 64),
      ratePerSecond: this.int(o, 'ratePerSecond', key, 3000, 1, 100_000),
      concurrency: this.int(o, 'concurrency', key, 64, 1, 10_000),
      timeoutMs: this.int(o, 'timeoutMs', key, 10_000, 100, 120_000),
    };
  }
}

/** Default connections per origin: APNs multiplexes streams over HTTP/2, the others use HTTP/1.1. */
const HTTP2_CONNECTIONS = 2;
const HTTP1_CONNECTIONS = 64;

const drop = <T extends object>(o: T): T => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;

const VENDOR_PARSERS: { [V in Vendor]: (r: Reader, o: Raw, key: string) => NonNullable<VendorConfigs[V]> } = {
  apns: (r, o, key) => ({
    ...r.common(o, key, HTTP2_CONNECTIONS),
    teamId: r.str(o, 'teamId', key),
    keyId: r.str(o, 'keyId', key),
    privateKey: r.secret(o, 'privateKey', key),
    topic: r.str(o, 'topic', key),
    environment: r.oneOf(o, 'environment', key, 'production', ['production', 'sandbox'] as const),
    pushType: r.oneOf(o, 'pushType', key, 'alert', ['alert', 'background', 'voip'] as const),
    tokenRefreshMinutes: r.int(o, 'tokenRefreshMinutes', key, 50, 20, 60),
  }),
  fcm: (r, o, key) => {
    const raw =
      o.serviceAccount !== undefined
        ? o.serviceAccount
        : o.serviceAccountFile !== undefined
          ? jsonSecret(r.secret(o, 'serviceAccount', key), `${key}.serviceAccountFile`)
          : undefined;
    const sa = r.obj(raw, `${key}.serviceAccount`);
    const saKey = `${key}.serviceAccount`;
    return drop({
      ...r.common(o, key),
      serviceAccount: drop({
        project_id: r.str(sa, 'project_id', saKey),
        private_key_id: r.optStr(sa, 'private_key_id', saKey),
        private_key: r.str(sa, 'private_key', saKey),
        client_email: r.str(sa, 'client_email', saKey),
        token_uri: r.str(sa, 'token_uri', saKey, 'https://oauth2.googleapis.com/token'),
      }),
      tokenUrl: r.url(o, 'tokenUrl', key),
    });
  },
  hms: (r, o, key) =>
    drop({
      ...r.common(o, key),
      clientId: r.str(o, 'clientId', key),
      clientSecret: r.secret(o, 'clientSecret', key),
      authUrl: r.url(o, 'authUrl', key),
      category: r.str(o, 'category', key, 'IM'),
      receiptId: r.optStr(o, 'receiptId', key),
      badgeClass: r.optStr(o, 'badgeClass', key),
    }),
  xiaomi: (r, o, key) =>
    drop({
      ...r.common(o, key),
      appSecret: r.secret(o, 'appSecret', key),
      packageName: r.str(o, 'packageName', key),
      channelId: r.str(o, 'channelId', key),
      marketingChannelId: r.optStr(o, 'marketingChannelId', key),
      receiptUrl: r.url(o, 'receiptUrl', key),
    }),
  oppo: (r, o, key) =>
    drop({
      ...r.common(o, key),
      appKey: r.str(o, 'appKey', key),
      masterSecret: r.secret(o, 'masterSecret', key),
      channelId: r.str(o, 'channelId', key),
      marketingChannelId: r.optStr(o, 'marketingChannelId', key),
      category: r.str(o, 'category', key, 'IM'),
      receiptUrl: r.url(o, 'receiptUrl', key),
    }),
  vivo: (r, o, key) =>
    drop({
      ...r.common(o, key),
      appId: r.str(o, 'appId', key),
      appKey: r.str(o, 'appKey', key),
      appSecret: r.secret(o, 'appSecret', key),
      category: r.str(o, 'category', key, 'IM'),
      receiptId: r.optStr(o, 'receiptId', key),
    }),
};

function jsonSecret(text: string, key: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new ConfigError(key, 'the file is not JSON');
  }
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object') {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}

/** Validates a raw (parsed JSON) apps configuration; `baseDir` resolves `…File` paths. */
export function parseAppsConfig(raw: unknown, baseDir = process.cwd()): AppsConfig {
  const r = new Reader(baseDir);
  const root = r.obj(raw, 'apps-config');
  const ca = root.ca !== undefined || root.caFile !== undefined ? r.secret(root, 'ca', 'apps-config') : undefined;
  if (!Array.isArray(root.apps) || root.apps.length === 0) throw new ConfigError('apps', 'expected a non-empty array of apps');
  const seen = new Set<string>();
  const apps = root.apps.map((rawApp, i): AppConfig => {
    const key = `apps[${i}]`;
    const app = r.obj(rawApp, key);
    const appId = r.str(app, 'appId', key);
    if (seen.has(appId)) throw new ConfigError(`${key}.appId`, `duplicate app id ${JSON.stringify(appId)}`);
    seen.add(appId);
    const vendorsRaw = r.obj(app.vendors, `${key}.vendors`);
    const vendors: Record<string, unknown> = {};
    for (const [name, v] of Object.entries(vendorsRaw)) {
      const parse = (VENDOR_PARSERS as Record<string, (r: Reader, o: Raw, key: string) => unknown>)[name];
      if (!parse) throw new ConfigError(`${key}.vendors.${name}`, `unknown vendor; expected one of ${Object.keys(VENDOR_PARSERS).join(' | ')}`);
      vendors[name] = parse(r, r.obj(v, `${key}.vendors.${name}`), `${key}.vendors.${name}`);
    }
    if (Object.keys(vendors).length === 0) throw new ConfigError(`${key}.vendors`, 'configure at least one vendor');
    return { appId, vendors: vendors as VendorConfigs };
  });
  return deepFreeze(ca === undefined ? { apps } : { ca, apps });
}

/** Reads and validates the apps file (PUSH_APPS_CONFIG in the workers). */
export function loadAppsConfig(path: string): AppsConfig {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new ConfigError('PUSH_APPS_CONFIG', `cannot read ${path}: ${(error as Error).message}`);
  }
  return parseAppsConfig(jsonSecret(text, 'PUSH_APPS_CONFIG'), dirname(resolve(path)));
}
