/**
 * Rows of the ClickHouse `push_events` table (migrations/clickhouse/001_push_events.sql) and how
 * push-outcome and push-receipt records become rows. The mapping is deterministic: the same record
 * always gives the same row (same `event_id`, same sorting key), which is what makes replays and
 * duplicate receipts harmless.
 */
import type { OutcomeStatus, PushOutcome, PushReceipt } from '../../processors/model/records.ts';

/** A push-outcome record as decoded from push.outcomes (the one type, processors/model/records.ts). */
export type PushOutcomeRecord = Readonly<PushOutcome>;

/** A push-receipt record as decoded from push.receipts (processors/model/records.ts). */
export type PushReceiptRecord = Readonly<PushReceipt>;

export type PushEventKind =
  'submitted' | 'accepted' | 'delivered' | 'failed' | 'dead_token' | 'throttled' | 'merged' | 'suppressed' | 'dropped' | 'skipped_duplicate';

/** One row of `push_events`, in the JSONEachRow shape ClickHouse 18.16 accepts. */
export interface PushEventRow {
  event_id: string;
  /** Unix seconds (DateTime('UTC')). */
  event_time: number;
  /** Epoch milliseconds of the same instant. */
  event_ms: number;
  kind: PushEventKind;
  source: 'outcome' | 'receipt';
  stage: string;
  task_id: string;
  uid: string;
  device_id: string;
  conv_id: string;
  seq: number;
  msg_id: string;
  app_id: string;
  platform: string;
  vendor: string;
  reason: string;
  code: string;
  vendor_message_id: string;
  attempts: number;
  /** Unix seconds. */
  persisted_time: number;
  latency_ms: number | null;
  /** Epoch ms IM persisted the message (outcomes only; migrations/clickhouse/004_trace_columns.sql). */
  persisted_ms: number | null;
  /** The notification's collapse id (outcomes that carry one). */
  collapse_id: string | null;
  /** sha256 of the token a fan-out outcome used, hex; never the token. */
  token_hash: string | null;
  /** The facts behind the decision, `k=v;...` (migrations/clickhouse/005_decision_detail.sql); null on receipts. */
  detail: string | null;
  /** Business pushes only (migrations/clickhouse/006_business.sql): the sender, category and campaign; absent (the column's '') otherwise. */
  sender?: string;
  category?: string;
  campaign_id?: string;
}

const OUTCOME_KIND: Readonly<Record<OutcomeStatus, PushEventKind>> = {
  SUBMITTED: 'submitted',
  ACCEPTED: 'accepted',
  FAILED: 'failed',
  DEAD_TOKEN: 'dead_token',
  THROTTLED: 'throttled',
  MERGED: 'merged',
  SUPPRESSED: 'suppressed',
  DROPPED: 'dropped',
  SKIPPED_DUPLICATE: 'skipped_duplicate',
};

const RECEIPT_KIND: Readonly<Record<PushReceiptRecord['status'], PushEventKind>> = {
  DELIVERED: 'delivered',
  FAILED: 'failed',
  DEAD_TOKEN: 'dead_token',
};

const toSeconds = (ms: number): number => Math.max(0, Math.floor(ms / 1000));
/** The two columns of the instant an event happened. */
const eventTime = (at: number): Pick<PushEventRow, 'event_time' | 'event_ms'> => ({ event_time: toSeconds(at), event_ms: Math.max(0, Math.floor(at)) });
/** UInt32 range for latencies; negative latencies (clock skew) are recorded as 0. */
const clampLatency = (ms: number): number => Math.min(4_294_967_295, Math.max(0, Math.round(ms)));

export function rowFromOutcome(outcome: PushOutcomeRecord): PushEventRow {
  return {
    event_id: outcome.event_id,
    ...eventTime(outcome.at),
    kind: OUTCOME_KIND[outcome.status] ?? 'failed',
    source: 'outcome',
    stage: outcome.stage,
    task_id: outcome.task_id,
    uid: outcome.uid,
    device_id: outcome.device_id ?? '',
    conv_id: outcome.conv_id,
    seq: outcome.seq,
    msg_id: outcome.msg_id,
    app_id: outcome.app_id,
    platform: outcome.platform ?? '',
    vendor: outcome.vendor ?? '',
    reason: outcome.reason ?? '',
    code: outcome.code ?? '',
    vendor_message_id: outcome.vendor_message_id ?? '',
    attempts: Math.max(0, Math.min(65_535, outcome.attempts)),
    persisted_time: toSeconds(outcome.persisted_at),
    latency_ms: outcome.latency_ms === null || outcome.latency_ms === undefined ? null : clampLatency(outcome.latency_ms),
    persisted_ms: Math.max(0, Math.floor(outcome.persisted_at)),
    collapse_id: outcome.collapse_id ?? null,
    token_hash: outcome.token_hash ?? null,
    detail: outcome.detail ?? null,
    ...(outcome.business ? { sender: outcome.business.sender, category: outcome.business.category, campaign_id: outcome.business.campaign_id ?? '' } : {}),
  };
}

/**
 * A matched receipt becomes a `delivered`, `failed` or `dead_token` row of source `receipt`.
 * Unmatched receipts have no task and are not rows (they are counted by the receipt-join's
 * metrics instead). `persistedAt`, when the caller knows it, gives the persist-to-receipt latency.
 */
export function rowFromReceipt(receipt: PushReceiptRecord, persistedAt?: number): PushEventRow | undefined {
  if (!receipt.matched || !receipt.task_id) return undefined;
  return {
    event_id: receipt.event_id,
    ...eventTime(receipt.at),
    kind: RECEIPT_KIND[receipt.status] ?? 'failed',
    source: 'receipt',
    stage: 'receipt-join',
    task_id: receipt.task_id,
    uid: receipt.uid ?? '',
    device_id: receipt.device_id ?? '',
    conv_id: receipt.conv_id ?? '',
    seq: receipt.seq ?? 0,
    msg_id: '',
    app_id: receipt.app_id ?? '',
    platform: receipt.platform ?? '',
    vendor: receipt.vendor,
    reason: '',
    code: receipt.code,
    vendor_message_id: receipt.vendor_message_id,
    attempts: 0,
    persisted_time: persistedAt === undefined ? 0 : toSeconds(persistedAt),
    latency_ms: persistedAt === undefined ? null : clampLatency(receipt.at - persistedAt),
    persisted_ms: null,
    collapse_id: null,
    token_hash: null,
    detail: null,
  };
}

/** Distinguishes the two record types a sink processor may receive. */
export function isReceiptRecord(value: PushOutcomeRecord | PushReceiptRecord): value is PushReceiptRecord {
  return typeof (value as PushReceiptRecord).matched === 'boolean' && !('stage' in value);
}
