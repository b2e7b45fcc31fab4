import { withStores, type Processor, type ProcessorContext, type ProcessorSupplier, type StreamRecord } from '../../topology/api.ts';
import { keyValueStore, timerStore, type KeyValueStore, type TimerStore } from '../../topology/stores.ts';
import { addPending, addSubmission, assignReceipt, dueOf, emptyEntry, markEmitted, type MessageEntry } from './entry.ts';
import { writableReceipt } from './validate.ts';
import { receiptEventId } from '../model/ids.ts';
import { compositeKey } from '../model/keys.ts';
import { TASK_STATUS } from '../model/task-status.ts';
import { type ByMessageRecord, type MessageReceipt, type PushReceipt, type ReceiptJoinListener, type SubmissionRef, type TaskStatusWriter } from './records.ts';
import { withFields } from '../../common/objects.ts';

/** Header carrying the task's persisted_at (epoch ms) on matched receipts, for latency figures. */
export const PERSISTED_AT_HEADER = 'push-persisted-at';

/**
 * `messages` holds each entry with its own due time (changelogged); `due` indexes those due times
 * for the expiry punctuator and is not changelogged: it is rebuilt from `messages` after a restore.
 * The store `receipt-join-expiry` of earlier versions (a changelogged timer store) is no longer
 * read: its due times are derived from the entries they belonged to (entry.ts, `dueOf`).
 */
export const RECEIPT_JOIN_STORES: ReceiptJoinStores = {
  messages: 'receipt-join-messages',
  due: 'receipt-join-due',
  byUid: false,
};

/** The stores of the join that runs beside push.outcomes, on records keyed by uid (pipeline/apps/receipts.ts). */
export const RECEIPT_JOIN_BY_UID_STORES: ReceiptJoinStores = {
  messages: 'receipt-join-by-uid-messages',
  due: 'receipt-join-by-uid-due',
  byUid: true,
};

export interface ReceiptJoinStores {
  readonly messages: string;
  readonly due: string;
  /**
   * The input is keyed by uid, and an entry by compositeKey(uid, vendor, vendor message id), so its
   * store key names the partition it belongs to (pipeline/repartition/store-keys.ts). Otherwise the
   * input is keyed by compositeKey(vendor, vendor message id), and so is the entry.
   */
  readonly byUid: boolean;
}

export interface ReceiptJoinOptions {
  /** Writes im_push_task.status 2 / 3. */
  readonly taskStatus: TaskStatusWriter;
  /** How long a submission waits for its receipts, ms. Default 3 days (vendors hold offline pushes up to their TTL). */
  readonly retentionMs?: number;
  /** How long a receipt that arrived before its submission waits for it, ms. Default 10 minutes. */
  readonly pendingMs?: number;
  /** Wall-clock interval of the expiry punctuator, ms. Default 60 000. */
  readonly expiryIntervalMs?: number;
  /**
   * Most entries one task's join keeps (an entry costs about 1 KB of heap). Past it, the entries
   * due soonest are forgotten early, as at their due time (their waiting receipts go out
   * unmatched), and counted through `listener.evicted`. Default 100 000.
   */
  readonly maxEntries?: number;
  readonly listener?: ReceiptJoinListener;
}

/**
 * `receipt-join`: matches receipts to submissions by (vendor, vendor message id) and emits one
 * push-receipt record per (submission, status): keyed by uid when matched, by the vendor message
 * id when a receipt found no submission within `pendingMs`. A duplicate receipt (same submission
 * and status) is dropped here, so downstream counts (token failures) see it once; the event id is
 * deterministic as well, so replays dedupe in ClickHouse. Sets im_push_task.status through the
 * injected writer, whose flush the runtime awaits before committing.
 *
 * An entry is written only when it changes (a duplicate receipt or a replayed submission writes
 * nothing; a delivery to a lone submission changes it in memory only, see `onReceipt`), and it
 * carries its own expiry, so a key costs one changelog record per commit at most.
 * Retention is bounded: an entry is deleted at its due time. The supplier declares both stores
 * (`stores`, default RECEIPT_JOIN_STORES). The same join runs on push.receipts.by-message and
 * beside push.outcomes on records keyed by uid (`RECEIPT_JOIN_BY_UID_STORES`).
 */
