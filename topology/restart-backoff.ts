import { errorCode, errorMessage } from '../common/errors.ts';
import type { Logger } from '../common/log.ts';
import { backoffDelay } from '../common/retry.ts';
import type { MetricsListener } from './metrics.ts';
import { kafkaErrorType } from './kafka-errors.ts';
import { TaskFailedError } from './task.ts';

export interface RestartBackoffOptions {
  /** Delay before the first restart of a run, ms. */
  readonly initialMs: number;
  /** Longest delay, ms. */
  readonly maxMs: number;
  /** A restart this long after the previous one (ms) starts a new run. */
  readonly resetMs: number;
  /** Wall-clock time in epoch ms. */
  readonly clock?: () => number;
}

/**
 * How long a streams application waits before each restart (docs/design.md, "Runtime"). Restarts
 * that follow each other within `resetMs` of running (counted from the end of the previous restart)
 * form a run; the n-th restart of a run waits min(maxMs, initialMs × 2^(n−1)), with jitter:
 * uniform in [½, 1] of that step, so below the cap a delay is never shorter than the one before
 * it, and instances failing together spread out.
 */
export class RestartBackoff {
  private consecutiveRestarts = 0;
  private lastRestartMs = -Infinity;
  private currentDelayMs = 0;
  private readonly clock: () => number;

  constructor(private readonly options: RestartBackoffOptions) {
    this.clock = options.clock ?? Date.now;
  }

  /** Restarts in the current run, this one included once `next` was called. */
  get consecutive(): number {
    return this.consecutiveRestarts;
  }

  /** The delay of the latest restart of the current run, ms; 0 once the run ended. */
  get delayMs(): number {
    return this.currentDelayMs;
  }

  /** A restart is about to happen: counts it and returns how long to wait first, ms. */
  next(): number {
    const now = this.clock();
    if (now - this.lastRestartMs >= this.options.resetMs) this.consecutiveRestarts = 0;
    this.consecutiveRestarts++;
    this.lastRestartMs = now;
    this.currentDelayMs = backoffDelay(this.consecutiveRestarts, this.options.initialMs, this.options.maxMs);
    return this.currentDelayMs;
  }

  /**
   * Ends the run if the application has been running for `resetMs` since the latest restart.
   * Returns true when it did (the caller reports the backoff as back to zero).
   */
  settle(): boolean {
    if (this.consecutiveRestarts === 0 || this.clock() - this.lastRestartMs < this.options.resetMs) return false;
    this.consecutiveRestarts = 0;
    this.currentDelayMs = 0;
    return true;
  }

  /** The restart is done (the application rejoined): time running is counted from here. */
  restartEnded(): void {
    this.lastRestartMs = this.clock();
  }
}

/**
 * The restart policy of one streams application: counts and reports each restart (metrics and
 * log), waits out its backoff, and ends the run once the application ran long enough after it.
 */
export class RestartPacer {
  private readonly backoff: RestartBackoff;
  private settleTimer?: NodeJS.Timeout;
  private wake?: () => void;

  constructor(
    private readonly options: RestartBackoffOptions & {
      readonly applicationId: string;
      readonly metrics: Required<Pick<MetricsListener, 'onRestart' | 'onRestartsSettled'>>;
      readonly log: Logger;
    },
  ) {
    this.backoff = new RestartBackoff(options);
  }

  /** A restart (or another attempt at one) begins because of `cause`: counts and reports it; returns its backoff, ms. */
  begin(cause: unknown, attempt: number): number {
    const backoffMs = this.backoff.next();
    const code = restartCode(cause);
    const consecutive = this.backoff.consecutive;
    this.options.metrics.onRestart({ applicationId: this.options.applicationId, code, consecutive, backoffMs });
    this.options.log.warn(attempt === 1 ? 'restarting consumer' : 'consumer restart failed; trying again', {
      code,
      error: errorMessage(cause),
      consecutive,
      backoffMs,
    });
    return backoffMs;
  }

  /** Waits `ms`; `close` cuts it short. */
  wait(ms: number): Promise<void> {
    if (ms <= 0) return Promise.resolve();
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        this.wake = undefined;
        resolve();
      };
      const timer = setTimeout(wake, ms);
      this.wake = wake;
    });
  }

  /** The application rejoined: once it runs resetMs without another restart, the run is over. */
  rejoined(): void {
    this.backoff.restartEnded();
    if (this.settleTimer) clearTimeout(this.settleTimer);
    this.settleTimer = setTimeout(() => {
      if (this.backoff.settle()) this.options.metrics.onRestartsSettled({ applicationId: this.options.applicationId });
    }, this.options.resetMs + 10);
    this.settleTimer.unref();
  }

  close(): void {
    if (this.settleTimer) clearTimeout(this.settleTimer);
    this.wake?.();
  }
}

/** The reason's code; a failed task's is its cause's (COMMIT_FAILED, REGISTRY_UNAVAILABLE, …), which says more. */
function restartCode(reason: unknown): string {
  let e = reason;
  for (let depth = 0; depth < 5 && e instanceof TaskFailedError && e.cause !== undefined; depth++) e = e.cause;
  const code = errorCode(e);
  return code === 'UNKNOWN' ? (kafkaErrorType(e) ?? code) : code;
}
