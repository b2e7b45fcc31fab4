import { TopologyBuilder, type Topology } from '../../topology/builder.ts';
import { readKey } from '../../common/config.ts';
import { BUSINESS_KEYS } from '../../common/config-keys-business.ts';
import { fanOut } from '../../processors/fan-out/fan-out.ts';
import { tagged } from '../../processors/model/inputs.ts';
import type { PresenceEvent, PushDispatch } from '../../processors/model/records.ts';
import { fanOutOptionsFromEnv, type FanOutListener, type FanOutOptions } from '../../processors/fan-out/options.ts';
import { decodeCheckpoints, decodeParked, encodeParked, isCheckpointKey, parkedStoreSerde } from '../../processors/fan-out/parked.ts';
import { MysqlPushTaskLedger } from '../../sinks/mysql/tasks.ts';
import { startCampaignCancellations } from '../campaign-control.ts';
import type { Placement } from '../repartition/store-keys.ts';
import { businessLaneVendors } from './business.ts';
import { meteredVendors } from './metering.ts';
import { placeholder, type StageContext, type StageDefinition } from './stage.ts';
import { topicIo, type WiringOptions } from './wiring.ts';

export interface FanOutTopologyOptions extends WiringOptions {
  readonly fanOut: Omit<FanOutOptions, 'outputs'>;
  /**
   * Which dispatches this fan-out sends: IM's (push.dispatch, default) or the business lane's
   * (push.dispatch.business, docs/entry.md): the same processor in its own application, consumer
   * group and vendor gates, so business pushes never queue in front of IM pushes.
   */
  readonly lane?: 'im' | 'business';
}

/** Stable node names (they appear in `describe()`). */
export const FAN_OUT_NODES = {
  source: 'dispatch-source',
  /** im.presence: only its READs matter here (they cancel dispatches waiting to be retried); IM lane only. */
  reads: 'read-source',
  /** The fan-out's inputs tagged with their kind (processors/model/inputs.ts `tagged`). */
  dispatchIn: 'dispatch-in',
  readsIn: 'reads-in',
  processor: 'fan-out',
  outcomes: 'outcomes-sink',
  tokens: 'token-invalidations-sink',
} as const;

/**
 * The fan-out application: push.dispatch → `fan-out` → push.outcomes, and dead-token invalidations
 * → push.tokens (source FAN_OUT). im.presence (co-partitioned by uid) is read too, for its READs:
 * a READ cancels the conversation's dispatches waiting out retryable vendor failures. Both inputs
 * reach the processor tagged with their kind (`dispatch-in`, `reads-in`). Idempotency lives in
 * im_push_task (the injected ledger); the stores, declared by the processor's supplier, keep
 * dispatches waiting out a long backoff (changelogged, so a restart resumes them). The processor
 * itself (processors/fan-out/fan-out.ts) sees neither topics nor serdes; this wiring does.
 */
export function buildFanOutTopology(o: FanOutTopologyOptions): Topology {
  const { source, sink } = topicIo(o);
  const n = FAN_OUT_NODES;
  const processor = fanOut({ ...o.fanOut, outputs: { outcomes: n.outcomes, tokens: n.tokens } });
  // A READ cancels IM conversations' retries; business pushes have no conversation, so their lane
  // does not read im.presence (every heartbeat and ACK, fetched and decoded for nothing).
  const builder = new TopologyBuilder()
    .addSource(n.source, source(o.lane === 'business' ? 'dispatchBusiness' : 'dispatch'))
    .addProcessor(n.dispatchIn, tagged<'dispatch', PushDispatch>('dispatch'), n.source);
  if (o.lane === 'business') builder.addProcessor(n.processor, processor, n.dispatchIn);
  else {
    // Not checked here: the decisions' ingest dead-letters a bad presence record, once.
    builder
      .addSource(n.reads, source('presence'))
      .addProcessor(n.readsIn, tagged<'presence', PresenceEvent>('presence'), n.reads)
      .addProcessor(n.processor, processor, n.dispatchIn, n.readsIn);
  }
  return builder.addSink(n.outcomes, sink('outcomes'), n.processor).addSink(n.tokens, sink('tokens'), n.processor).build();
}

