import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { ConfigError } from '../../common/errors.ts';
import { VENDORS, type Vendor } from '../../processors/fan-out/vendor-port.ts';
import { vendorModuleOf, type VendorConfigOf } from './modules.ts';
import { ConfigReader, jsonSecret, withoutUndefined } from './vendor-config.ts';

/**
 * The multi-app vendor configuration: one JSON file listing every app this process pushes for,
 * with per-vendor credentials (inline, or `…File` paths relative to the config file), connection
 * counts, rate limits and overridable base URLs. See config/apps.example.json. Each vendor's entry is
 * read by its module (modules.ts, `parseConfig`).
 * Validated as a whole, at start and at each reload (pipeline/apps-reload.ts); every error names the
 * field, e.g. `apps[1].vendors.apns.keyId`.
 */
export type VendorConfigs = { readonly [V in Vendor]?: VendorConfigOf<V> };

export interface AppConfig {
  readonly appId: string;
  readonly vendors: VendorConfigs;
}

export interface AppsConfig {
  /** PEM of extra CAs trusted by every vendor client (e.g. the emulators' test CA). */
  readonly ca?: string;
  readonly apps: readonly AppConfig[];
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
  const r = new ConfigReader(baseDir);
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
      const m = vendorModuleOf(name);
      if (!m) throw new ConfigError(`${key}.vendors.${name}`, `unknown vendor; expected one of ${VENDORS.join(' | ')}`);
      vendors[name] = withoutUndefined(m.parseConfig(r, r.obj(v, `${key}.vendors.${name}`), `${key}.vendors.${name}`));
    }
    if (Object.keys(vendors).length === 0) throw new ConfigError(`${key}.vendors`, 'configure at least one vendor');
    return { appId, vendors: vendors as VendorConfigs };
  });
  return deepFreeze(ca === undefined ? { apps } : { ca, apps });
}

/** Reads and validates the apps file (PUSH_APPS_CONFIG in the workers). */
export function loadAppsConfig(path: string): AppsConfig {
  return readAppsFile(path).config;
}

/**
 * The apps file's version: the first 12 hex digits of the sha256 of its content, as
 * `sha256sum apps.json` prints it (push_apps_config_info, `pushctl status`).
 */
export const appsFileVersion = (text: string): string => createHash('sha256').update(text).digest('hex').slice(0, 12);

/** Reads and validates the apps file, with the version of the very text it validated. */
export function readAppsFile(path: string): { config: AppsConfig; version: string } {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new ConfigError('PUSH_APPS_CONFIG', `cannot read ${path}: ${(error as Error).message}`);
  }
  return { config: parseAppsConfig(jsonSecret(text, 'PUSH_APPS_CONFIG'), dirname(resolve(path))), version: appsFileVersion(text) };
}
