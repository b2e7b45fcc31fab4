import { TopologyBuilder, type Topology } from '../../topology/builder.ts';
import type { Serde } from '../../topology/serdes.ts';
import { clickhouseEventSink } from './processor.ts';
import type { PushOutcomeRecord, PushReceiptRecord } from './rows.ts';
import type { PushEventWriter } from './writer.ts';

export interface ClickhouseSinkTopologyOptions {
  /** push.outcomes and push.receipts (after any prefix). */
  readonly topics: { readonly outcomes: string; readonly receipts: string };
  readonly serdes: { readonly key: Serde<string>; readonly outcome: Serde<PushOutcomeRecord>; readonly receipt: Serde<PushReceiptRecord> };
  readonly writer: PushEventWriter;
}

/**
 * The ClickHouse accounting application: push.outcomes and push.receipts (co-partitioned by uid)
 * → `clickhouse-sink`. Its own application id, so a ClickHouse outage stalls only this consumer
 * group (offsets stay uncommitted until the rows are stored).
 */
export function buildClickhouseSinkTopology(o: ClickhouseSinkTopologyOptions): Topology {
  const serdes = new Map<string, Serde<unknown>>([
    [o.topics.outcomes, o.serdes.outcome as Serde<unknown>],
    [o.topics.receipts, o.serdes.receipt as Serde<unknown>],
  ]);
  const valueSerde: Serde<unknown> = {
    serialize: (topic, value) => serdes.get(topic)!.serialize(topic, value),
    deserialize: (topic, data) => serdes.get(topic)!.deserialize(topic, data),
  };
  return new TopologyBuilder()
    .addSource('push-events', { topics: [o.topics.outcomes, o.topics.receipts], keySerde: o.serdes.key, valueSerde })
    .addProcessor('clickhouse-sink', clickhouseEventSink(o.writer), 'push-events')
    .build();
}
