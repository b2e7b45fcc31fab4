import { isRetriable } from './errors.ts';

export interface RetryOptions {
  /** Attempts in all, the first included. Default 5. */
  maxAttempts?: number;
  /** Delay before the second attempt, in ms. Default 100. */
  initialDelayMs?: number;
  /** Upper bound of one delay, in ms. Default 10 000. */
  maxDelayMs?: number;
  /** Multiplier per attempt. Default 2. */
  factor?: number;
  /** Decides whether an error is worth another attempt. Default: the error's `retriable` flag. */
  shouldRetry?: (error: unknown, attempt: number) => boolean;
  /** Called before each wait; for logging and metrics. */
  onRetry?: (error: unknown, attempt: number, delayMs: number) => void;
  /** A hint from the server (Retry-After), in ms; the wait is never shorter than this. */
  minDelayFor?: (error: unknown) => number | undefined;
  signal?: AbortSignal;
}

/** Exponential backoff with full jitter: a uniformly random delay in [base/2, base]. */
export function backoffDelay(attempt: number, initialDelayMs: number, maxDelayMs: number, factor = 2): number {
  const base = Math.min(maxDelayMs, initialDelayMs * factor ** Math.max(0, attempt - 1));
  return Math.round(base / 2 + Math.random() * (base / 2));
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** Runs `fn` until it succeeds, the error is not retriable, or the attempts are used up. */
export async function retry<T>(fn: (attempt: number) => Promise<T>, options: RetryOptions = {}): Promise<T> {
  const maxAttempts = options.maxAttempts ?? 5;
  const initialDelayMs = options.initialDelayMs ?? 100;
  const maxDelayMs = options.maxDelayMs ?? 10_000;
  const shouldRetry = options.shouldRetry ?? ((error: unknown) => isRetriable(error));
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn(attempt);
    } catch (error) {
      if (attempt >= maxAttempts || !shouldRetry(error, attempt)) throw error;
      const hinted = options.minDelayFor?.(error) ?? 0;
      const delayMs = Math.max(hinted, backoffDelay(attempt, initialDelayMs, maxDelayMs, options.factor));
      options.onRetry?.(error, attempt, delayMs);
      await sleep(delayMs, options.signal);
    }
  }
}

/** Rejects with `onTimeout()` when `work` has not settled within `ms`. */
export function withTimeout<T>(work: Promise<T>, ms: number, onTimeout: () => Error): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(onTimeout()), ms);
    timer.unref();
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}
