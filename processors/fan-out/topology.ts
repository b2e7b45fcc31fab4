import { TopologyBuilder, type Topology } from '../../topology/builder.ts';
import { stringSerde, type Serde } from '../../topology/serdes.ts';
import { topicName, type TopicKey } from '../../pipeline/topics.ts';
import { keyValueStore, timerStore } from '../../topology/stores.ts';
import { FAN_OUT_STORES, fanOut, type DispatchProgress } from './fan-out.ts';
import type { FanOutOptions } from './options.ts';

export interface FanOutTopologyOptions {
  /** Value serde of a topic (registry serdes on Kafka, raw Avro in the TopologyTestDriver). */
  readonly valueSerdes: (key: TopicKey) => Serde<unknown>;
  /** Topic name prefix (PUSH_TOPIC_PREFIX); default none. */
  readonly topicPrefix?: string;
  readonly fanOut: Omit<FanOutOptions, 'outputs'>;
}

/** Stable node names (they appear in `describe()`). */
export const FAN_OUT_NODES = {
  source: 'dispatch-source',
  processor: 'fan-out',
  outcomes: 'outcomes-sink',
  tokens: 'token-invalidations-sink',
} as const;

/**
 * The fan-out application: push.dispatch → `fan-out` → push.outcomes, and dead-token invalidations
 * → push.tokens (source FAN_OUT). Idempotency lives in im_push_task (the injected ledger); the two
 * stores hold dispatches waiting out a long backoff (changelogged, so a restart resumes them). The
 * processor itself (fan-out.ts) sees neither topics nor serdes; this wiring does.
 */
export function buildFanOutTopology(o: FanOutTopologyOptions): Topology {
  const t = (key: TopicKey) => topicName(key, o.topicPrefix);
  const n = FAN_OUT_NODES;
  return new TopologyBuilder()
    .addSource(n.source, { topics: [t('dispatch')], keySerde: stringSerde, valueSerde: o.valueSerdes('dispatch') })
    .addProcessor(n.processor, fanOut({ ...o.fanOut, outputs: { outcomes: n.outcomes, tokens: n.tokens } }), n.source)
    .addSink(n.outcomes, { topic: t('outcomes'), keySerde: stringSerde, valueSerde: o.valueSerdes('outcomes') }, n.processor)
    .addSink(n.tokens, { topic: t('tokens'), keySerde: stringSerde, valueSerde: o.valueSerdes('tokens') }, n.processor)
    .addStateStore(keyValueStore<DispatchProgress>(FAN_OUT_STORES.parked), n.processor)
    .addStateStore(timerStore(FAN_OUT_STORES.retryTimers), n.processor)
    .build();
}
