/**
 * Hot-retry-loop detection from the vendor side (docs/design.md, "Reliability and security"): after
 * a vendor refused a request during a storm, the next request for the same push (device token,
 * conv_id, seq) must not come sooner than the Retry-After the vendor gave (or, without one, sooner
 * than a backoff would allow). A retry is the same client's (process's) next request for the push:
 * another worker sending it after a takeover had no answer to wait for (the duplicate verdict
 * judges those).
 */
import type { ReceivedPush } from '../emulators/index.ts';
import { messageOf } from './verify.ts';

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
  /** Smallest gap between a refusal and the same client's next request for the same push, ms (null: no retry seen). */
  readonly minRetryGapMs: number | null;
  /** Retries of the same push sooner than allowed (Retry-After − 50 ms, or 50 ms without one). */
  readonly tooEarly: number;
  /** Most requests one push received in the storm. */
  readonly maxRequestsPerPush: number;
  /** The first few too-early retries: the answer that preceded, and the gap. */
  readonly examples: Array<{ answer: string; gapMs: number; nextAnswer: string }>;
}

/** Refusals that are the device's own (dead tokens) are not storm answers. */
export function checkStorms(received: readonly ReceivedPush[], storms: readonly StormWindow[], deadTokens: ReadonlySet<string>): StormCheck[] {
  return storms.map((storm) => {
    const pushOf = (r: ReceivedPush) => `${r.token}|${messageOf(r)?.convId}|${messageOf(r)?.seq}`;
    const ofVendor = received.filter((r) => r.vendor === storm.vendor).sort((a, b) => a.at - b.at);
    const inStorm = ofVendor.filter((r) => r.at >= storm.fromMs && r.at <= storm.toMs);
    const refused = inStorm.filter((r) => r.answer !== 'accepted' && !deadTokens.has(r.token));
    const allowedMs = storm.retryAfterMs !== undefined ? storm.retryAfterMs - 50 : 50;
    let minGap: number | null = null;
    let tooEarly = 0;
    const examples: StormCheck['examples'] = [];
    const position = new Map(ofVendor.map((r, i) => [r, i]));
    for (const r of refused) {
      const key = pushOf(r);
      let next: ReceivedPush | undefined;
      for (let i = position.get(r)! + 1; i < ofVendor.length && !next; i++)
        if (ofVendor[i]!.client === r.client && pushOf(ofVendor[i]!) === key) next = ofVendor[i];
      if (!next) continue;
      const gap = next.at - r.at;
      minGap = minGap === null ? gap : Math.min(minGap, gap);
      if (gap < allowedMs) {
        tooEarly++;
        if (examples.length < 5) examples.push({ answer: r.answer, gapMs: gap, nextAnswer: next.answer });
      }
    }
    const perPush = new Map<string, number>();
    for (const r of inStorm) perPush.set(pushOf(r), (perPush.get(pushOf(r)) ?? 0) + 1);
    return {
      vendor: storm.vendor,
      fault: storm.fault,
      refused: refused.length,
      requests: inStorm.length,
      minRetryGapMs: minGap,
      tooEarly,
      maxRequestsPerPush: Math.max(0, ...perPush.values()),
      examples,
    };
  });
}
