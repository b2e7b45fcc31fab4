import { readFileSync } from 'node:fs';
import { checkKey, readKey, type Env } from '../common/config.ts';
import { CONFIG_KEYS } from '../common/config-keys.ts';
import { ConfigError } from '../common/errors.ts';
import { compileIngestRules, ingestOptionsFromEnv, type IngestOptions, type IngestRules } from '../processors/model/ingest.ts';
import { RECEIPT_VENDORS, vendorReceipts, type ReceiptSecretsOf, type ReceiptVendor } from '../sinks/vendors/modules.ts';

/** How one app's callbacks are authenticated, per vendor: its module's receipt credentials (sinks/vendors/<vendor>/receipts.ts). */
export type ReceiptAppVendors = { readonly [V in ReceiptVendor]?: ReceiptSecretsOf<V> };

export interface ReceiptAppConfig {
  readonly appId: string;
  readonly vendors: ReceiptAppVendors;
}

export interface ReceiptReceiverConfig {
  /** PUSH_RECEIPTS_HOST. Default 127.0.0.1. */
  readonly host: string;
  /** PUSH_RECEIPTS_PORT. Default 18090; 0 picks a free port. */
  readonly port: number;
  /** PUSH_RECEIPTS_MAX_BODY_BYTES: larger callbacks get 413. Default 1 MiB, range 1 KiB–16 MiB. */
  readonly maxBodyBytes: number;
  /** PUSH_RECEIPTS_HMS_MAX_SKEW_MS: how far an HMS signature timestamp may be from now. Default 300 000. */
  readonly hmsMaxSkewMs: number;
  /**
   * PUSH_RECEIPTS_HEADERS_TIMEOUT_MS: time from a connection's opening (or its previous answer) to
   * the end of the next request's headers; a slower client is disconnected. Default 5 000, range 100–60 000.
   */
  readonly headersTimeoutMs: number;
  /**
   * PUSH_RECEIPTS_BODY_TIMEOUT_MS: time to read an authenticated request's body once its headers
   * are in; a slower body gets 408 and the connection is closed. Default 10 000, range 100–120 000.
   */
  readonly bodyTimeoutMs: number;
  /** PUSH_RECEIPTS_MAX_CONNECTIONS: open connections; further ones are closed at once. Default 1 024, range 1–100 000. */
  readonly maxConnections: number;
  /** PUSH_RECEIPTS_MAX_CONNECTIONS_PER_CLIENT: open connections per remote address. Default 64, range 1–100 000. */
  readonly maxConnectionsPerClient: number;
  /**
   * PUSH_RECEIPTS_CLIENT_REQUESTS_PER_SECOND: requests per remote address and second (a token bucket
   * holding one second's worth); more get 429 before anything else is looked at. Default 1 000,
   * range 1–1 000 000.
   */
  readonly clientRequestsPerSecond: number;
  /**
   * PUSH_INGEST_MAX_PAST_SKEW_MS, PUSH_INGEST_MAX_FUTURE_SKEW_MS: how far a receipt's own time may
   * be from now; a callback holding one further off gets 400 (processors/model/ingest.ts).
   */
  readonly ingest: IngestRules;
  readonly apps: ReadonlyMap<string, ReceiptAppConfig>;
}

/**
 * The apps file (PUSH_RECEIPTS_CONFIG, JSON), each receipt vendor's entry read by its module's
 * receipt credentials (`parseSecrets`):
 * ```json
 * { "apps": [ { "appId": "im-main",
 *     "hms":    { "callbackUsername": "…", "callbackKey": "…" },
 *     "xiaomi": { "sharedSecret": "…" }, "oppo": { "sharedSecret": "…" }, "vivo": { "sharedSecret": "…" } } ] }
 * ```
 * A vendor absent from an app's entry has no receipt route for that app (answered as a bad key: 401).
 */
