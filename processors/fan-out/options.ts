import { checkKey, checkRange, readKey, type Env } from '../../common/config.ts';
import { CONFIG_KEYS as KEYS } from '../../common/config-keys.ts';
import type { Vendor, VendorAdapter, VendorLimits } from './vendor-port.ts';
import type { PushTaskLedger } from './ledger.ts';
import type { PushDispatch } from '../model/records.ts';
import { realClock, type GateClock } from './vendor-gate.ts';
import type { CampaignCancellations } from '../campaigns/cancellations.ts';

/**
 * What the fan-out needs of the vendor registry (sinks/vendors/registry.ts). The registry may swap
 * an app's adapters at run time (a reload of the apps file): the fan-out asks for the adapter at
 * each call rather than keeping one.
 */
export interface VendorDirectory {
  adapter(vendor: Vendor, appId: string): VendorAdapter | undefined;
  limits(vendor: Vendor, appId: string): VendorLimits | undefined;
  /**
   * Whether the apps file lists `appId` now; a push of an app it no longer lists ends DROPPED
   * `app_removed`, without a vendor call and with its tokens kept. Absent: every app is listed.
   */
  hasApp?(appId: string): boolean;
}

/** Non-blocking observer of the fan-out (metrics). Every method is optional and must return at once. */
export interface FanOutListener {
  onAnswer?(vendor: string, appId: string, kind: string, code: string | null): void;
  /** A dispatch reached `process` (before its claim); the listener reads the clock. */
  onDispatchReceived?(dispatch: PushDispatch): void;
  /** A fresh dispatch's claim in the task ledger (MySQL) answered after `ms` (cache hits included). */
  onClaimed?(dispatch: PushDispatch, ms: number): void;
  /** A parked push of (vendor, app) was ended by the cap `maxParked` (FAILED parked_evicted or vendor_unreachable). */
  onEvicted?(vendor: string, appId: string): void;
  /** Pushes parked in task `taskId` now (every retry poll; 0 when the task closes). */
  onParked?(taskId: string, count: number): void;
  /**
   * A call to (vendor, app) repeats one an earlier owner of the task may have made without its
   * answer being recorded: the first call of a pending task claimed again (a takeover or a restart;
   * not `pushctl replay`). At most one per takeover of a task (docs/design.md, "Takeover").
   */
  onTakeoverResend?(vendor: string, appId: string): void;
}