export function receiptJoinProcessor(
  options: ReceiptJoinOptions,
  stores: ReceiptJoinStores = RECEIPT_JOIN_STORES,
): ProcessorSupplier<string, ByMessageRecord, string, PushReceipt> {
  return withStores(
    () => new ReceiptJoinProcessor(options, stores),
    [keyValueStore<MessageEntry>(stores.messages), timerStore(stores.due, { changelog: false })],
  );
}

class ReceiptJoinProcessor implements Processor<string, ByMessageRecord, string, PushReceipt> {
  private ctx!: ProcessorContext<string, PushReceipt>;
  private messages!: KeyValueStore<MessageEntry>;
  private due!: TimerStore;
  private readonly retentionMs: number;
  private readonly pendingMs: number;
  private readonly maxEntries: number;
  private readonly listener: ReceiptJoinListener;

  constructor(
    private readonly options: ReceiptJoinOptions,
    private readonly stores: ReceiptJoinStores,
  ) {
    this.retentionMs = options.retentionMs ?? 3 * 24 * 3_600_000;
    this.pendingMs = options.pendingMs ?? 10 * 60_000;
    this.maxEntries = options.maxEntries ?? 100_000;
    this.listener = options.listener ?? {};
  }

  init(ctx: ProcessorContext<string, PushReceipt>): void {
    this.ctx = ctx;
    this.messages = ctx.getStateStore(this.stores.messages);
    this.due = ctx.getStateStore(this.stores.due);
    if (this.due.size === 0) {
      for (const [key, entry] of this.messages.entries()) {
        this.dropUnwritable(key, entry);
        this.due.set(key, dueOf(entry, this.retentionMs, this.pendingMs));
      }
    }
    ctx.schedule(this.options.expiryIntervalMs ?? 60_000, 'wall-clock', (now) => this.expire(now));
  }

  process(record: StreamRecord<string, ByMessageRecord>): void {
    const value = record.value;
    const key = this.stores.byUid ? compositeKey(record.key, ...messageOf(value)) : record.key;
    // A new entry holds receipts for `pendingMs`; a submission extends it to the retention.
    const entry = this.messages.get(key) ?? emptyEntry(this.ctx.wallClockTimeMs() + this.pendingMs);
    entry.due = dueOf(entry, this.retentionMs, this.pendingMs);
    const change =
      value.type === 'submission' ? this.onSubmission(entry, value.submission, record.timestamp) : this.onReceipt(entry, value.receipt, record.timestamp);
    if (change === 'none') return;
    if (change === 'memory') return this.messages.replaceEquivalent(key, entry);
    this.messages.put(key, entry);
    this.due.set(key, dueOf(entry, this.retentionMs, this.pendingMs));
    const over = this.messages.size - this.maxEntries;
    if (over > 0) {
      // The soonest due go first: pending-only entries, then the oldest submissions.
      const evicted = this.due.popDue(Number.MAX_SAFE_INTEGER, over);
      this.forget(evicted, this.ctx.wallClockTimeMs());
      this.listener.evicted?.(evicted.length);
    }
  }

  flush(): Promise<void> {
    return this.options.taskStatus.flush();
  }

  /**
   * Pending receipts restored from state written before the ingest rules (validate.ts) may hold a
   * time no Avro long can carry; emitting one (matched, or unmatched at expiry) would fail the
   * stage on every restart. They are dropped here, once, and counted.
   */
  private dropUnwritable(key: string, entry: MessageEntry): void {
    const keep = entry.pending.filter(writableReceipt);
    if (keep.length === entry.pending.length) return;
    for (const r of entry.pending) if (!writableReceipt(r)) this.listener.invalid?.(r.vendor);
    entry.pending = keep;
    this.messages.put(key, entry);
  }

  /** A new submission: the receipts waiting for it are matched, and the entry waits the full retention. */
  private onSubmission(entry: MessageEntry, sub: SubmissionRef, timestamp: number): Change {
    if (!addSubmission(entry, sub)) return 'none';
    const waiting = entry.pending;
    entry.pending = [];
    for (const r of waiting) this.onReceipt(entry, r, timestamp);
    entry.due = this.ctx.wallClockTimeMs() + this.retentionMs;
    return 'logged';
  }

