import { ContractError, errorMessage } from '../../common/errors.ts';
import type { Processor, ProcessorContext, ProcessorSupplier, StreamRecord } from '../../topology/api.ts';
import { VENDORS, type ParsedReceipt, type Vendor } from '../fan-out/vendor-port.ts';
import { compositeKey } from '../model/keys.ts';
import { compileIngestRules, type IngestOptions } from '../model/ingest.ts';
import type { PushOutcome } from '../model/records.ts';
import {
  type ByMessageRecord,
  type MessageReceipt,
  type ReceiptJoinListener,
  type ReceiptParsers,
  type ReceiptRaw,
  type ReceiptStatus,
  type SubmissionRef,
} from './records.ts';
import { rawReceiptViolation, receiptViolation } from './validate.ts';
import { tokenHash } from '../model/ids.ts';

const STATUS: Readonly<Record<ParsedReceipt['status'], ReceiptStatus>> = { delivered: 'DELIVERED', failed: 'FAILED', 'dead-token': 'DEAD_TOKEN' };

/** The by-message key: compositeKey(vendor, vendor_message_id). */
export const messageKey = (vendor: string, vendorMessageId: string): string => compositeKey(vendor, vendorMessageId);

/**
 * The children the re-keying processors forward to: records keyed by (vendor, vendor message id)
 * for the join on push.receipts.by-message, and records joined by uid (processors/model/receipt-route.ts):
 * receipts naming their recipient, keyed by it, from `receipt-parse`; submissions whose receipts name
 * it, as they are, from `submission-index` (straight to the uid-keyed join, in the same task).
 */
export interface ReceiptRoutes {
  readonly byMessage: string;
  readonly byUid: string;
  /**
   * `receipt-parse` only: receipts of a callback already keyed by the uid they name (the receiver's
   * `receiptRawKey`), so on that user's partition: forwarded to the uid-keyed join in this task
   * instead of through `byUid`'s topic. Without it every receipt naming a uid goes to `byUid`.
   */
  readonly here?: string;
}

/**
 * `receipt-parse`: one verified callback (push.receipts.raw, keyed by the uid its receipts name or
 * by vendor) → one record per receipt it holds, for the join: keyed by the uid its callback
 * parameter names (`routes.here` when that is the callback's own key, else `routes.byUid`), else by
 * (vendor, vendor message id) (`routes.byMessage`). Bodies are parsed by the
 * vendor adapters; a body no adapter can parse, or a callback that breaks an ingest rule (its
 * receive time, or a receipt's own time, out of range: validate.ts), is a contract error (the
 * runtime's DLQ, reason naming the rule), so nothing absurd reaches the join's state. `ingest`
 * takes the PUSH_INGEST_* options the receiver uses (default their defaults).
 */
