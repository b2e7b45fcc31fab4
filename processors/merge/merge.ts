/**
 * The merge stage (docs/design.md, "merge"): one notification stands per (uid, conv_id) window, per
 * device, carrying the latest seq and unread count. Input: push candidates (TRIGGER and READ).
 * Outputs: merged notifications, and a MERGED / SUPPRESSED outcome for every trigger that does not
 * become one.
 *
 * Every trigger ends in exactly one of: a merged notification (LEADING or TRAILING), MERGED (folded
 * into a push that carries a higher seq), or SUPPRESSED `read` (read before its push went out).
 * Windows close by the wall clock (a punctuator over a schedule store holding the due time of each
 * (uid, conv_id): no scan of open windows), and also by event time when the device's next trigger
 * arrives after the window's end.
 *
 * Changelog writes (one record per (uid, conv_id) and commit at most, coalesced by the store): a
 * window is written when it opens (with its leading push) and whenever a trigger or READ changes
 * what it would send; at close only if a trailing update went out (so a restart cannot send it
 * again); once, as a tombstone, when its memory expires. A close with nothing to send and the
 * expiry of one device's window among others change nothing a restart would get wrong: the store
 * keeps them in memory only (replaceEquivalent), and a restored window past its end is closed the
 * same way by the first timer after the restore (the schedule is rebuilt with its due time).
 *
 * The store is capped per task (`maxEntries`): a trigger that opens an entry over the cap evicts
 * the entry due soonest, as if its timer fired now (see `evict`).
 */
import { withStores, type Processor, type ProcessorContext, type ProcessorSupplier, type StreamRecord } from '../../topology/api.ts';
import type { KeyValueStore, ScheduleStore } from '../../topology/stores.ts';
import { collapseId } from '../model/ids.ts';
import { compositeKey, keyParts } from '../model/keys.ts';
import { decisionOutcome, detailString, type DecisionReason } from '../model/outcomes.ts';
import type { Mention, PushCandidate, PushMerged, PushOutcome } from '../model/records.ts';
import { compileMergeOptions, mergeStores, type MergeConfig, type MergeOptions } from './options.ts';
import { carry, coveredSeq, earliestUntil, isRepeat, strongerMention, uncarry, type ConvWindows, type DeviceWindow } from './window.ts';
import { decodeConvWindows, dueOfEncoded, encodeConvWindows, type EncodedConvWindows } from './window-codec.ts';

type Out = PushMerged | PushOutcome;

/**
 * Creates the merge processor supplier, which declares the stage's stores (`mergeStores`); options
 * are validated here, once (ConfigError naming the key).
 */
export function merge(options: MergeOptions = {}): ProcessorSupplier<string, PushCandidate, string, Out> {
  const config = compileMergeOptions(options);
  return withStores(() => new MergeProcessor(config), mergeStores(config.stores));
}

class MergeProcessor implements Processor<string, PushCandidate, string, Out> {
  private ctx!: ProcessorContext<string, Out>;
  private windows!: KeyValueStore<EncodedConvWindows>;
  private timers!: ScheduleStore;

  constructor(private readonly config: MergeConfig) {}

  init(ctx: ProcessorContext<string, Out>): void {
    this.ctx = ctx;
    this.windows = ctx.getStateStore(this.config.stores.windows);
    this.timers = ctx.getStateStore(this.config.stores.windowTimers);
    // The schedule is not changelogged: after a restore it is rebuilt from the windows.
    if (this.timers.size === 0) for (const [key, encoded] of this.windows.entries()) this.timers.add(key, dueOfEncoded(encoded));
    ctx.schedule(this.config.punctuateIntervalMs, 'wall-clock', (now) => this.onTimers(now), { nextDueMs: () => this.timers.peekDueMs() });
  }

  /** A candidate of the online-filter, made from checked input (processors/model/inputs.ts). */
  process(record: StreamRecord<string, PushCandidate>): void {
    const c = record.value;
    if (c.kind === 'READ') this.onRead(c);
    else this.onTrigger(c, c.decided_at);
  }

