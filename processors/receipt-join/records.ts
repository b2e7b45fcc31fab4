/**
 * Records and seams of the receipt-join. Receipt callbacks arrive keyed by vendor
 * (push.receipts.raw) and submissions keyed by uid (push.outcomes). A receipt naming its
 * recipient (processors/model/receipt-route.ts) is re-keyed by that uid onto push.receipts.by-uid
 * and meets its submission in the uid-keyed task; the others, and their submissions, are re-keyed
 * by (vendor, vendor message id) onto push.receipts.by-message. Either way the join sees a
 * message's submission and its receipts in one task.
 */
import type { ParsedReceipt, Vendor } from '../fan-out/vendor-port.ts';
import type { TASK_STATUS } from '../model/task-status.ts';

/** The join's topic records (processors/model/records.ts, checked against schemas/ by test/schemas/record-types.test.ts). */
export type { PushReceipt, ReceiptRaw, ReceiptStatus } from '../model/records.ts';
import type { ReceiptStatus } from '../model/records.ts';

/** What the join remembers of one vendor-accepted submission. */
export interface SubmissionRef {
  task_id: string;
  uid: string;
  device_id: string;
  app_id: string;
  platform: string | null;
  conv_id: string;
  seq: number;
  persisted_at: number;
  accepted_at: number;
  /** `tokenHash` (processors/model/ids.ts) of the token the vendor accepted (null in outcomes written before the field existed). */
  token_hash?: string | null;
}

/** One parsed receipt on the internal by-message topic. The device token is kept only as a hash. */
export interface MessageReceipt {
  vendor: string;
  vendor_message_id: string;
  /** sha256 of the token the receipt names (hex, first 32 chars), or null. */
  token_hash: string | null;
  status: ReceiptStatus;
  code: string;
  at: number;
  received_at: number;
  app_id: string | null;
}

/** The internal by-message topic's value (JSON serde); key: compositeKey(vendor, vendor_message_id). */
export type ByMessageRecord =
  | { readonly type: 'submission'; readonly vendor: string; readonly vendor_message_id: string; readonly submission: SubmissionRef }
  | { readonly type: 'receipt'; readonly receipt: MessageReceipt };

/** Parses one callback body with the vendor's adapter (`VendorAdapter.parseReceipt`). */
export type ReceiptBodyParser = (body: Buffer, contentType: string | undefined) => ParsedReceipt[];

/** The adapters' parsers by vendor; undefined for a vendor without receipts or adapter. */
export type ReceiptParsers = (vendor: Vendor) => ReceiptBodyParser | undefined;

export interface TaskStatusUpdate {
  readonly taskId: string;
  /** The task's user: im_push_task is sharded by uid (sinks/mysql/shards.ts), so the update goes to this user's shard. */
  readonly uid: string;
  readonly deviceId: string;
  /** Delivered or failed (processors/model/task-status.ts). */
  readonly status: typeof TASK_STATUS.delivered | typeof TASK_STATUS.failed;
  /** Epoch ms the vendor reported. */
  readonly at: number;
}

/**
 * Writes im_push_task.status from receipts. `update` buffers (never blocks); `flush` resolves once
 * every buffered update is stored; the join's `flush` awaits it before the runtime commits.
 * Implementations must be idempotent and must never move a task away from 2 (delivered): a late
 * failure receipt after a delivery does not undo it.
 */
export interface TaskStatusWriter {
  update(update: TaskStatusUpdate): void;
  flush(): Promise<void>;
}

/** Counts what the join could not match (non-blocking). */
export interface ReceiptJoinListener {
  unmatched?(vendor: string, receipts: number): void;
  unparsable?(vendor: string): void;
  duplicate?(vendor: string): void;
  /**
   * A receipt named a submission of another app than the one whose receipt URL it came through
   * (`receiptAppId`): ignored, it changes no task and no token.
   */
  crossApp?(vendor: string, receiptAppId: string | null): void;
  /** A pending receipt restored from state breaks the ingest rules (validate.ts): dropped. */
  invalid?(vendor: string): void;
  /** Entries forgotten before their due time because the join held `maxEntries` (join.ts). */
  evicted?(entries: number): void;
}