/** Options of the fan-out stage (docs/design.md, "fan-out"). */
export interface FanOutOptions {
  /** Adapters and per (vendor, app) limits. */
  readonly vendors: VendorDirectory;
  /** The im_push_task ledger (sinks/mysql/tasks.ts on MySQL). */
  readonly ledger: PushTaskLedger;
  /** Child node names: outcomes (push.outcomes) and token invalidations (a push.tokens sink node). */
  readonly outputs: { readonly outcomes: string; readonly tokens: string };
  /** Vendor time to live of a push, s. Env PUSH_FANOUT_TTL_SECONDS; default 86 400; 0–2 419 200. */
  readonly ttlSeconds?: number;
  /** Vendor calls per channel for retryable answers (5xx, network). Env PUSH_FANOUT_MAX_RETRIES; default 3; 1–10. */
  readonly maxRetryableAttempts?: number;
  /** Vendor calls per channel when throttled and no other channel is left. Env PUSH_FANOUT_MAX_THROTTLED; default 4; 1–20. */
  readonly maxThrottledAttempts?: number;
  /**
   * How long a push keeps being retried after retryable answers (5xx, timeouts, connection loss,
   * an answer lost after the request was written), ms since it was decided. A known failure gets
   * `maxRetryableAttempts` calls per channel and then moves to the next channel; on the last
   * channel, and for an unknown outcome (the vendor may have the push: only that channel, never
   * another), it is parked and retried with backoff until this age, then ends FAILED
   * `max_age_exceeded`. A READ of the conversation up to the push's seq cancels it (SUPPRESSED
   * `read`). 0 turns parking off: the push ends after `maxRetryableAttempts` calls. Env
   * PUSH_FANOUT_RETRY_MAX_AGE_MS (PUSH_FANOUT_UNKNOWN_RETRY_MAX_AGE_MS is read when it is unset);
   * default 3 600 000; 0–86 400 000.
   */
  readonly retryMaxAgeMs?: number;
  /**
   * Most pushes one task keeps parked (waiting out retryable answers or a vendor's pause). Parking
   * one more evicts the oldest parked push (smallest decided_at): it ends at once, FAILED on its
   * channel with the vendor's last code and reason `parked_evicted` (`vendor_unreachable` when that
   * last call never reached the vendor), its task row failed (3); counted by `onEvicted`. Env
   * PUSH_FANOUT_MAX_PARKED; default 50 000; 1–10 000 000. A parked push costs about 1.4–1.8 KB
   * of memory all in (store value, retry timer, age and READ indexes; measured with ASCII and CJK
   * text), so the default bounds a task near 90 MB while a vendor is down. That covers the whole
   * default hour for up to ~14 parked pushes a second per partition; above it the oldest go first,
   * so the newest notifications still go out when the vendor returns.
   */
  readonly maxParked?: number;
  /** Backoff before the second call, ms (doubling, full jitter). Default 200; 1–60 000. */
  readonly backoffInitialMs?: number;
  /** Longest backoff, ms. Default 30 000; 1–600 000. */
  readonly backoffMaxMs?: number;
  /** Pause of a (vendor, app) after a 429 without Retry-After, ms. Default 1 000; 0–600 000. */
  readonly defaultThrottleMs?: number;
  /**
   * Backoffs up to this long are waited in place; longer ones park the dispatch in the
   * `fan-out-parked` store until due, so commits never wait them out. Default 1 000; 0–60 000.
   */
  readonly inlineBackoffMaxMs?: number;
  /** How often parked dispatches are checked for being due, ms (wall clock). Default 250; 10–60 000. */
  readonly retryPollMs?: number;
  /** Dispatches in flight per task before `process` waits (back pressure). Env PUSH_FANOUT_MAX_IN_FLIGHT; default 256; 1–100 000. */
  readonly maxInFlight?: number;
  /** Per (vendor, app) limits when the directory has none. Defaults 500/s and 64. */
  readonly defaultLimits?: VendorLimits;
  /** Clock and sleep; tests may inject. Default real time. */
  readonly clock?: GateClock;
  /**
   * The cancelled campaigns (push.campaign-control, pipeline/campaign-control.ts): given on the
   * business lane, a dispatch of a cancelled campaign is never submitted; it ends SUPPRESSED
   * `campaign_cancelled` (cancelled.ts). Checked when a dispatch is taken (fresh or resumed from the
   * parked store) and right before each vendor call. Default none (IM's lane).
   */
  readonly cancellations?: CampaignCancellations;
  /**
   * Settles once `cancellations` contains every cancellation made before the stage started (its
   * topic read to the end, or the read given up); dispatches wait for it, so a restarted lane never
   * sends a queued push of a campaign cancelled before the restart. Default: nothing to wait for.
   */
  readonly cancellationsRead?: Promise<void>;
  readonly listener?: FanOutListener;
  /**
   * The fan-out runs fused behind the decisions (pipeline/apps/decisions.ts `fanOut`): its input is
   * a persisted message whose decision state the same commit stores, so reading that message again
   * would not decide the push again, and a commit cannot leave the input offset of a dispatch in
   * flight out. Instead, a commit waits up to `commitWaitMs` for the dispatches in flight and
   * checkpoints those still running in the `fan-out-parked` store (resumed from there only if the
   * process stops before they finish). Default false.
   */
  readonly fused?: boolean;
  /** Fused: how long a commit waits for the dispatches in flight before checkpointing them, ms. Env PUSH_FAN_OUT_COMMIT_WAIT_MS; default 50; 0–10 000. */
  readonly commitWaitMs?: number;
}

