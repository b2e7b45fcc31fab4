/**
 * Per-API-key rate limits of the HTTP entry: a token bucket per key holding one second's worth of
 * requests, refilled continuously. A request over the rate is answered 429 with `Retry-After`,
 * the whole seconds until the bucket holds a token again.
 */
export class KeyRateLimits {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  constructor(
    private readonly maxKeys = 100_000,
    private readonly now: () => number = Date.now,
  ) {}

  /** Takes a token for `keyId` at `perSecond`; returns 0 when allowed, else the seconds to wait (≥ 1). */
  take(keyId: string, perSecond: number): number {
    const now = this.now();
    let b = this.buckets.get(keyId);
    if (!b) {
      if (this.buckets.size >= this.maxKeys) this.buckets.clear();
      b = { tokens: perSecond, at: now };
      this.buckets.set(keyId, b);
    }
    b.tokens = Math.min(perSecond, b.tokens + ((now - b.at) / 1000) * perSecond);
    b.at = now;
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return 0;
    }
    return Math.max(1, Math.ceil((1 - b.tokens) / perSecond));
  }
}
