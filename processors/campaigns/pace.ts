/**
 * How fast the campaign expansion goes right now (docs/entry.md, "Campaigns yield to IM"). A
 * sender's rate limit caps a campaign, but on shared machines and a shared broker a campaign at its
 * full rate still takes CPU and broker time from IM pushes. The expansion is the business lane's
 * head, where waiting costs nothing (a uid not expanded yet is a cursor position), so it is where
 * the lane yields: it expands at a share of PUSH_CAMPAIGN_EXPANSION_RATE that a delay-based
 * controller sets, in the manner of LEDBAT (RFC 6817), the congestion control of background
 * transfers that yield to foreground traffic.
 *
 * The controller sees one sample a period: the median round trip of a small request to the brokers
 * leading IM's topics, and whether IM pushes crossed them in the period (pipeline/broker-delay.ts).
 * Its base is the lowest delay of the last few minutes (a bucket per minute, as LEDBAT keeps its
 * base delay), so what it reacts to is the queueing over that base, whatever the machine and the
 * network add to every request. Queueing above the target while IM is under way (or a period in
 * which the probe failed: no base is learnt from it) halves the share (to a floor, so a campaign
 * always progresses); otherwise the share grows by `rampPerSecond`, five times as fast while IM is
 * idle. Unlike LEDBAT, queueing with no IM push under way is no reason to
 * slow down: it is the campaign's own, and yielding to itself would only stretch the campaign.
 * The share grows only while a campaign is being expanded (as TCP grows its window only while it
 * has data to send, RFC 7661) and falls back to the floor when none is, so a campaign never starts
 * with a burst, whether IM is busy or not.
 */

/** The share (0, 1] of the configured expansion rate to expand at now. */
export interface ExpansionPace {
  share(): number;
  /** The expansion had a campaign to expand (called each tick it has one). */
  expanding?(): void;
}

export interface DelayYieldOptions {
  /** Queueing delay over the base that counts as contention, ms (PUSH_CAMPAIGN_YIELD_DELAY_MS). */
  readonly targetDelayMs: number;
  /** The lowest share, so a campaign still progresses while IM is busy. Default 0.02. */
  readonly floorShare?: number;
  /** Share added per second without contention while IM is under way. Default 0.02 (the floor to full in about 50 s); five times as much while IM is idle. */
  readonly rampPerSecond?: number;
  /** Minutes of per-minute minimum delays the base is taken from. Default 5. */
  readonly baseMinutes?: number;
}

const MINUTE_MS = 60_000;
/** How much faster the share grows while no IM push is under way. */
const IDLE_RAMP_FACTOR = 5;

export class DelayYield implements ExpansionPace {
  private readonly floor: number;
  private readonly ramp: number;
  private readonly baseMinutes: number;
  private current: number;
  /** The lowest delay of each of the last `baseMinutes` minutes, oldest first. */
  private readonly minima: { minute: number; min: number }[] = [];
  private lastAt: number | undefined;
  private lastQueueingMs = 0;
  private expandedSinceObserve = false;

  constructor(private readonly options: DelayYieldOptions) {
    if (!(options.targetDelayMs > 0)) throw new RangeError(`targetDelayMs must be > 0, got ${options.targetDelayMs}`);
    this.floor = options.floorShare ?? 0.02;
    this.ramp = options.rampPerSecond ?? 0.02;
    this.baseMinutes = options.baseMinutes ?? 5;
    this.current = this.floor;
  }

  share(): number {
    return this.current;
  }

  expanding(): void {
    this.expandedSinceObserve = true;
  }

  /** The queueing delay of the latest delay over the base, ms. */
  queueingMs(): number {
    return this.lastQueueingMs;
  }

  /**
   * One period's delay (ms; null: the probe failed, which counts as contention and leaves the base
   * alone) taken at `now` (epoch ms); `imActive`: IM pushes crossed the probed brokers in the period.
   */
  observe(delayMs: number | null, now: number, imActive: boolean): void {
    const minute = Math.floor(now / MINUTE_MS);
    while (this.minima.length > 0 && this.minima[0]!.minute <= minute - this.baseMinutes) this.minima.shift();
    if (delayMs !== null) {
      const newest = this.minima[this.minima.length - 1];
      if (newest?.minute === minute) newest.min = Math.min(newest.min, delayMs);
      else this.minima.push({ minute, min: delayMs });
      this.lastQueueingMs = delayMs - Math.min(...this.minima.map((m) => m.min));
    }
    const contended = imActive && (delayMs === null || this.lastQueueingMs > this.options.targetDelayMs);
    const seconds = this.lastAt === undefined ? 0 : Math.min(1, Math.max(0, (now - this.lastAt) / 1000));
    this.lastAt = now;
    const expanded = this.expandedSinceObserve;
    this.expandedSinceObserve = false;
    if (!expanded) this.current = this.floor;
    else if (contended) this.current = Math.max(this.floor, this.current / 2);
    else this.current = Math.min(1, this.current + this.ramp * seconds * (imActive ? 1 : IDLE_RAMP_FACTOR));
  }
}

/** Expands at the configured rate always (PUSH_CAMPAIGN_YIELD_DELAY_MS 0). */
export const FULL_PACE: ExpansionPace = { share: () => 1 };