/**
 * The fan-out's changelogged stores (both lanes, and the decisions' when fused): parked dispatches
 * keyed by task id, whose value keeps its input record key; the checkpoints a commit wrote
 * (`~held.<n>`) are split into parked dispatches, each resumed at once where it lands.
 */
export const FAN_OUT_STORES: Readonly<Record<string, Placement>> = {
  'fan-out-parked': {
    kind: 'owner',
    owner: (taskId, value) => decodeParked(taskId, parkedStoreSerde.deserialize(value)).key,
    split: (key, value) =>
      isCheckpointKey(key)
        ? decodeCheckpoints(parkedStoreSerde.deserialize(value)).map((p) => [p.dispatch.task_id, parkedStoreSerde.serialize(encodeParked(p))])
        : [[key, value]],
  },
  'fan-out-retry-timers': { kind: 'companion', store: 'fan-out-parked' },
};

/**
 * The IM fan-out's options (PUSH_FANOUT_*) with its own im_push_task ledger, for the fan-out
 * application or fused behind the decisions; `countsDispatches`: the fan-out counts each dispatch it
 * takes as produced (PipelineMetrics.observeDispatch), where no push.dispatch serde does.
 */
export function imFanOut(ctx: StageContext, countsDispatches = false): { options: Omit<FanOutOptions, 'outputs' | 'fused'>; close: () => Promise<void> } {
  const ledger = new MysqlPushTaskLedger({ shards: ctx.mysqlShards, listener: ctx.metrics.mysqlListener });
  const { metrics } = ctx;
  const listener: FanOutListener = countsDispatches
    ? {
        ...metrics.fanOutListener,
        onDispatchReceived: (d) => {
          metrics.observeDispatch(d);
          metrics.fanOutListener.onDispatchReceived?.(d);
        },
      }
    : metrics.fanOutListener;
  const options = { ...fanOutOptionsFromEnv(ctx.env), vendors: meteredVendors(ctx.vendors, metrics), ledger, listener };
  return { options, close: async () => ledger.close() };
}

/** The IM fan-out as its own application (PUSH_FAN_OUT_FUSED=false): on the event path. */
export const fanOutStage: StageDefinition<'fan-out'> = {
  name: 'fan-out',
  commitLane: 'event-path',
  stores: FAN_OUT_STORES,
  inspect: (wiring) => buildFanOutTopology({ ...wiring, fanOut: placeholder() }),
  build(ctx, wiring) {
    const { options: fanOut, close } = imFanOut(ctx);
    return { close, topology: buildFanOutTopology({ ...wiring, fanOut }) };
  },
};

/**
 * The business lane's fan-out (push.dispatch.business): its own ledger, its own vendor gates with
 * PUSH_BUSINESS_VENDOR_RATE_PERCENT of each vendor's rate and concurrency, and the business lane's
 * commit interval.
 */
export const fanOutBusinessStage: StageDefinition<'fan-out-business'> = {
  name: 'fan-out-business',
  commitLane: 'business',
  stores: FAN_OUT_STORES,
  inspect: (wiring) => buildFanOutTopology({ ...wiring, fanOut: placeholder(), lane: 'business' }),
  build(ctx, wiring) {
    const ledger = new MysqlPushTaskLedger({ shards: ctx.mysqlShards, listener: ctx.metrics.mysqlListener });
    const percent = readKey(ctx.env, BUSINESS_KEYS.PUSH_BUSINESS_VENDOR_RATE_PERCENT);
    const lane = businessLaneVendors(meteredVendors(ctx.vendors, ctx.metrics), percent, { ratePerSecond: 500, concurrency: 64 });
    // A cancelled campaign's dispatches still queued, parked or at the vendor gate are not submitted (processors/fan-out/cancelled.ts).
    const control = startCampaignCancellations({ endpoints: ctx.endpoints, registry: ctx.registry, topicPrefix: ctx.topicPrefix, logger: ctx.logger });
    const fanOut = {
      ...fanOutOptionsFromEnv(ctx.env),
      ...lane,
      ledger,
      listener: ctx.metrics.fanOutListener,
      cancellations: control.cancellations,
      cancellationsRead: control.read,
    };
    return {
      close: async () => {
        await control.close();
        await ledger.close();
      },
      topology: buildFanOutTopology({ ...wiring, fanOut, lane: 'business' }),
    };
  },
};
