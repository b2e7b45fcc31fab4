import { TopologyBuilder, type Topology } from '../../topology/builder.ts';
import { stringSerde } from '../../topology/serdes.ts';
import { clickhouseEventSink } from '../../sinks/clickhouse/processor.ts';
import { PushEventWriter } from '../../sinks/clickhouse/writer.ts';
import { connectionFromEndpoints } from '../../sinks/clickhouse/client.ts';
import { perTopicSerde } from '../serdes.ts';
import { placeholder, type StageDefinition } from './stage.ts';
import { topicIo, type WiringOptions } from './wiring.ts';

export interface ClickhouseSinkTopologyOptions extends WiringOptions {
  readonly writer: PushEventWriter;
}

/**
 * The ClickHouse accounting application: push.outcomes and push.receipts (co-partitioned by uid)
 * → `clickhouse-sink`. Its own application id, so a ClickHouse outage stalls only this consumer
 * group (offsets stay uncommitted until the rows are stored).
 */
export function buildClickhouseSinkTopology(o: ClickhouseSinkTopologyOptions): Topology {
  const { topic } = topicIo(o);
  const events = (['outcomes', 'receipts'] as const).map((key) => [topic(key), key] as const);
  return new TopologyBuilder()
    .addSource('push-events', { topics: events.map(([name]) => name), keySerde: stringSerde, valueSerde: perTopicSerde(o.valueSerdes, events) })
    .addProcessor('clickhouse-sink', clickhouseEventSink(o.writer), 'push-events')
    .build();
}

/** The ClickHouse sink's application: in the background, at least once (its rows dedupe by event id), stateless. */
export const clickhouseStage: StageDefinition<'clickhouse'> = {
  name: 'clickhouse',
  commitLane: 'background',
  atLeastOnce: true,
  stores: {},
  inspect: (wiring) => buildClickhouseSinkTopology({ ...wiring, writer: placeholder() }),
  build(ctx, wiring) {
    const writer = new PushEventWriter({
      connection: connectionFromEndpoints(ctx.endpoints),
      listener: {
        insertFailed: (error, attempt, delayMs, willRetry) =>
          ctx.logger.warn('ClickHouse insert failed', { code: error.code, attempt, ...(willRetry ? { retryInMs: delayMs } : { retrying: false }) }),
      },
    });
    return { close: () => writer.close(), topology: buildClickhouseSinkTopology({ ...wiring, writer }) };
  },
};