export function parseReceiptApps(raw: unknown, key = 'PUSH_RECEIPTS_CONFIG'): Map<string, ReceiptAppConfig> {
  const root = raw as { apps?: unknown };
  if (!root || typeof root !== 'object' || !Array.isArray(root.apps)) throw new ConfigError(key, 'expected an object with an `apps` array');
  const apps = new Map<string, ReceiptAppConfig>();
  root.apps.forEach((entry: unknown, i: number) => {
    const at = `${key} apps[${i}]`;
    const o = entry as Record<string, unknown>;
    if (!o || typeof o !== 'object') throw new ConfigError(at, 'expected an object');
    const appId = o.appId;
    if (typeof appId !== 'string' || !/^[A-Za-z0-9._-]{1,128}$/.test(appId)) throw new ConfigError(`${at}.appId`, 'expected 1–128 of [A-Za-z0-9._-]');
    if (apps.has(appId)) throw new ConfigError(`${at}.appId`, `duplicate app ${appId}`);
    const vendors: Record<string, unknown> = {};
    for (const vendor of RECEIPT_VENDORS) {
      const v = o[vendor] as Record<string, unknown> | undefined;
      if (v === undefined) continue;
      if (!v || typeof v !== 'object') throw new ConfigError(`${at}.${vendor}`, 'expected an object');
      vendors[vendor] = vendorReceipts(vendor).auth.parseSecrets(v, `${at}.${vendor}`);
    }
    apps.set(appId, Object.freeze({ appId, vendors: Object.freeze(vendors as ReceiptAppVendors) }));
  });
  return apps;
}

export interface ReceiptReceiverOptions {
  host?: string;
  port?: number;
  maxBodyBytes?: number;
  hmsMaxSkewMs?: number;
  headersTimeoutMs?: number;
  bodyTimeoutMs?: number;
  maxConnections?: number;
  maxConnectionsPerClient?: number;
  clientRequestsPerSecond?: number;
  ingest?: IngestOptions;
  apps: ReadonlyMap<string, ReceiptAppConfig> | readonly ReceiptAppConfig[];
}

/** Each limit's key, with its default and allowed range (common/config-keys.ts). */
const LIMITS = {
  port: CONFIG_KEYS.PUSH_RECEIPTS_PORT,
  maxBodyBytes: CONFIG_KEYS.PUSH_RECEIPTS_MAX_BODY_BYTES,
  hmsMaxSkewMs: CONFIG_KEYS.PUSH_RECEIPTS_HMS_MAX_SKEW_MS,
  headersTimeoutMs: CONFIG_KEYS.PUSH_RECEIPTS_HEADERS_TIMEOUT_MS,
  bodyTimeoutMs: CONFIG_KEYS.PUSH_RECEIPTS_BODY_TIMEOUT_MS,
  maxConnections: CONFIG_KEYS.PUSH_RECEIPTS_MAX_CONNECTIONS,
  maxConnectionsPerClient: CONFIG_KEYS.PUSH_RECEIPTS_MAX_CONNECTIONS_PER_CLIENT,
  clientRequestsPerSecond: CONFIG_KEYS.PUSH_RECEIPTS_CLIENT_REQUESTS_PER_SECOND,
} as const;

type Limit = keyof typeof LIMITS;

/** Validates options once into a frozen config. */
export function compileReceiverConfig(options: ReceiptReceiverOptions): ReceiptReceiverConfig {
  const apps = options.apps instanceof Map ? options.apps : new Map((options.apps as readonly ReceiptAppConfig[]).map((a) => [a.appId, a]));
  const limit = (name: Limit) => checkKey(LIMITS[name], options[name]);
  return Object.freeze({
    host: checkKey(CONFIG_KEYS.PUSH_RECEIPTS_HOST, options.host),
    port: limit('port'),
    maxBodyBytes: limit('maxBodyBytes'),
    hmsMaxSkewMs: limit('hmsMaxSkewMs'),
    headersTimeoutMs: limit('headersTimeoutMs'),
    bodyTimeoutMs: limit('bodyTimeoutMs'),
    maxConnections: limit('maxConnections'),
    maxConnectionsPerClient: limit('maxConnectionsPerClient'),
    clientRequestsPerSecond: limit('clientRequestsPerSecond'),
    ingest: compileIngestRules(options.ingest),
    apps,
  });
}

/** Reads the receiver's configuration from `PUSH_RECEIPTS_*` keys; a bad value fails naming its key. */
export function readReceiverConfig(env: Env = process.env): ReceiptReceiverConfig {
  const path = readKey(env, CONFIG_KEYS.PUSH_RECEIPTS_CONFIG);
  if (path === '') throw new ConfigError('PUSH_RECEIPTS_CONFIG', 'expected the path of the receipt apps JSON file');
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new ConfigError('PUSH_RECEIPTS_CONFIG', `cannot read ${path} as JSON (${(error as Error).message})`);
  }
  const limits = Object.fromEntries(Object.entries(LIMITS).map(([name, key]) => [name, readKey(env, key)])) as Record<Limit, number>;
  return compileReceiverConfig({
    host: readKey(env, CONFIG_KEYS.PUSH_RECEIPTS_HOST),
    ...limits,
    ingest: ingestOptionsFromEnv(env),
    apps: parseReceiptApps(raw),
  });
}
