import { createHash } from 'node:crypto';
import type { Processor, ProcessorContext, ProcessorSupplier, StreamRecord } from '../../topology/api.ts';
import { keyValueStore, timerStore, type KeyValueStore, type StoreDefinition, type TimerStore } from '../../topology/stores.ts';
import { TASK_STATUS, type ByMessageRecord, type MessageReceipt, type PushReceipt, type ReceiptJoinListener, type SubmissionRef, type TaskStatusWriter } from './records.ts';

/** Header carrying the task's persisted_at (epoch ms) on matched receipts, for latency figures. */
export const PERSISTED_AT_HEADER = 'push-persisted-at';

export const RECEIPT_JOIN_STORES = {
  messages: 'receipt-join-messages',
  expiry: 'receipt-join-expiry',
} as const;

export function receiptJoinStores(): StoreDefinition[] {
  return [keyValueStore<MessageEntry>(RECEIPT_JOIN_STORES.messages), timerStore(RECEIPT_JOIN_STORES.expiry)];
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
  readonly listener?: ReceiptJoinListener;
}

/** State of one (vendor, vendor message id). */
interface MessageEntry {
  /** Submissions the vendor accepted under this id (more than one only for batch sends). */
  subs: SubmissionRef[];
  /** Receipt token hash (or `*` without a token) → index in `subs`. */
  assigned: Record<string, number>;
  /** `${index}|${status}` already emitted: duplicate receipts are not emitted again. */
  emitted: string[];
  /** Receipts that arrived before their submission. */
  pending: MessageReceipt[];
}

/**
 * `receipt-join`: matches receipts to submissions by (vendor, vendor message id) and emits one
 * push-receipt record per (submission, status): keyed by uid when matched, by the vendor message
 * id when a receipt found no submission within `pendingMs`. A duplicate receipt (same submission
 * and status) is dropped here, so downstream counts (token failures) see it once; the event id is
 * deterministic as well, so replays dedupe in ClickHouse. Sets im_push_task.status through the
 * injected writer, whose flush the runtime awaits before committing.
 *
 * Stores: `receipt-join-messages` (kv) and `receipt-join-expiry` (timer): retention is bounded.
 */
