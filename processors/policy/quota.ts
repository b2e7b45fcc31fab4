/**
 * The vendor daily quota ledger (docs/design.md, "policy"): usage per (vendor, app, day) in a
 * changelogged store. Coordination-free: each partition may spend an even share of the daily quota
 * (keys are uniformly hashed over partitions). A channel over its share is skipped; overflow is
 * never retried.
 */
import type { KeyValueStore } from '../../topology/stores.ts';
import { compositeKey } from '../model/keys.ts';
import { localDay } from './quiet-hours.ts';

/** vendor → app id (or `*` for every app) → messages per day for the whole application. */
export type DailyQuotas = Readonly<Record<string, Readonly<Record<string, number>>>>;

export class QuotaLedger {
  constructor(
    private readonly store: KeyValueStore<number>,
    private readonly quotas: DailyQuotas,
    private readonly partitionCount: number,
    private readonly timeZone: string,
  ) {}

  /** This partition's share of the daily quota of (vendor, app); Infinity when no quota is configured. */
  share(vendor: string, appId: string): number {
    const perVendor = this.quotas[vendor];
    const daily = perVendor?.[appId] ?? perVendor?.['*'];
    return daily === undefined ? Infinity : Math.floor(daily / this.partitionCount);
  }

  used(vendor: string, appId: string, at: number): number {
    return this.store.get(compositeKey(vendor, appId, localDay(at, this.timeZone))) ?? 0;
  }

  /** Whether (vendor, app) still has quota on the day of `at`. */
  hasRoom(vendor: string, appId: string, at: number): boolean {
    const share = this.share(vendor, appId);
    return share === Infinity || this.used(vendor, appId, at) < share;
  }

  /** Records one submission against (vendor, app) on the day of `at`; yesterday's entry is dropped. */
  charge(vendor: string, appId: string, at: number): void {
    if (this.share(vendor, appId) === Infinity) return;
    const day = localDay(at, this.timeZone);
    const key = compositeKey(vendor, appId, day);
    this.store.put(key, (this.store.get(key) ?? 0) + 1);
    const yesterday = compositeKey(vendor, appId, localDay(at - 86_400_000, this.timeZone));
    if (this.store.get(yesterday) !== undefined) this.store.delete(yesterday);
  }
}
