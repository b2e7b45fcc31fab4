import { TopologyBuilder, type Topology } from '../../topology/builder.ts';
import { fanOut } from '../../processors/fan-out/fan-out.ts';
import { tagged } from '../../processors/model/inputs.ts';
import type { PresenceEvent, PushDispatch } from '../../processors/model/records.ts';
import type { FanOutOptions } from '../../processors/fan-out/options.ts';
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
 * im_push_task (the injected ledger); the stores, declared by the processor's supplier, hold
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
