import { TopologyBuilder, type Topology } from '../../topology/builder.ts';
import { jsonSerde, stringSerde } from '../../topology/serdes.ts';
import { tokenLifecycleProcessor, type TokenLifecycleOptions } from '../../processors/token-lifecycle/lifecycle.ts';
import { RECEIPT_JOIN_BY_UID_STORES, receiptJoinProcessor, type ReceiptJoinOptions } from '../../processors/receipt-join/join.ts';
import type { ByMessageRecord, ReceiptJoinListener, ReceiptParsers } from '../../processors/receipt-join/records.ts';
import { RECEIPT_VENDORS } from '../../sinks/vendors/modules.ts';
import { receiptParseProcessor, submissionIndexProcessor } from '../../processors/receipt-join/rekey.ts';
import { ingestOptionsFromEnv, type IngestOptions } from '../../processors/model/ingest.ts';
import { readKey } from '../../common/config.ts';
import { CONFIG_KEYS } from '../../common/config-keys.ts';
import { MysqlTaskStatusWriter } from '../../sinks/mysql/task-status.ts';
import { MysqlTokenWriter } from '../../sinks/mysql/tokens.ts';
import { receiptParsersFromRegistry } from '../../receipts/parsers.ts';
import { perTopicSerde } from '../serdes.ts';
import { leadingUid, storedJson } from '../repartition/store-keys.ts';
import { nothingToClose, placeholder, type StageDefinition } from './stage.ts';
import { topicIo, type WiringOptions } from './wiring.ts';

/** The internal topic of the receipts application: submissions and receipts keyed by (vendor, vendor message id). */
export const receiptsByMessageTopic = (prefix = '') => `${prefix}push.receipts.by-message`;

/**
 * The internal topic of receipts naming their recipient (processors/model/receipt-route.ts), keyed
 * by that uid: read beside push.outcomes, so it has their partition count (the worker creates the
 * internal topics with the pipeline's).
 */
