/**
 * The policy stage's view of a user's push tokens (fed by push.tokens): per device, at most one
 * token per vendor, with its state. INVALID tokens are kept (so a stale VALID report cannot revive a
 * token invalidated after it) but are never chosen.
 */
import type { TokenReport } from '../model/records.ts';

export interface StoredToken {
  token: string;
  app_id: string;
  state: 'VALID' | 'INVALID';
  reported_at: number;
}

export interface DeviceTokens {
  platform: string;
  manufacturer: string | null;
  /** vendor → token */
  tokens: Record<string, StoredToken>;
}

/** uid's devices: deviceId → tokens. */
export type UserTokens = Record<string, DeviceTokens>;

/**
 * Applies a report. A VALID report (re)places the (device, vendor) token unless it is older than
 * what is stored; an INVALID one applies only to the token it names (or to any, when it names none).
 * A stored stamp later than `latestPlausible` (kept before ingest refused future stamps) outranks
 * nothing: the report replaces it.
 */
export function applyTokenReport(user: UserTokens, r: TokenReport, latestPlausible = Infinity): void {
  const device = (user[r.device_id] ??= { platform: r.platform, manufacturer: r.manufacturer, tokens: {} });
  const current = device.tokens[r.vendor];
  if (r.state === 'VALID') {
    if (current && current.reported_at > r.reported_at && current.reported_at <= latestPlausible) return;
    device.tokens[r.vendor] = { token: r.token, app_id: r.app_id, state: 'VALID', reported_at: r.reported_at };
    if (r.source === 'CLIENT') {
      device.platform = r.platform || device.platform;
      device.manufacturer = r.manufacturer ?? device.manufacturer;
    }
  } else if (current && (r.token === '' || r.token === current.token)) {
    current.state = 'INVALID';
    current.reported_at = Math.max(current.reported_at, r.reported_at);
  }
}

/** The device's valid tokens for the app, by vendor. */
export function validTokens(device: DeviceTokens | undefined, appId: string): Map<string, string> {
  const out = new Map<string, string>();
  if (!device) return out;
  for (const [vendor, t] of Object.entries(device.tokens)) if (t.state === 'VALID' && t.app_id === appId) out.set(vendor, t.token);
  return out;
}