export function receiptJoinProcessor(options: ReceiptJoinOptions): ProcessorSupplier<string, ByMessageRecord, string, PushReceipt> {
  const retentionMs = options.retentionMs ?? 3 * 24 * 3_600_000;
  const pendingMs = options.pendingMs ?? 10 * 60_000;
  const listener = options.listener ?? {};
  return () => {
    let ctx: ProcessorContext<string, PushReceipt>;
    let messages: KeyValueStore<MessageEntry>;
    let expiry: TimerStore;

    const emit = (entry: MessageEntry, index: number, r: MessageReceipt, timestamp: number) => {
      const sub = entry.subs[index]!;
      const mark = `${index}|${r.status}`;
      if (entry.emitted.includes(mark)) {
        listener.duplicate?.(r.vendor);
        return;
      }
      entry.emitted.push(mark);
      ctx.forward({
        key: sub.uid,
        value: {
          event_id: receiptEventId(r.vendor, r.vendor_message_id, sub.task_id, sub.device_id, r.status),
          vendor: r.vendor,
          vendor_message_id: r.vendor_message_id,
          status: r.status,
          code: r.code,
          at: r.at,
          received_at: r.received_at,
          matched: true,
          task_id: sub.task_id,
          uid: sub.uid,
          device_id: sub.device_id,
          app_id: sub.app_id,
          platform: sub.platform,
          conv_id: sub.conv_id,
          seq: sub.seq,
        },
        timestamp,
        headers: { [PERSISTED_AT_HEADER]: String(sub.persisted_at) },
      });
      options.taskStatus.update({ taskId: sub.task_id, deviceId: sub.device_id, status: r.status === 'DELIVERED' ? TASK_STATUS.delivered : TASK_STATUS.failed, at: r.at });
    };

    /**
     * Finds the receipt's submission: by token hash when the receipt and a submission both carry
     * one; otherwise the first submission not yet claimed by another token (arrival order, for
     * receipts or outcomes without a hash). A hashed receipt is never given to a submission whose
     * hash differs: until its own submission arrives (the outcomes of one batch come from several
     * uid partitions) it waits with the pending receipts.
     */
    const match = (entry: MessageEntry, r: MessageReceipt, timestamp: number) => {
      const slot = r.token_hash ?? '*';
      let index = entry.assigned[slot];
      if (index === undefined) {
        const own = r.token_hash === null ? -1 : entry.subs.findIndex((s) => s.token_hash === r.token_hash);
        if (own >= 0) index = own;
        else {
          // Arrival order: a lone submission takes every receipt, else the first one not yet claimed.
          const taken = new Set(Object.values(entry.assigned));
          const mayTake = (s: SubmissionRef) => r.token_hash === null || !hashed(s);
          index = entry.subs.length === 1 && mayTake(entry.subs[0]!) ? 0 : entry.subs.findIndex((s, i) => !taken.has(i) && mayTake(s));
        }
        if (index < 0) {
          if (r.token_hash !== null && entry.subs.some(hashed)) keepPending(entry, r);
          else emitUnmatched([r], timestamp);
          return;
        }
        entry.assigned[slot] = index;
      }
      emit(entry, index, r, timestamp);
    };

    const hashed = (s: SubmissionRef) => typeof s.token_hash === 'string';

    const keepPending = (entry: MessageEntry, r: MessageReceipt) => {
      if (entry.pending.some((p) => p.token_hash === r.token_hash && p.status === r.status)) listener.duplicate?.(r.vendor);
      else entry.pending.push(r);
    };

    const emitUnmatched = (receipts: MessageReceipt[], timestamp: number) => {
      for (const r of receipts) {
        listener.unmatched?.(r.vendor, 1);
        ctx.forward({
          key: r.vendor_message_id,
          value: {
            event_id: receiptEventId(r.vendor, r.vendor_message_id, '', r.token_hash ?? '', r.status),
            vendor: r.vendor,
            vendor_message_id: r.vendor_message_id,
            status: r.status,
            code: r.code,
            at: r.at,
            received_at: r.received_at,
            matched: false,
            task_id: null,
            uid: null,
            device_id: null,
            app_id: r.app_id,
            platform: null,
            conv_id: null,
            seq: null,
          },
          timestamp,
        });
      }
    };

    const processor: Processor<string, ByMessageRecord, string, PushReceipt> = {
      init(context) {
        ctx = context;
        messages = context.getStateStore<KeyValueStore<MessageEntry>>(RECEIPT_JOIN_STORES.messages);
        expiry = context.getStateStore<TimerStore>(RECEIPT_JOIN_STORES.expiry);
        context.schedule(options.expiryIntervalMs ?? 60_000, 'wall-clock', (now) => {
          for (const { key } of expiry.popDue(now)) {
            const entry = messages.get(key);
            if (!entry) continue;
            if (entry.pending.length > 0) emitUnmatched(entry.pending, now);
            messages.delete(key);
          }
        });
      },

      process(record: StreamRecord<string, ByMessageRecord>) {
        const key = record.key;
        const now = ctx.wallClockTimeMs();
        const entry: MessageEntry = messages.get(key) ?? { subs: [], assigned: {}, emitted: [], pending: [] };
        const value = record.value;
        if (value.type === 'submission') {
          if (!entry.subs.some((s) => s.task_id === value.submission.task_id && s.device_id === value.submission.device_id)) entry.subs.push(value.submission);
          const waiting = entry.pending;
          entry.pending = [];
          for (const r of waiting) match(entry, r, record.timestamp);
          expiry.set(key, now + retentionMs);
        } else if (entry.subs.length > 0) {
          match(entry, value.receipt, record.timestamp);
        } else {
          keepPending(entry, value.receipt);
          if (expiry.dueTime(key) === undefined) expiry.set(key, now + pendingMs);
        }
        messages.put(key, entry);
      },

      flush: () => options.taskStatus.flush(),
    };
    return processor;
  };
}

/** Deterministic id of one receipt status of one submission: duplicates and replays share it. */
export function receiptEventId(vendor: string, vendorMessageId: string, taskId: string, deviceId: string, status: string): string {
  return createHash('sha256').update(['receipt', vendor, vendorMessageId, taskId, deviceId, status].join('\u001f')).digest('hex').slice(0, 32);
}

