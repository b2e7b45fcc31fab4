/**
 * Admission to one (vendor, app): a token bucket (`ratePerSecond` pushes, burst of one second), a
 * cap on submit calls in flight (`concurrency`) and a pause that a 429 / Retry-After sets, during
 * which nothing is sent to that vendor for that app. The rate counts pushes, not calls: a
 * multi-token call larger than the bucket waits for a full bucket and leaves it in debt, so the
 * calls after it wait until the rate has paid for every token sent.
 */
export interface GateClock {
  now(): number;
  sleep(ms: number): Promise<void>;
}

export const realClock: GateClock = {
  now: () => Date.now(),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
};

export class VendorGate {
  private tokens: number;
  private refilledAt: number;
  private inFlight = 0;
  private readonly waiters: Array<() => void> = [];
  /** No submission starts before this time (epoch ms). */
  pausedUntil = 0;

  constructor(
    private readonly ratePerSecond: number,
    private readonly concurrency: number,
    private readonly clock: GateClock = realClock,
  ) {
    this.tokens = ratePerSecond;
    this.refilledAt = clock.now();
  }

  /** Pauses the gate until `untilMs` (never shortens a longer pause). */
  pause(untilMs: number): void {
    this.pausedUntil = Math.max(this.pausedUntil, untilMs);
  }

  /** Waits for a concurrency slot, the pause to end and `count` rate tokens (a full bucket at most; the rest is owed). Call `release` after. */
  async acquire(count = 1): Promise<void> {
    if (this.inFlight >= this.concurrency) await new Promise<void>((resolve) => this.waiters.push(resolve));
    this.inFlight++;
    try {
      for (;;) {
        const now = this.clock.now();
        if (now < this.pausedUntil) {
          await this.clock.sleep(this.pausedUntil - now);
          continue;
        }
        this.tokens = Math.min(this.ratePerSecond, this.tokens + ((now - this.refilledAt) / 1000) * this.ratePerSecond);
        this.refilledAt = now;
        const need = Math.min(count, this.ratePerSecond);
        if (this.tokens >= need) {
          this.tokens -= count;
          return;
        }
        await this.clock.sleep(Math.ceil(((need - this.tokens) / this.ratePerSecond) * 1000));
      }
    } catch (error) {
      this.release();
      throw error;
    }
  }

  release(): void {
    this.inFlight--;
    this.waiters.shift()?.();
  }
}
