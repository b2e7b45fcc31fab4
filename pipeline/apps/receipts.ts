import { TopologyBuilder, type Topology } from '../../topology/builder.ts';
import { jsonSerde, stringSerde } from '../../topology/serdes.ts';
import { tokenLifecycleProcessor, type TokenLifecycleOptions } from '../../processors/token-lifecycle/lifecycle.ts';
import { receiptJoinProcessor, type ReceiptJoinOptions } from '../../processors/receipt-join/join.ts';
import { RECEIPT_VENDORS, type ByMessageRecord, type ReceiptJoinListener, type ReceiptParsers } from '../../processors/receipt-join/records.ts';
import { receiptParseProcessor, submissionIndexProcessor } from '../../processors/receipt-join/rekey.ts';
import type { IngestOptions } from '../../processors/model/ingest.ts';
import { perTopicSerde } from '../serdes.ts';
import { topicIo, type WiringOptions } from './wiring.ts';

/** The internal topic of the receipts application: submissions and receipts keyed by (vendor, vendor message id). */
export const receiptsByMessageTopic = (prefix = '') => `${prefix}push.receipts.by-message`;

export interface ReceiptTopologyOptions extends WiringOptions {
  readonly parsers: ReceiptParsers;
  readonly join: ReceiptJoinOptions;
  readonly tokens: TokenLifecycleOptions;
  readonly listener?: ReceiptJoinListener;
  /**
   * Vendors that send delivery receipts. Only their acceptances are indexed for the join, and for
   * them token health waits for receipts. Default `RECEIPT_VENDORS` (hms, xiaomi, oppo, vivo).
   */
  readonly receiptVendors?: readonly string[];
  /** The ingest rules raw callbacks are checked against (PUSH_INGEST_*, as the receiver); default their defaults. */
  readonly ingest?: IngestOptions;
}

/**
 * The receipts application: three sub-topologies.
 * 1. `receipts-raw` (push.receipts.raw, keyed by vendor) → `receipt-parse` → by-message topic;
 * 2. `uid-keyed` (push.outcomes, push.tokens, push.receipts; co-partitioned by uid) →
 *    `submission-index` → by-message topic, and → `token-lifecycle` → push.tokens (INVALID reports);
 * 3. `by-message` → `receipt-join` → push.receipts.
 * The by-message topic is a repartition: the key changes from uid (or vendor) to the vendor message
 * id, so a topic sits there (any partition count; JSON values, internal to this application).
 * Kafka records per message: an acceptance by a receipt vendor costs one by-message record, one
 * join changelog record and, when it expires, one tombstone; an acceptance by APNs or FCM costs
 * none. A receipt costs one by-message record, one push.receipts record and one join changelog
 * record (none but the by-message record when it is a duplicate), plus a token-lifecycle changelog
 * record only when it changes the token's failure count or state. The stores are declared by the
 * processors' suppliers (token-lifecycle's and receipt-join's), not here.
 */
export function buildReceiptTopology(o: ReceiptTopologyOptions): Topology {
  const { topic, source, sink } = topicIo(o);
  const receiptVendors = o.receiptVendors ?? RECEIPT_VENDORS;
  const byMessage = { topic: receiptsByMessageTopic(o.topicPrefix), keySerde: stringSerde, valueSerde: jsonSerde<ByMessageRecord>() };
  const uidKeyed = (['outcomes', 'tokens', 'receipts'] as const).map((key) => [topic(key), key] as const);
  return new TopologyBuilder()
    .addSource('receipts-raw', source('receiptsRaw'))
    .addProcessor('receipt-parse', receiptParseProcessor(o.parsers, o.listener, o.ingest), 'receipts-raw')
    .addSink('receipt-parse-out', byMessage, 'receipt-parse')
    .addSource('uid-keyed', { topics: uidKeyed.map(([name]) => name), keySerde: stringSerde, valueSerde: perTopicSerde(o.valueSerdes, uidKeyed) })
    .addProcessor('submission-index', submissionIndexProcessor(receiptVendors), 'uid-keyed')
    .addSink('submission-index-out', byMessage, 'submission-index')
    .addProcessor('token-lifecycle', tokenLifecycleProcessor({ receiptVendors, ...o.tokens }), 'uid-keyed')
    .addSink('token-invalidations', sink('tokens'), 'token-lifecycle')
    .addSource('by-message', { topics: [byMessage.topic], keySerde: stringSerde, valueSerde: byMessage.valueSerde })
    .addProcessor('receipt-join', receiptJoinProcessor({ ...o.join, listener: o.join.listener ?? o.listener }), 'by-message')
    .addSink('push-receipts', sink('receipts'), 'receipt-join')
    .build();
}