export function receiptParseProcessor(
  parsers: ReceiptParsers,
  routes: ReceiptRoutes,
  listener: ReceiptJoinListener = {},
  ingest: IngestOptions = {},
): ProcessorSupplier<string, ReceiptRaw, string, ByMessageRecord> {
  const rules = compileIngestRules(ingest);
  const here = routes.here ?? routes.byUid;
  return () => {
    let ctx: ProcessorContext<string, ByMessageRecord>;
    const processor: Processor<string, ReceiptRaw, string, ByMessageRecord> = {
      init(context) {
        ctx = context;
      },
      process(record: StreamRecord<string, ReceiptRaw>) {
        const raw = record.value;
        if (raw === null) throw new ContractError('CONTRACT_VIOLATION', 'receipt breaks ingest rule tombstone: a null value on push.receipts.raw');
        const vendor = raw.vendor as Vendor;
        const parse = VENDORS.includes(vendor) ? parsers(vendor) : undefined;
        const rawBroken = rawReceiptViolation(raw.receipt_id, raw.app_id, raw.received_at, ctx.wallClockTimeMs(), rules);
        if (rawBroken) throw new ContractError('CONTRACT_VIOLATION', `receipt (${vendor}) breaks ingest rule ${rawBroken}`);
        let receipts: ParsedReceipt[];
        try {
          if (!parse) throw new Error(`no receipt parser for vendor ${raw.vendor.slice(0, 16)}`);
          receipts = parse(Buffer.from(raw.body), raw.content_type ?? undefined);
        } catch (error) {
          listener.unparsable?.(raw.vendor);
          throw new ContractError('RECEIPT_UNPARSABLE', `receipt ${raw.receipt_id} (${raw.vendor}): ${errorMessage(error)}`, error);
        }
        // The whole callback or nothing: the DLQ keeps its original bytes for a replay.
        for (const r of receipts) {
          const broken = r.vendorMessageId ? receiptViolation(r, raw.received_at, rules) : undefined;
          if (broken) throw new ContractError('CONTRACT_VIOLATION', `receipt ${raw.receipt_id} (${raw.vendor}) breaks ingest rule ${broken}`);
        }
        for (const r of receipts) {
          if (!r.vendorMessageId) continue;
          const receipt: MessageReceipt = {
            vendor: raw.vendor,
            vendor_message_id: r.vendorMessageId,
            token_hash: r.token ? tokenHash(r.token) : null,
            status: STATUS[r.status] ?? 'FAILED',
            code: r.code,
            at: r.at,
            received_at: raw.received_at,
            app_id: raw.app_id,
          };
          const value: ByMessageRecord = { type: 'receipt', receipt };
          if (r.recipient !== undefined)
            ctx.forward({ key: r.recipient, value, timestamp: record.timestamp }, r.recipient === record.key ? here : routes.byUid);
          else ctx.forward({ key: messageKey(raw.vendor, r.vendorMessageId), value, timestamp: record.timestamp }, routes.byMessage);
        }
      },
    };
    return processor;
  };
}

/**
 * `submission-index`: vendor-accepted outcomes (push.outcomes, keyed by uid) → the submission the
 * join needs to match receipts: to the uid-keyed join in the same task when its receipts name the
 * recipient (`receipts_by_uid`, `routes.byUid`: no record), else keyed by (vendor, vendor message
 * id) (`routes.byMessage`). Other outcomes, and acceptances by vendors that send no receipts
 * (not in `receiptVendors`, the wiring's list from the vendors' modules), are dropped: nothing
 * would ever match them, and each would cost a record here and join state until its retention.
 */
export function submissionIndexProcessor(
  routes: ReceiptRoutes,
  receiptVendors: readonly string[],
): ProcessorSupplier<string, PushOutcome | null, string, ByMessageRecord> {
  const vendors = new Set(receiptVendors);
  return () => new SubmissionIndexProcessor(vendors, routes);
}

class SubmissionIndexProcessor implements Processor<string, PushOutcome | null, string, ByMessageRecord> {
  private ctx!: ProcessorContext<string, ByMessageRecord>;

  constructor(
    private readonly receiptVendors: ReadonlySet<string>,
    private readonly routes: ReceiptRoutes,
  ) {}

  init(ctx: ProcessorContext<string, ByMessageRecord>): void {
    this.ctx = ctx;
  }

  process(record: StreamRecord<string, PushOutcome | null>): void {
    const o = record.value;
    // A tombstone on push.tokens (compacted, read beside the outcomes) is no submission.
    if (o === null || o.status !== 'ACCEPTED' || !o.vendor || !o.vendor_message_id || !o.device_id || !this.receiptVendors.has(o.vendor)) return;
    const value: ByMessageRecord = { type: 'submission', vendor: o.vendor, vendor_message_id: o.vendor_message_id, submission: submissionOf(o, o.device_id) };
    if (o.receipts_by_uid === true) this.ctx.forward({ key: record.key, value, timestamp: record.timestamp }, this.routes.byUid);
    else this.ctx.forward({ key: messageKey(o.vendor, o.vendor_message_id), value, timestamp: record.timestamp }, this.routes.byMessage);
  }
}

function submissionOf(o: PushOutcome, deviceId: string): SubmissionRef {
  return {
    task_id: o.task_id,
    uid: o.uid,
    device_id: deviceId,
    app_id: o.app_id,
    platform: o.platform,
    conv_id: o.conv_id,
    seq: o.seq,
    persisted_at: o.persisted_at,
    accepted_at: o.at,
    token_hash: o.token_hash ?? null,
  };
}
