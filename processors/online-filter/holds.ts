/**
 * The online-filter's holds (docs/design.md, "online-filter", row "online"): messages held for an
 * online device until its downlink ACK or the hold window's end.
 *
 * One store is durable: `online-filter-holds`, (uid, device, conv) → the held messages, each with
 * its due time. One record per key per commit says everything a restart needs. What finds a hold
 * fast is derived from it and rebuilt at init, never changelogged:
 * - the due-time index, a TimerStore of the hold keys (the store `online-filter-hold-timers`, not
 *   changelogged: its due times are recomputed from the holds);
 * - the conversations held per device, so that a device's next event first releases its own due
 *   holds (not in the device's presence, where it would cost a presence write for every held
 *   message; presenceStoreSerde drops a `heldConvs` field that values written by older versions carry).
 */
import type { KeyValueStore, TimerStore } from '../../topology/stores.ts';
import { compositeKey } from '../model/keys.ts';
import type { MessagePersisted } from '../model/records.ts';

/** Messages held for one (uid, device, conv), waiting for the device's ACK. */
export interface HoldEntry {
  uid: string;
  device_id: string;
  conv_id: string;
  /** `hb`: the device's heartbeat age when the message was held, ms (absent in entries held before it was recorded). */
  messages: Array<{ message: MessagePersisted; due_at: number; hb?: number }>;
}

const NONE: readonly string[] = Object.freeze([]);

export class Holds {
  /** compositeKey(uid, device) → conversations with a hold for that device. */
  private readonly convsByDevice = new Map<string, string[]>();

  constructor(
    private readonly store: KeyValueStore<HoldEntry>,
    private readonly timers: TimerStore,
  ) {}

  /** Rebuilds the indexes from the durable holds (at init, after a restore). */
  rebuild(): void {
    this.convsByDevice.clear();
    for (const [key, entry] of this.store.entries()) this.index(key, entry);
  }

  get(key: string): HoldEntry | undefined {
    return this.store.get(key);
  }

  /** Stores the entry (at least one message) and moves its timer to its earliest due time. */
  put(key: string, entry: HoldEntry): void {
    this.store.put(key, entry);
    this.index(key, entry);
  }

  delete(key: string, entry: HoldEntry): void {
    this.store.delete(key);
    this.timers.cancel(key);
    const deviceKey = compositeKey(entry.uid, entry.device_id);
    const convs = this.convsByDevice.get(deviceKey);
    if (!convs) return;
    const at = convs.indexOf(entry.conv_id);
    if (at >= 0) convs.splice(at, 1);
    if (convs.length === 0) this.convsByDevice.delete(deviceKey);
  }

  dueTime(key: string): number | undefined {
    return this.timers.dueTime(key);
  }

  popDue(nowMs: number): Array<{ key: string; dueMs: number }> {
    return this.timers.popDue(nowMs);
  }

  /** When the earliest hold is due; undefined when nothing is held. */
  nextDueMs(): number | undefined {
    return this.timers.peekDueMs();
  }

  /** The conversations held for the device (compositeKey(uid, device)): a snapshot, safe to iterate while releasing. */
  heldConvs(deviceKey: string): readonly string[] {
    const convs = this.convsByDevice.get(deviceKey);
    return convs ? [...convs] : NONE;
  }

  private index(key: string, entry: HoldEntry): void {
    let due = Infinity;
    for (const h of entry.messages) if (h.due_at < due) due = h.due_at;
    this.timers.set(key, due);
    const deviceKey = compositeKey(entry.uid, entry.device_id);
    const convs = this.convsByDevice.get(deviceKey);
    if (!convs) this.convsByDevice.set(deviceKey, [entry.conv_id]);
    else if (!convs.includes(entry.conv_id)) convs.push(entry.conv_id);
  }
}
