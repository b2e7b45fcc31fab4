/**
 * The common strategies of business pushes (docs/entry.md, "Strategies and their defaults"), each
 * over its own changelogged store, so a restarted task decides exactly as before:
 *
 * - idempotency: a (uid, sender, idempotency key) is remembered for PUSH_BUSINESS_IDEMPOTENCY_TTL_MS;
 * - frequency caps: pushes per user, category and local day, across all senders;
 * - sender rate: each sender's requests are spaced 1/rate apart (per partition: rate/partitions),
 *   later ones kept until their turn instead of dropped (a virtual schedule: one number per sender);
 * - night: the user's quiet hours, or the default night, in the user's zone (DST by the tz rules).
 */
import type { KeyValueStore, TimerStore } from '../../topology/stores.ts';
import { compositeKey } from '../model/keys.ts';
import type { UserSettings } from '../model/records.ts';
import { inQuietHours, localDay, quietHoursEnd, type QuietRange } from '../policy/quiet-hours.ts';
import type { StrategySet } from './options.ts';

/** Remembers (uid, sender, idempotency key) until it expires; the timer store is the set. */
export class IdempotencyKeys {
  constructor(
    private readonly timers: TimerStore,
    private readonly ttlMs: number,
  ) {}

  /** True when it was seen within the retention; otherwise remembers it and returns false. */
  seen(uid: string, sender: string, key: string, now: number): boolean {
    const k = compositeKey(uid, sender, key);
    const expires = this.timers.dueTime(k);
    if (expires !== undefined && expires > now) return true;
    this.timers.set(k, now + this.ttlMs);
    return false;
  }

  /** When the earliest remembered pair expires; undefined when none is. */
  nextExpiryMs(): number | undefined {
    return this.timers.peekDueMs();
  }

  /** Forgets the pairs past their retention (at most `limit`). */
  expire(now: number, limit: number): void {
    this.timers.popDue(now, limit);
  }
}

interface DayCount {
  day: string;
  count: number;
}

/** Pushes per (user, category) on the user's local day. One entry per (user, category): a new day replaces it. */
export class FrequencyCaps {
  constructor(private readonly store: KeyValueStore<DayCount>) {}

  /** Whether one more push of `category` stays within `cap` (0 = no cap) on the local day of `at`. */
  hasRoom(uid: string, category: string, cap: number, at: number, zone: string): boolean {
    if (cap === 0) return true;
    const kept = this.store.get(compositeKey(uid, category));
    return !kept || kept.day !== localDay(at, zone) || kept.count < cap;
  }

  charge(uid: string, category: string, at: number, zone: string): void {
    const key = compositeKey(uid, category);
    const day = localDay(at, zone);
    const kept = this.store.get(key);
    this.store.put(key, { day, count: kept?.day === day ? kept.count + 1 : 1 });
  }
}

/**
 * Each sender's send rate on this partition (a virtual schedule, as GCRA): the store holds the
 * earliest time the sender's next request may go; a request takes that slot (or now, when it is
 * past) and moves it on by 1/rate. The slot is when the request may be sent.
 */
export class SenderRate {
  constructor(
    private readonly store: KeyValueStore<number>,
    private readonly partitionCount: number,
  ) {}

  /** Takes the sender's next slot at or after `now`; `ratePerSecond` 0 means unlimited (always `now`). */
  take(sender: string, ratePerSecond: number, now: number): number {
    if (ratePerSecond === 0) return now;
    const next = this.store.get(sender) ?? 0;
    const slot = Math.max(now, next);
    this.store.put(sender, slot + (1000 * this.partitionCount) / ratePerSecond);
    return slot;
  }
}

/** The night that applies to a user: their own quiet hours when set, else the strategy's default night. */
export function nightOf(settings: UserSettings | undefined, s: StrategySet): QuietRange {
  return settings?.quiet_hours ?? { start_minute: s.nightStartMinute, end_minute: s.nightEndMinute };
}

/** When the night ends if `at` falls into it; undefined when it does not. */
export function nightEnd(at: number, zone: string, night: QuietRange): number | undefined {
  return inQuietHours(at, zone, night) ? quietHoursEnd(at, zone, night) : undefined;
}

/** Whether the user turned this category or this sender off. */
export function optedOut(settings: UserSettings | undefined, category: string, sender: string): boolean {
  return (settings?.opted_out_categories?.includes(category) ?? false) || (settings?.muted_senders?.includes(sender) ?? false);
}
