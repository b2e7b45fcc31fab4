import type { ChildNames } from '../../topology/api.ts';
import { checkKey, checkRange, readKey, type Env } from '../../common/config.ts';
import { CONFIG_KEYS } from '../../common/config-keys.ts';

/**
 * Options of the online-filter stage (docs/design.md, "online-filter"). All durations in
 * milliseconds.
 */
export interface OnlineFilterOptions {
  /**
   * How long a message for an online, ACKing device is held waiting for its downlink ACK before it is
   * pushed anyway (and the device marked suspicious). Env PUSH_HOLD_WINDOW_MS; default 10 000;
   * allowed 5 000–30 000.
   */
  holdWindowMs?: number;
  /** A device is connected only while its last heartbeat is at most this old. Env PUSH_HEARTBEAT_TIMEOUT_MS; default 90 000. */
  heartbeatTimeoutMs?: number;
  /** After a push to a BACKGROUND/EXIT device, no second push to it within this time. Env PUSH_BACKGROUND_COOLDOWN_MS; default 10 000. */
  backgroundCooldownMs?: number;
  /** Wall-clock interval at which due hold windows are released, ms (no env key). Default 100; 1–60 000. */
  punctuateIntervalMs?: number;
  /** Names of the child nodes the stage forwards to. Defaults `candidates` and `outcomes`. */
  outputs?: { candidates?: ChildNames; outcomes?: ChildNames };
  /** Store names; defaults are ONLINE_FILTER_STORE_NAMES. */
  stores?: Partial<OnlineFilterStoreNames>;
}

export interface OnlineFilterStoreNames {
  /** uid → the user's devices and which of their (app, vendor) tokens are valid. */
  devices: string;
  /** (uid, device) → connection, heartbeat, app state, suspicion, recent ACKs; written only on a change. */
  presence: string;
  /** (uid, device, conv) → messages held for an online device, each with its due time (holds.ts). */
  holds: string;
  /**
   * (uid, device, conv) → when its earliest held message is due. Not changelogged: rebuilt from the
   * holds at init, so a hold and its timer are one changelog record (holds.ts).
   */
  holdTimers: string;
}

export const ONLINE_FILTER_STORE_NAMES: OnlineFilterStoreNames = {
  devices: 'online-filter-devices',
  presence: 'online-filter-presence',
  holds: 'online-filter-holds',
  holdTimers: 'online-filter-hold-timers',
};

export interface OnlineFilterConfig {
  readonly holdWindowMs: number;
  readonly heartbeatTimeoutMs: number;
  readonly backgroundCooldownMs: number;
  readonly punctuateIntervalMs: number;
  readonly outputs: { readonly candidates: ChildNames; readonly outcomes: ChildNames };
  readonly stores: Readonly<OnlineFilterStoreNames>;
}

/** Validates the options once; a bad value throws a ConfigError naming its PUSH_* key (or its option, when it has none). */
export function compileOnlineFilterOptions(options: OnlineFilterOptions = {}): OnlineFilterConfig {
  return Object.freeze({
    holdWindowMs: checkKey(CONFIG_KEYS.PUSH_HOLD_WINDOW_MS, options.holdWindowMs),
    heartbeatTimeoutMs: checkKey(CONFIG_KEYS.PUSH_HEARTBEAT_TIMEOUT_MS, options.heartbeatTimeoutMs),
    backgroundCooldownMs: checkKey(CONFIG_KEYS.PUSH_BACKGROUND_COOLDOWN_MS, options.backgroundCooldownMs),
    punctuateIntervalMs: checkRange('onlineFilter.punctuateIntervalMs', options.punctuateIntervalMs ?? 100, { min: 1, max: 60_000 }),
    outputs: Object.freeze({ candidates: options.outputs?.candidates ?? 'candidates', outcomes: options.outputs?.outcomes ?? 'outcomes' }),
    stores: Object.freeze({ ...ONLINE_FILTER_STORE_NAMES, ...options.stores }),
  });
}

/** Reads the stage's options from their PUSH_* keys (common/config-keys.ts). */
export function onlineFilterOptionsFromEnv(env: Env = process.env): OnlineFilterOptions {
  return {
    holdWindowMs: readKey(env, CONFIG_KEYS.PUSH_HOLD_WINDOW_MS),
    heartbeatTimeoutMs: readKey(env, CONFIG_KEYS.PUSH_HEARTBEAT_TIMEOUT_MS),
    backgroundCooldownMs: readKey(env, CONFIG_KEYS.PUSH_BACKGROUND_COOLDOWN_MS),
  };
}
