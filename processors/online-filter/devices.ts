/**
 * Which devices of a user can be woken: the online-filter keeps, per uid, the devices that hold a
 * valid vendor token per app (fed by push.tokens). Only a fingerprint of each token is kept here;
 * the tokens themselves live in the policy stage's store.
 */
import type { TokenReport } from '../model/records.ts';
import { tokenHash } from '../model/ids.ts';

/** deviceId → `${appId}` → vendor → tokenHash of its VALID token (processors/model/ids.ts). */
export type UserDevices = Record<string, Record<string, Record<string, string>>>;

/**
 * Whether a stored hash names the token hashed as `hash`. State written before the one token hash
 * holds its first 16 characters; such an entry still matches, and is rewritten at full length when
 * the token is next reported VALID.
 */
function sameToken(stored: string | undefined, hash: string): boolean {
  return stored === hash || (stored?.length === 16 && hash.startsWith(stored));
}

/**
 * Applies a token report. VALID records the token; INVALID removes it only when it names the token
 * currently held (or no token), so a stale invalidation never kills a token reported since.
 * Returns false when the report changes nothing (a token re-reported as it is held), so the stage
 * writes the user's devices only on a change.
 */
export function applyTokenReport(devices: UserDevices, report: TokenReport): boolean {
  const hash = tokenHash(report.token);
  const apps = devices[report.device_id] ?? {};
  let changed = false;
  if (report.state === 'VALID') {
    // A (device, vendor) holds one token: drop it from any other app first.
    for (const [app, vendors] of Object.entries(apps)) {
      if (app !== report.app_id && report.vendor in vendors) {
        delete vendors[report.vendor];
        changed = true;
      }
    }
    const vendors = (apps[report.app_id] ??= {});
    if (vendors[report.vendor] !== hash) {
      vendors[report.vendor] = hash;
      changed = true;
    }
  } else {
    const vendors = apps[report.app_id];
    if (vendors && report.vendor in vendors && (report.token === '' || sameToken(vendors[report.vendor], hash))) {
      delete vendors[report.vendor];
      changed = true;
    }
  }
  for (const [app, vendors] of Object.entries(apps)) if (Object.keys(vendors).length === 0) delete apps[app];
  if (Object.keys(apps).length === 0) delete devices[report.device_id];
  else devices[report.device_id] = apps;
  return changed;
}

/** The devices with at least one valid token for the app, sorted for a stable output order. */
export function pushableDevices(devices: UserDevices | undefined, appId: string): string[] {
  if (!devices) return [];
  return Object.keys(devices)
    .filter((d) => Object.keys(devices[d]?.[appId] ?? {}).length > 0)
    .sort();
}
