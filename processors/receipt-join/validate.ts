/**
 * The ingest rules of a receipt (docs/design.md, "Ingest validation"), shared by the receiver
 * (receipts/server.ts: a callback breaking one is answered 400) and the `receipt-parse` stage (a raw
 * callback breaking one goes to the DLQ): nothing the join would keep for minutes and then fail to
 * write (an `at` of 1e20 or 1.5 is no Avro long) gets past either.
 */
import type { ParsedReceipt } from '../fan-out/vendor-port.ts';
import { eventTime, id, text, type IngestRules } from '../model/ingest.ts';

/** im_push_task.vendor_message_id is VARCHAR(128). */
export const MAX_VENDOR_MESSAGE_ID = 128;
/** A vendor status code (im_push_task.fail_code is VARCHAR(64)). */
export const MAX_RECEIPT_CODE = 64;

/**
 * The first rule a parsed receipt breaks (`<rule>: <detail>`), or undefined. Its own time must be
 * an integer epoch ms within the skews of `receivedAt`, when the receiver got the callback (so a
 * receipt accepted by the receiver passes the stage too, however late the stage reads it).
 * A receipt without a message id is skipped by the stage, not refused.
 */
export function receiptViolation(r: ParsedReceipt, receivedAt: number, rules: IngestRules): string | undefined {
  return (
    text('vendor_message_id', r.vendorMessageId, MAX_VENDOR_MESSAGE_ID) ??
    text('code', r.code, MAX_RECEIPT_CODE) ??
    eventTime('timestamp', r.at, receivedAt, rules)
  );
}

/** The first rule a raw callback's own fields break: its receive time against the stage's clock. */
export function rawReceiptViolation(receiptId: string, appId: string | null, receivedAt: number, now: number, rules: IngestRules): string | undefined {
  return id('receipt_id', receiptId, 64) ?? text('app_id', appId, 128) ?? eventTime('received_at', receivedAt, now, rules);
}

/**
 * Whether a receipt the join already holds can be written to push.receipts (Avro longs): state
 * written before these rules existed may hold one that cannot, and would stop the stage at expiry.
 */
export function writableReceipt(r: { at: number; received_at: number }): boolean {
  return Number.isSafeInteger(r.at) && Number.isSafeInteger(r.received_at);
}
