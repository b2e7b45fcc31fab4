/**
 * Hot-retry-loop detection from the vendor side (DESIGN §8): after a vendor refused a request
 * during a storm, the next request for the same device token must not come sooner than the
 * Retry-After the vendor gave (or, without one, sooner than a backoff would allow).
 */
import type { ReceivedPush } from '../test/emulators/index.ts';

/** A scripted vendor storm: which vendor, what fault, when it was on. */
export interface StormWindow {
  readonly vendor: string;
  readonly fault: string;
  /** Retry-After the emulator sent with each refusal, ms (undefined: none sent). */
  readonly retryAfterMs?: number;
  readonly fromMs: number;
  readonly toMs: number;
}

export interface StormCheck {
  readonly vendor: string;
  readonly fault: string;
  /** Requests the vendor refused during the storm. */
  readonly refused: number;
  /** Requests the vendor received during the storm (any answer). */
  readonly requests: number;
  /** Smallest gap between a refusal and the next request for the same token, ms (null: no retry seen). */
  readonly minRetryGapMs: number | null;
  /** Retries for the same token sooner than allowed (Retry-After − 50 ms, or 50 ms without one). */
  readonly tooEarly: number;
  /** Most requests one token received in the storm. */
  readonly maxRequestsPerToken: number;
}

/** Refusals that are the device's own (dead tokens) are not storm answers. */
export function checkStorms(received: readonly ReceivedPush[], storms: readonly StormWindow[], deadTokens: ReadonlySet<string>): StormCheck[] {
  return storms.map((storm) => {
    const ofVendor = received.filter((r) => r.vendor === storm.vendor).sort((a, b) => a.at - b.at);
    const inStorm = ofVendor.filter((r) => r.at >= storm.fromMs && r.at <= storm.toMs);
    const refused = inStorm.filter((r) => r.answer !== 'accepted' && !deadTokens.has(r.token));
    const allowedMs = storm.retryAfterMs !== undefined ? storm.retryAfterMs - 50 : 50;
    let minGap: number | null = null;
    let tooEarly = 0;
    for (const r of refused) {
      const next = ofVendor.find((n) => n.token === r.token && n.at > r.at);
      if (!next) continue;
      const gap = next.at - r.at;
      minGap = minGap === null ? gap : Math.min(minGap, gap);
      if (gap < allowedMs) tooEarly++;
    }
    const perToken = new Map<string, number>();
    for (const r of inStorm) perToken.set(r.token, (perToken.get(r.token) ?? 0) + 1);
    return {
      vendor: storm.vendor, fault: storm.fault, refused: refused.length, requests: inStorm.length, minRetryGapMs: minGap, tooEarly,
      maxRequestsPerToken: Math.max(0, ...perToken.values()),
    };
  });
}