  /**
   * How the receipt changed the entry. A DELIVERED receipt of an entry with one submission changes
   * it in `memory` only: its emitted mark serves just to drop a later copy of the receipt, and a
   * restore without it (after a restart or a move) would emit such a copy once more with the same
   * event id, which every reader takes once (ClickHouse folds rows by event id, a success leaves
   * token health as it is, a task's status never moves backwards). Its assignment to the lone
   * submission is made the same way again. Every other change is `logged`: a failure must reach
   * token health once, and a batch's assignments are made in arrival order.
   */
  private onReceipt(entry: MessageEntry, r: MessageReceipt, timestamp: number): Change {
    if (entry.subs.length === 0) return this.keepPending(entry, r);
    const target = assignReceipt(entry, r);
    if (target.kind === 'other-app') {
      this.listener.crossApp?.(r.vendor, r.app_id);
      return 'none';
    }
    if (target.kind === 'pending') return this.keepPending(entry, r);
    if (target.kind === 'unmatched') {
      this.emitUnmatched([r], timestamp);
      return 'none';
    }
    const emitted = this.emitMatched(entry, target.index, r, timestamp);
    if (emitted && r.status === 'DELIVERED' && entry.subs.length === 1) return 'memory';
    return emitted || target.assigned ? 'logged' : 'none';
  }

  private keepPending(entry: MessageEntry, r: MessageReceipt): Change {
    if (addPending(entry, r)) return 'logged';
    this.listener.duplicate?.(r.vendor);
    return 'none';
  }

  /** Emits the receipt for submission `index` unless that (submission, status) was emitted before. */
  private emitMatched(entry: MessageEntry, index: number, r: MessageReceipt, timestamp: number): boolean {
    if (!markEmitted(entry, index, r.status)) {
      this.listener.duplicate?.(r.vendor);
      return false;
    }
    const sub = entry.subs[index]!;
    this.ctx.forward({
      key: sub.uid,
      value: withFields(receiptFields(r), {
        event_id: receiptEventId(r.vendor, r.vendor_message_id, sub.task_id, sub.device_id, r.status),
        matched: true,
        task_id: sub.task_id,
        uid: sub.uid,
        device_id: sub.device_id,
        app_id: sub.app_id,
        platform: sub.platform,
        conv_id: sub.conv_id,
        seq: sub.seq,
      }),
      timestamp,
      headers: { [PERSISTED_AT_HEADER]: String(sub.persisted_at) },
    });
    const status = r.status === 'DELIVERED' ? TASK_STATUS.delivered : TASK_STATUS.failed;
    this.options.taskStatus.update({ taskId: sub.task_id, uid: sub.uid, deviceId: sub.device_id, status, at: r.at });
    return true;
  }

  private emitUnmatched(receipts: readonly MessageReceipt[], timestamp: number): void {
    for (const r of receipts) {
      this.listener.unmatched?.(r.vendor, 1);
      this.ctx.forward({
        key: r.vendor_message_id,
        value: withFields(receiptFields(r), {
          event_id: receiptEventId(r.vendor, r.vendor_message_id, '', r.token_hash ?? '', r.status),
          matched: false,
          task_id: null,
          uid: null,
          device_id: null,
          app_id: r.app_id,
          platform: null,
          conv_id: null,
          seq: null,
        }),
        timestamp,
      });
    }
  }

  /** Forgets every entry due by `now`. */
  private expire(now: number): void {
    this.forget(this.due.popDue(now), now);
  }

  /** Forgets the entries; receipts still waiting for a submission go out unmatched. */
  private forget(due: ReadonlyArray<{ key: string }>, now: number): void {
    for (const { key } of due) {
      const entry = this.messages.get(key);
      if (!entry) continue;
      if (entry.pending.length > 0) this.emitUnmatched(entry.pending, now);
      this.messages.delete(key);
    }
  }
}

/** What a record changed in its entry: nothing, only what a restore may lose (`onReceipt`), or state a restart needs. */
type Change = 'none' | 'memory' | 'logged';

/** The (vendor, vendor message id) a record is about. */
function messageOf(value: ByMessageRecord): [string, string] {
  return value.type === 'submission' ? [value.vendor, value.vendor_message_id] : [value.receipt.vendor, value.receipt.vendor_message_id];
}

function receiptFields(r: MessageReceipt): Pick<PushReceipt, 'vendor' | 'vendor_message_id' | 'status' | 'code' | 'at' | 'received_at'> {
  return { vendor: r.vendor, vendor_message_id: r.vendor_message_id, status: r.status, code: r.code, at: r.at, received_at: r.received_at };
}