export const receiptsByUidTopic = (prefix = '') => `${prefix}push.receipts.by-uid`;

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
 * The receipts application: two sub-topologies.
 * 1. `uid-keyed` (push.outcomes, push.tokens, push.receipts), `receipts-raw` (push.receipts.raw)
 *    and `receipts-by-uid` (push.receipts.by-uid), co-partitioned by uid:
 *    - `submission-index` → `receipt-join-by-uid` (acceptances whose receipts name the recipient,
 *      forwarded in-process) or → by-message topic (the others: a campaign's multi-token requests);
 *    - `receipt-parse`: a callback the receiver keyed by the uid its receipts name is on that
 *      user's partition, so its receipts go → `receipt-join-by-uid` in-process; a callback keyed
 *      by vendor (receipts of several users, or of no one) is re-keyed → push.receipts.by-uid or
 *      the by-message topic; `receipts-by-uid` → `receipt-join-by-uid`; the join → push.receipts;
 *    - → `token-lifecycle` → push.tokens (INVALID reports);
 * 2. `by-message` → `receipt-join` → push.receipts.
 * Both internal topics are repartitions (the key changes from vendor or uid to the uid or the
 * vendor message id), so a topic sits there; JSON values, internal to this application.
 * Kafka records per acceptance by a receipt vendor: one join changelog record and, when it
 * expires, one tombstone, plus one by-message record when its receipts do not name the recipient;
 * an acceptance by APNs or FCM costs none. A receipt costs one push.receipts record, one join
 * changelog record (none for a delivery to a lone submission, which marks the entry in memory
 * only; writes to one entry between two commits coalesce), one by-uid or by-message record when its
 * callback was not keyed by its recipient, and a token-lifecycle changelog record only when it
 * changes the token's failure count or state; a duplicate costs only its re-key record, if any.
 * The stores are declared by the processors' suppliers (token-lifecycle's and both joins'), not here.
 */
export function buildReceiptTopology(o: ReceiptTopologyOptions): Topology {
  const { topic, source, sink } = topicIo(o);
  const receiptVendors = o.receiptVendors ?? RECEIPT_VENDORS;
  const valueSerde = jsonSerde<ByMessageRecord>();
  const byMessage = { topic: receiptsByMessageTopic(o.topicPrefix), keySerde: stringSerde, valueSerde };
  const byUid = { topic: receiptsByUidTopic(o.topicPrefix), keySerde: stringSerde, valueSerde };
  const uidKeyed = (['outcomes', 'tokens', 'receipts'] as const).map((key) => [topic(key), key] as const);
  const join = { ...o.join, listener: o.join.listener ?? o.listener };
  return new TopologyBuilder()
    .addSource('uid-keyed', { topics: uidKeyed.map(([name]) => name), keySerde: stringSerde, valueSerde: perTopicSerde(o.valueSerdes, uidKeyed) })
    .addSource('receipts-raw', source('receiptsRaw'))
    .addSource('receipts-by-uid', { topics: [byUid.topic], keySerde: stringSerde, valueSerde })
    .addProcessor(
      'submission-index',
      submissionIndexProcessor({ byMessage: 'submission-index-out', byUid: 'receipt-join-by-uid' }, receiptVendors),
      'uid-keyed',
    )
    .addSink('submission-index-out', byMessage, 'submission-index')
    .addProcessor(
      'receipt-parse',
      receiptParseProcessor(o.parsers, { byMessage: 'receipt-parse-out', byUid: 'receipt-parse-by-uid', here: 'receipt-join-by-uid' }, o.listener, o.ingest),
      'receipts-raw',
    )
    .addSink('receipt-parse-out', byMessage, 'receipt-parse')
    .addSink('receipt-parse-by-uid', byUid, 'receipt-parse')
    .addProcessor('receipt-join-by-uid', receiptJoinProcessor(join, RECEIPT_JOIN_BY_UID_STORES), 'submission-index', 'receipt-parse', 'receipts-by-uid')
    .addSink('push-receipts-by-uid', sink('receipts'), 'receipt-join-by-uid')
    .addProcessor('token-lifecycle', tokenLifecycleProcessor({ receiptVendors, ...o.tokens }), 'uid-keyed')
    .addSink('token-invalidations', sink('tokens'), 'token-lifecycle')
    .addSource('by-message', { topics: [byMessage.topic], keySerde: stringSerde, valueSerde })
    .addProcessor('receipt-join', receiptJoinProcessor(join), 'by-message')
    .addSink('push-receipts', sink('receipts'), 'receipt-join')
    .build();
}

/** The receipts application: in the background, with its two internal topics (the by-message and by-uid repartitions). */
export const receiptsStage: StageDefinition<'receipts'> = {
  name: 'receipts',
  commitLane: 'background',
  internalTopics: (prefix) => [receiptsByMessageTopic(prefix), receiptsByUidTopic(prefix)],
  stores: {
    // compositeKey(device_id, vendor): the token row names its user.
    'token-lifecycle-tokens': { kind: 'owner', owner: (_key, value) => String(storedJson(value).uid) },
    // Keyed by the vendor message id, as push.receipts.by-message is.
    'receipt-join-messages': { kind: 'owner', owner: (key) => key },
    // compositeKey(uid, vendor, vendor message id): read beside push.outcomes, by uid
    'receipt-join-by-uid-messages': leadingUid,
  },
  inspect: (wiring) => buildReceiptTopology({ ...wiring, parsers: placeholder(), join: placeholder(), tokens: placeholder() }),
  build(ctx, wiring) {
    const topology = buildReceiptTopology({
      ...wiring,
      parsers: receiptParsersFromRegistry(ctx.vendors),
      ingest: ingestOptionsFromEnv(ctx.env),
      join: {
        taskStatus: new MysqlTaskStatusWriter({ shards: ctx.mysqlShards, listener: ctx.metrics.mysqlListener }),
        maxEntries: readKey(ctx.env, CONFIG_KEYS.PUSH_RECEIPT_JOIN_MAX_ENTRIES),
        listener: { evicted: (entries) => ctx.metrics.receiptJoinEvictions.inc({}, entries) },
      },
      tokens: {
        tokens: new MysqlTokenWriter({ shards: ctx.mysqlShards, listener: ctx.metrics.mysqlListener }),
        listener: { invalidated: (vendor, reason) => ctx.metrics.tokenInvalidations.inc({ vendor, reason }) },
      },
    });
    return { close: nothingToClose, topology };
  },
};