export interface FanOutConfig {
  readonly ttlSeconds: number;
  readonly maxRetryableAttempts: number;
  readonly maxThrottledAttempts: number;
  readonly retryMaxAgeMs: number;
  readonly maxParked: number;
  readonly backoffInitialMs: number;
  readonly backoffMaxMs: number;
  readonly defaultThrottleMs: number;
  readonly maxInFlight: number;
  readonly inlineBackoffMaxMs: number;
  readonly retryPollMs: number;
  readonly defaultLimits: VendorLimits;
  readonly clock: GateClock;
  readonly fused: boolean;
  readonly commitWaitMs: number;
}

/** Validates once (ConfigError naming the PUSH_* key, or the option when it has none) and fills defaults. */
export function fanOutConfig(o: FanOutOptions): FanOutConfig {
  return Object.freeze({
    ttlSeconds: checkKey(KEYS.PUSH_FANOUT_TTL_SECONDS, o.ttlSeconds),
    maxRetryableAttempts: checkKey(KEYS.PUSH_FANOUT_MAX_RETRIES, o.maxRetryableAttempts),
    maxThrottledAttempts: checkKey(KEYS.PUSH_FANOUT_MAX_THROTTLED, o.maxThrottledAttempts),
    retryMaxAgeMs: checkKey(KEYS.PUSH_FANOUT_RETRY_MAX_AGE_MS, o.retryMaxAgeMs),
    maxParked: checkKey(KEYS.PUSH_FANOUT_MAX_PARKED, o.maxParked),
    backoffInitialMs: checkRange('fanOut.backoffInitialMs', o.backoffInitialMs ?? 200, { min: 1, max: 60_000 }),
    backoffMaxMs: checkRange('fanOut.backoffMaxMs', o.backoffMaxMs ?? 30_000, { min: 1, max: 600_000 }),
    defaultThrottleMs: checkRange('fanOut.defaultThrottleMs', o.defaultThrottleMs ?? 1000, { min: 0, max: 600_000 }),
    maxInFlight: checkKey(KEYS.PUSH_FANOUT_MAX_IN_FLIGHT, o.maxInFlight),
    inlineBackoffMaxMs: checkRange('fanOut.inlineBackoffMaxMs', o.inlineBackoffMaxMs ?? 1000, { min: 0, max: 60_000 }),
    retryPollMs: checkRange('fanOut.retryPollMs', o.retryPollMs ?? 250, { min: 10, max: 60_000 }),
    defaultLimits: o.defaultLimits ?? { ratePerSecond: 500, concurrency: 64 },
    clock: o.clock ?? realClock,
    fused: o.fused === true,
    commitWaitMs: checkKey(KEYS.PUSH_FAN_OUT_COMMIT_WAIT_MS, o.commitWaitMs),
  });
}

/** Reads the PUSH_FANOUT_* keys into options (the rest comes from the worker's wiring). */
export function fanOutOptionsFromEnv(
  env: Env,
): Pick<FanOutOptions, 'ttlSeconds' | 'maxRetryableAttempts' | 'maxThrottledAttempts' | 'maxInFlight' | 'retryMaxAgeMs' | 'maxParked' | 'commitWaitMs'> {
  return {
    commitWaitMs: readKey(env, KEYS.PUSH_FAN_OUT_COMMIT_WAIT_MS),
    ttlSeconds: readKey(env, KEYS.PUSH_FANOUT_TTL_SECONDS),
    maxRetryableAttempts: readKey(env, KEYS.PUSH_FANOUT_MAX_RETRIES),
    maxThrottledAttempts: readKey(env, KEYS.PUSH_FANOUT_MAX_THROTTLED),
    maxInFlight: readKey(env, KEYS.PUSH_FANOUT_MAX_IN_FLIGHT),
    maxParked: readKey(env, KEYS.PUSH_FANOUT_MAX_PARKED),
    // The older key (unknown outcomes only) still configures the general maximum age when the new one is unset.
    retryMaxAgeMs:
      env.PUSH_FANOUT_RETRY_MAX_AGE_MS === undefined && env.PUSH_FANOUT_UNKNOWN_RETRY_MAX_AGE_MS !== undefined
        ? readKey(env, KEYS.PUSH_FANOUT_UNKNOWN_RETRY_MAX_AGE_MS)
        : readKey(env, KEYS.PUSH_FANOUT_RETRY_MAX_AGE_MS),
  };
}
