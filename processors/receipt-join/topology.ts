import { TopologyBuilder, type Topology } from '../../topology/builder.ts';
import type { Serde } from '../../topology/serdes.ts';
import type { PushOutcome, TokenReport } from '../shared/records.ts';
import { tokenLifecycleProcessor, tokenLifecycleStores, type TokenLifecycleOptions } from '../token-lifecycle/lifecycle.ts';
import { receiptJoinProcessor, receiptJoinStores, type ReceiptJoinOptions } from './join.ts';
import { RECEIPT_VENDORS, type ByMessageRecord, type PushReceipt, type ReceiptJoinListener, type ReceiptParsers, type ReceiptRaw } from './records.ts';
import { receiptParseProcessor, submissionIndexProcessor } from './rekey.ts';

/** Topic names the receipts application reads and writes (the caller applies any prefix). */
export interface ReceiptTopics {
  /** push.receipts.raw, keyed by vendor. */
  readonly receiptsRaw: string;
  /** push.outcomes, keyed by uid. */
  readonly outcomes: string;
  /** push.tokens, keyed by uid (read, and written with INVALID reports). */
  readonly tokens: string;
  /** push.receipts, keyed by uid (written by the join, read by token-lifecycle). */
  readonly receipts: string;
  /** Internal: submissions and receipts keyed by (vendor, vendor message id). Any partition count. */
  readonly byMessage: string;
}

export interface ReceiptSerdes {
  readonly key: Serde<string>;
  readonly receiptRaw: Serde<ReceiptRaw>;
  readonly outcome: Serde<PushOutcome>;
  readonly token: Serde<TokenReport>;
  readonly receipt: Serde<PushReceipt>;
  /** For the internal by-message topic; JSON is fine. */
  readonly byMessage: Serde<ByMessageRecord>;
}

export interface ReceiptTopologyOptions {
  readonly topics: ReceiptTopics;
  readonly serdes: ReceiptSerdes;
  readonly parsers: ReceiptParsers;
  readonly join: ReceiptJoinOptions;
  readonly tokens: TokenLifecycleOptions;
  readonly listener?: ReceiptJoinListener;
  /**
   * Vendors that send delivery receipts. Only their acceptances are indexed for the join, and for
   * them token health waits for receipts. Default `RECEIPT_VENDORS` (hms, xiaomi, oppo, vivo).
   */
  readonly receiptVendors?: readonly string[];
}

/**
 * The receipts application: three sub-topologies.
 * 1. `receipts-raw` → `receipt-parse` → by-message topic;
 * 2. `uid-keyed` (push.outcomes, push.tokens, push.receipts; co-partitioned by uid) →
 *    `submission-index` → by-message topic, and → `token-lifecycle` → push.tokens (INVALID reports);
 * 3. `by-message` → `receipt-join` → push.receipts.
 * Kafka records per message: an acceptance by a receipt vendor costs one by-message record, one
 * join changelog record and, when it expires, one tombstone; an acceptance by APNs or FCM costs
 * none. A receipt costs one by-message record, one push.receipts record and one join changelog
 * record (none but the by-message record when it is a duplicate), plus a token-lifecycle changelog
 * record only when it changes the token's failure count or state.
 * The ClickHouse sink is a separate application (sinks/clickhouse/topology.ts), so a ClickHouse
 * outage stalls only the accounting, not task status and token health.
 */
export function buildReceiptTopology(o: ReceiptTopologyOptions): Topology {
  const { topics, serdes } = o;
  const receiptVendors = o.receiptVendors ?? RECEIPT_VENDORS;
  const uidKeyed = new Map<string, Serde<unknown>>([
    [topics.outcomes, serdes.outcome as Serde<unknown>],
    [topics.tokens, serdes.token as Serde<unknown>],
    [topics.receipts, serdes.receipt as Serde<unknown>],
  ]);
  const byTopic: Serde<unknown> = {
    serialize: (topic, value) => uidKeyed.get(topic)!.serialize(topic, value),
    deserialize: (topic, data) => uidKeyed.get(topic)!.deserialize(topic, data),
  };
  return new TopologyBuilder()
    .addSource('receipts-raw', { topics: [topics.receiptsRaw], keySerde: serdes.key, valueSerde: serdes.receiptRaw })
    .addProcessor('receipt-parse', receiptParseProcessor(o.parsers, o.listener), 'receipts-raw')
    .addSink('receipt-parse-out', { topic: topics.byMessage, keySerde: serdes.key, valueSerde: serdes.byMessage }, 'receipt-parse')
    .addSource('uid-keyed', { topics: [topics.outcomes, topics.tokens, topics.receipts], keySerde: serdes.key, valueSerde: byTopic })
    .addProcessor('submission-index', submissionIndexProcessor(receiptVendors), 'uid-keyed')
    .addSink('submission-index-out', { topic: topics.byMessage, keySerde: serdes.key, valueSerde: serdes.byMessage }, 'submission-index')
    .addProcessor('token-lifecycle', tokenLifecycleProcessor({ receiptVendors, ...o.tokens }), 'uid-keyed')
    .addSink('token-invalidations', { topic: topics.tokens, keySerde: serdes.key, valueSerde: serdes.token }, 'token-lifecycle')
    .addSource('by-message', { topics: [topics.byMessage], keySerde: serdes.key, valueSerde: serdes.byMessage })
    .addProcessor('receipt-join', receiptJoinProcessor({ ...o.join, listener: o.join.listener ?? o.listener }), 'by-message')
    .addSink('push-receipts', { topic: topics.receipts, keySerde: serdes.key, valueSerde: serdes.receipt }, 'receipt-join')
    .addStateStore(receiptJoinStores()[0]!, 'receipt-join')
    .addStateStore(receiptJoinStores()[1]!, 'receipt-join')
    .addStateStore(tokenLifecycleStores()[0]!, 'token-lifecycle')
    .addStateStore(tokenLifecycleStores()[1]!, 'token-lifecycle')
    .build();
}