  private onTrigger(c: PushCandidate, at: number): void {
    const key = compositeKey(c.uid, c.conv_id);
    const conv = this.load(key) ?? new Map<string, DeviceWindow>();
    let w: DeviceWindow | undefined = conv.get(c.device_id);
    let changed = false;
    if (w?.open && at >= w.until) changed = this.closeWindow(c.uid, c.conv_id, c.device_id, w, w.until);
    if (w && !w.open && at >= w.until) w = undefined;

    if (w && isRepeat(w, c)) {
      // The same message for this device again (its persisted record was produced twice): it has
      // its outcome from the first copy; a second would count one input twice (docs/design.md,
      // "At most one visible notification").
    } else if (w && c.seq <= w.read_seq) {
      this.outcome('SUPPRESSED', 'read', c, at);
    } else if (w && c.seq <= coveredSeq(w)) {
      // Out of order, or already carried: a push with a higher seq stands for it.
      this.outcome('MERGED', 'merged', c, at, this.mergedDetail(coveredSeq(w)));
      if (w.open) w.count += 1;
      changed ||= w.open;
    } else if (!w || !w.open) {
      w = this.open(c, at, w);
      changed = true;
    } else {
      if (w.carried) this.outcome('MERGED', 'merged', uncarry(w.carried, c.uid, c.device_id, c.conv_id, at), at, this.mergedDetail(c.seq));
      w.carried = carry(c);
      w.count += 1;
      w.mention = strongerMention(w.mention, c.mention);
      changed = true;
    }
    if (w) conv.set(c.device_id, w);
    this.store(key, conv, changed);
    if (this.windows.size > this.config.maxEntries) this.evict(at);
  }

  /**
   * Brings the store back to its cap: the (uid, conv) due soonest leaves, as if its timer fired
   * early. Its open windows close now, sending the trailing update they carry (the latest unread
   * count is never lost, it only goes out sooner: less merging under pressure); its closed windows'
   * memory is forgotten (a late trigger below their pushed seq would be pushed again).
   */
  private evict(at: number): void {
    while (this.windows.size > this.config.maxEntries) {
      const [next] = this.timers.popDue(Infinity, 1);
      if (!next) return;
      const encoded = this.windows.get(next.key);
      if (encoded === undefined || dueOfEncoded(encoded) !== next.dueMs) continue;
      const [uid, convId] = keyParts(next.key) as [string, string];
      let closedEarly = false;
      for (const [deviceId, w] of decodeConvWindows(encoded)) {
        if (!w.open) continue;
        this.closeWindow(uid, convId, deviceId, w, Math.max(at, this.ctx.wallClockTimeMs()));
        closedEarly = true;
      }
      this.windows.delete(next.key);
      this.config.listener?.evicted(closedEarly ? 'closed-early' : 'forgotten');
    }
  }

  private open(c: PushCandidate, at: number, previous: DeviceWindow | undefined): DeviceWindow {
    // A window runs from when its first trigger is seen: while the stage catches up on a backlog,
    // windows stay open for their full length and keep merging instead of closing at once.
    const w: DeviceWindow = {
      open: true,
      until: Math.max(at, this.ctx.wallClockTimeMs()) + this.config.windowMs,
      pushed_seq: previous?.pushed_seq ?? -1,
      carried: null,
      count: 0,
      mention: 'NONE',
      read_seq: previous?.read_seq ?? -1,
    };
    if (this.config.mode === 'leading') {
      this.emit(c, w, 'LEADING', 1, c.mention, at);
      w.pushed_seq = c.seq;
    } else {
      w.carried = carry(c);
      w.count = 1;
      w.mention = c.mention;
    }
    return w;
  }

  /** Closes a device's window at `at`: sends the trailing update if a trigger is pending; true if it did. */
  private closeWindow(uid: string, convId: string, deviceId: string, w: DeviceWindow, at: number): boolean {
    const carried = w.carried;
    if (carried) {
      const trailingSilent = this.config.mode === 'leading';
      this.emit(uncarry(carried, uid, deviceId, convId, at), w, 'TRAILING', w.count, w.mention, at, trailingSilent);
      w.pushed_seq = Math.max(w.pushed_seq, carried.seq);
    }
    w.open = false;
    w.carried = null;
    w.count = 0;
    w.mention = 'NONE';
    w.until = at + this.config.retentionMs;
    return carried !== null;
  }

