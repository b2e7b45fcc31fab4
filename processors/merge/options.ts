import type { ChildNames } from '../../topology/api.ts';
import { checkKey, checkRange, readKey, type Env } from '../../common/config.ts';
import { CONFIG_KEYS, type MERGE_MODES } from '../../common/config-keys.ts';
import { keyValueStore, scheduleStore, type StoreDefinition } from '../../topology/stores.ts';
import { convWindowsStoreSerde } from './window-codec.ts';

/**
 * `leading`: the first trigger of an idle (uid, conv) is pushed at once, later triggers in the window
 * are merged, one silent trailing update carries the latest unread count at window close.
 * `trailing-only`: the seed's rule: nothing is sent until the window closes, then one notification.
 */
export type MergeMode = (typeof MERGE_MODES)[number];

/** Options of the merge stage (docs/design.md, "merge"). Durations in milliseconds. */
export interface MergeOptions {
  /** The merge window per (uid, conv_id). Env PUSH_MERGE_WINDOW_MS; default 5 000; above 10 000 is rejected. */
  windowMs?: number;
  /** Env PUSH_MERGE_MODE; default `leading`. */
  mode?: MergeMode;
  /**
   * How long a closed window's highest pushed seq is remembered, so a late trigger with a lower seq
   * never produces a push that lowers the carried seq or unread count. Env PUSH_MERGE_RETENTION_MS;
   * default 60 000.
   */
  retentionMs?: number;
  /** Wall-clock interval at which due windows close, ms (no env key). Default 100; 1–60 000. */
  punctuateIntervalMs?: number;
  /**
   * Most (uid, conv_id) entries one task keeps in its windows store (open windows and closed ones'
   * memory). Over it, the entry due soonest makes room: its open windows close at once (the trailing
   * update with the latest unread count goes out early, never lost) and its memory is forgotten.
   * Env PUSH_MERGE_MAX_ENTRIES; default 500 000 per task (~250 MB at the measured ~0.5 KB each).
   */
  maxEntries?: number;
  /** Told of every entry the cap evicts (the worker counts them in push_merge_evictions_total). */
  listener?: MergeListener;
  /** Child node names. Defaults `merged` and `outcomes`. */
  outputs?: { merged?: ChildNames; outcomes?: ChildNames };
  stores?: Partial<MergeStoreNames>;
}

/** How an entry left the store early, for the cap: its open windows closed, or only its memory forgotten. */
export type MergeEviction = 'closed-early' | 'forgotten';

export interface MergeListener {
  evicted(kind: MergeEviction): void;
}

export interface MergeStoreNames {
  /** (uid, conv) → per-device window state, encoded (window-codec.ts). */
  windows: string;
  /**
   * A schedule of when each (uid, conv)'s earliest window closes (or its memory expires). Not
   * changelogged: the stage rebuilds it from the restored windows at init, so a restore replays one
   * record per (uid, conv) instead of two, and every commit writes half the changelog records. A
   * schedule, not a timer store: the windows value already holds the due time, so the stage needs
   * no second index by key (~35 bytes per (uid, conv), see ScheduleStore).
   */
  windowTimers: string;
}

export const MERGE_STORE_NAMES: MergeStoreNames = { windows: 'merge-windows', windowTimers: 'merge-window-timers' };

export interface MergeConfig {
  readonly windowMs: number;
  readonly mode: MergeMode;
  readonly retentionMs: number;
  readonly punctuateIntervalMs: number;
  readonly maxEntries: number;
  readonly listener: MergeListener | undefined;
  readonly outputs: { readonly merged: ChildNames; readonly outcomes: ChildNames };
  readonly stores: Readonly<MergeStoreNames>;
}

const KEYS = CONFIG_KEYS;

/** Validates the options once; a bad value throws a ConfigError naming its PUSH_* key (or its option, when it has none). */
export function compileMergeOptions(options: MergeOptions = {}): MergeConfig {
  return Object.freeze({
    windowMs: checkKey(KEYS.PUSH_MERGE_WINDOW_MS, options.windowMs),
    mode: checkKey(KEYS.PUSH_MERGE_MODE, options.mode),
    retentionMs: checkKey(KEYS.PUSH_MERGE_RETENTION_MS, options.retentionMs),
    punctuateIntervalMs: checkRange('merge.punctuateIntervalMs', options.punctuateIntervalMs ?? 100, { min: 1, max: 60_000 }),
    maxEntries: checkKey(KEYS.PUSH_MERGE_MAX_ENTRIES, options.maxEntries),
    listener: options.listener,
    outputs: Object.freeze({ merged: options.outputs?.merged ?? 'merged', outcomes: options.outputs?.outcomes ?? 'outcomes' }),
    stores: Object.freeze({ ...MERGE_STORE_NAMES, ...options.stores }),
  });
}

/** Reads the stage's options from their PUSH_* keys (common/config-keys.ts). */
export function mergeOptionsFromEnv(env: Env = process.env): MergeOptions {
  return {
    windowMs: readKey(env, KEYS.PUSH_MERGE_WINDOW_MS),
    mode: readKey(env, KEYS.PUSH_MERGE_MODE),
    retentionMs: readKey(env, KEYS.PUSH_MERGE_RETENTION_MS),
    maxEntries: readKey(env, KEYS.PUSH_MERGE_MAX_ENTRIES),
  };
}

/** The stores the merge stage declares on its supplier (`merge`): the windows and their schedule. */
export function mergeStores(names: MergeStoreNames = MERGE_STORE_NAMES): StoreDefinition[] {
  return [keyValueStore(names.windows, convWindowsStoreSerde), scheduleStore(names.windowTimers)];
}
