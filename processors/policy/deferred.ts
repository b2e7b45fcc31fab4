/**
 * Deferred release at the end of quiet hours (docs/design.md, "policy", optional): while a user's
 * quiet hours suppress a conversation, the newest notification per (uid, device, conv) is kept;
 * when the quiet period ends it is released as one DEFERRED push, unless the conversation was read
 * meanwhile. Every notification it supersedes is counted as SUPPRESSED `dnd`; a read one as
 * SUPPRESSED `read`. Releases are found through a timer store, never by scanning.
 */
import type { KeyValueStore, TimerStore } from '../../topology/stores.ts';
import { compositeKey } from '../model/keys.ts';
import type { PushMerged } from '../model/records.ts';
import { withFields } from '../../common/objects.ts';

export interface DeferredPush {
  merged: PushMerged;
  /** Notifications this release stands for. */
  count: number;
}

export class DeferredReleases {
  constructor(
    private readonly store: KeyValueStore<DeferredPush>,
    private readonly timers: TimerStore,
  ) {}

  /**
   * Keeps `m` for release at `releaseAt`. Returns the notification it supersedes (to be counted as
   * suppressed), or `m` itself when a newer one is already kept.
   */
  defer(m: PushMerged, releaseAt: number): PushMerged | undefined {
    const key = compositeKey(m.uid, m.device_id, m.conv_id);
    const kept = this.store.get(key);
    if (kept && kept.merged.seq >= m.seq) {
      this.store.put(key, withFields(kept, { count: kept.count + m.merged_count }));
      return m;
    }
    this.store.put(key, { merged: { ...m }, count: (kept?.count ?? 0) + m.merged_count });
    this.timers.set(key, Math.max(releaseAt, this.timers.dueTime(key) ?? 0));
    return kept?.merged;
  }

  /** A READ of the conversation up to `seq` on any device: returns the kept notifications it cancels. */
  read(uid: string, convId: string, seq: number, deviceIds: readonly string[]): PushMerged[] {
    const cancelled: PushMerged[] = [];
    for (const device of deviceIds) {
      const key = compositeKey(uid, device, convId);
      const kept = this.store.get(key);
      if (!kept || kept.merged.seq > seq) continue;
      cancelled.push(kept.merged);
      this.store.delete(key);
      this.timers.cancel(key);
    }
    return cancelled;
  }

  /** Removes and returns every kept notification due by `now`. */
  due(now: number): DeferredPush[] {
    const out: DeferredPush[] = [];
    for (const { key } of this.timers.popDue(now)) {
      const kept = this.store.get(key);
      if (!kept) continue;
      this.store.delete(key);
      out.push(kept);
    }
    return out;
  }
}