  /** A READ of the conversation cancels every device's pending trailing update up to its seq. */
  private onRead(read: PushCandidate): void {
    const key = compositeKey(read.uid, read.conv_id);
    const conv = this.load(key);
    if (!conv) return;
    for (const [deviceId, w] of conv) {
      w.read_seq = Math.max(w.read_seq, read.seq);
      if (w.open && w.carried && w.carried.seq <= read.seq) {
        this.outcome('SUPPRESSED', 'read', uncarry(w.carried, read.uid, deviceId, read.conv_id, read.decided_at), read.decided_at);
        w.carried = null;
        w.count = 0;
        w.mention = 'NONE';
      }
    }
    this.store(key, conv, true);
  }

  /**
   * Closes due windows and forgets expired ones; the due time of a (uid, conv) is its earliest
   * `until`. An entry whose (uid, conv) has since moved to another due time (or gone) is stale and
   * skipped: the entry for the current due time is in the schedule too (see `store`). Returns false
   * when no entry was due (the runtime then has nothing to commit for it).
   */
  private onTimers(now: number): boolean {
    const due = this.timers.popDue(now);
    for (const { key, dueMs } of due) {
      const encoded = this.windows.get(key);
      if (encoded === undefined || dueOfEncoded(encoded) !== dueMs) continue;
      const conv = decodeConvWindows(encoded);
      const [uid, convId] = keyParts(key) as [string, string];
      let sent = false;
      for (const [deviceId, w] of conv) {
        if (w.open && w.until <= now && this.closeWindow(uid, convId, deviceId, w, w.until)) sent = true;
        if (!w.open && w.until <= now) conv.delete(deviceId);
      }
      this.store(key, conv, sent);
    }
    return due.length > 0;
  }

  /**
   * Writes the conversation's windows (or deletes them). `changed`: something a restart must not
   * lose (a push or trailing update sent, a trigger carried or merged, a READ); otherwise the new
   * state is the old one seen later (a quiet close, a device's memory expired) and is kept in memory
   * only. An unchanged encoding writes nothing. When the earliest `until` changes, the schedule
   * gets an entry for the new due time; the entry for the old one becomes stale.
   */
  private store(key: string, conv: ConvWindows, changed: boolean): void {
    const previous = this.windows.get(key);
    const due = earliestUntil(conv);
    if (due === Infinity) {
      if (previous !== undefined) this.windows.delete(key);
      return;
    }
    const encoded = encodeConvWindows(conv);
    if (encoded === previous) return;
    if (changed || previous === undefined) this.windows.put(key, encoded);
    else this.windows.replaceEquivalent(key, encoded);
    if (previous === undefined || dueOfEncoded(previous) !== due) this.timers.add(key, due);
  }

  private load(key: string): ConvWindows | undefined {
    const encoded = this.windows.get(key);
    return encoded === undefined ? undefined : decodeConvWindows(encoded);
  }

  private emit(c: PushCandidate, w: DeviceWindow, kind: 'LEADING' | 'TRAILING', mergedCount: number, mention: Mention, at: number, silent = false): void {
    // The trigger's message and presence, as a window carries them, for the trigger's key. Written
    // out field by field: one object of one shape per push, not a spread copy grown by twelve fields.
    const value: PushMerged = {
      seq: c.seq,
      msg_id: c.msg_id,
      conv_type: c.conv_type,
      sender_uid: c.sender_uid,
      unread_cnt: c.unread_cnt,
      title: c.title,
      summary: c.summary,
      sensitive: c.sensitive,
      persisted_at: c.persisted_at,
      app_id: c.app_id,
      presence: c.presence,
      uid: c.uid,
      device_id: c.device_id,
      conv_id: c.conv_id,
      mention,
      kind,
      silent,
      merged_count: mergedCount,
      collapse_id: collapseId(c.uid, c.conv_id),
      window_start: w.until - this.config.windowMs,
      decided_at: at,
    };
    if (c.hb !== null && c.hb !== undefined) value.hb = c.hb;
    this.ctx.forward({ key: c.uid, value, timestamp: at }, this.config.outputs.merged);
  }

  /** A merged trigger's detail: the seq whose push carries it and the window's length. */
  private mergedDetail(bySeq: number): string | null {
    return detailString({ by: bySeq, win: this.config.windowMs });
  }

  private outcome(status: 'MERGED' | 'SUPPRESSED', reason: DecisionReason, c: PushCandidate, at: number, detail: string | null = null): void {
    const value = decisionOutcome('merge', status, reason, c, at, detail, { collapse_id: collapseId(c.uid, c.conv_id) });
    this.ctx.forward({ key: c.uid, value, timestamp: at }, this.config.outputs.outcomes);
  }
}
