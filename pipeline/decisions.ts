/**
 * Wiring of the decision stages (DESIGN §2, §2.1–2.3) into one topology with ONE sub-topology:
 *
 *   im.message.persisted ─┐
 *   im.presence ──────────┼─► online-filter ─► merge ─► policy ─► push.dispatch
 *   push.tokens ──────────┤         │            │        ▲   └──► push.outcomes (every stage)
 *   push.settings ────────┴─────────┼────────────┼────────┘
 *                                   ▼ (tap)      ▼ (tap)
 *                            push.candidates  push.merged      (only with `taps`)
 *
 * Every input is keyed by uid and so is every output; the merge keys its windows by (uid, conv_id)
 * inside the uid's task, which needs no repartition. So, as in Kafka Streams, the three processors
 * run fused in one task per partition and forward in-process: one exactly-once transaction between
 * the persisted message and its dispatch instead of three topic hops. push.candidates and push.merged
 * stay Avro topics as optional taps (`taps`, PUSH_DECISION_TAPS) for audit and debugging; nothing
 * reads them. Node and store names are stable: store names name the changelog topics.
 */
import type { SchemaRegistry } from '@kafkajs/confluent-schema-registry';
import { TopologyBuilder, type Topology } from '../topology/builder.ts';
import { avroSerde, stringSerde, type Serde } from '../topology/serdes.ts';
import { registryAvroSerde } from '../topology/registry-serde.ts';
import { onlineFilter } from '../processors/online-filter/online-filter.ts';
import { onlineFilterOptionsFromEnv, onlineFilterStores, ONLINE_FILTER_STORE_NAMES, type OnlineFilterOptions } from '../processors/online-filter/options.ts';
import { merge } from '../processors/merge/merge.ts';
import { mergeOptionsFromEnv, mergeStores, MERGE_STORE_NAMES, type MergeOptions } from '../processors/merge/options.ts';
import { policy } from '../processors/policy/policy.ts';
import { policyOptionsFromEnv, policyStores, POLICY_STORE_NAMES, type PolicyOptions } from '../processors/policy/options.ts';
import { readBool, type Env } from '../common/config.ts';
import { avroType, topicValueSchema, valueSubject } from './schemas.ts';
import { TOPICS, topicName, type TopicKey } from './topics.ts';

/** Gives the value serde of a topic (by its key in TOPICS). */
export type ValueSerdes = (key: TopicKey) => Serde<unknown>;

export interface DecisionsTopologyOptions {
  /** Value serdes per topic: `registryValueSerdes` on Kafka, `rawAvroValueSerdes` in the test driver. */
  valueSerdes: ValueSerdes;
  /** Topic name prefix (PUSH_TOPIC_PREFIX); default none. */
  topicPrefix?: string;
  onlineFilter?: Omit<OnlineFilterOptions, 'outputs' | 'stores'>;
  merge?: Omit<MergeOptions, 'outputs' | 'stores'>;
  policy?: Omit<PolicyOptions, 'outputs' | 'stores'>;
  /**
   * Also write the in-process hand-overs to push.candidates (online-filter → merge) and push.merged
   * (merge → policy), for audit and debugging. Env PUSH_DECISION_TAPS; default false. Costs two
   * records per pushed device in every transaction.
   */
  taps?: boolean;
}

/** The topics the decision stages read (sources) and write (sinks; candidates and merged only as taps). */
export const DECISION_TOPICS = {
  reads: ['persisted', 'presence', 'tokens', 'settings'],
  writes: ['dispatch', 'outcomes', 'candidates', 'merged'],
} as const satisfies { reads: readonly TopicKey[]; writes: readonly TopicKey[] };

/** Builds the decisions topology. Processor options are validated here (ConfigError naming the PUSH_* key). */
export function buildDecisionsTopology(options: DecisionsTopologyOptions): Topology {
  const t = (key: TopicKey) => topicName(key, options.topicPrefix);
  const source = (key: TopicKey) => ({ topics: [t(key)], keySerde: stringSerde, valueSerde: options.valueSerdes(key) });
  const sink = (key: TopicKey) => ({ topic: t(key), keySerde: stringSerde, valueSerde: options.valueSerdes(key) });
  const tapped = (child: string, tap: string): string[] => (options.taps ? [child, tap] : [child]);
  const b = new TopologyBuilder()
    .addSource('persisted-source', source('persisted'))
    .addSource('presence-source', source('presence'))
    .addSource('tokens-source', source('tokens'))
    .addSource('settings-source', source('settings'))
    .addProcessor('online-filter', onlineFilter({ ...options.onlineFilter, outputs: { candidates: tapped('merge', 'candidates-tap'), outcomes: 'outcomes-sink' } }), 'persisted-source', 'presence-source', 'tokens-source')
    .addProcessor('merge', merge({ ...options.merge, outputs: { merged: tapped('policy', 'merged-tap'), outcomes: 'outcomes-sink' } }), 'online-filter')
    .addProcessor('policy', policy({ ...options.policy, outputs: { dispatch: 'dispatch-sink', outcomes: 'outcomes-sink' } }), 'merge', 'settings-source', 'tokens-source', 'presence-source')
    .addSink('dispatch-sink', sink('dispatch'), 'policy')
    .addSink('outcomes-sink', sink('outcomes'), 'online-filter', 'merge', 'policy');
  if (options.taps) b.addSink('candidates-tap', sink('candidates'), 'online-filter').addSink('merged-tap', sink('merged'), 'merge');
  for (const store of onlineFilterStores(ONLINE_FILTER_STORE_NAMES)) b.addStateStore(store, 'online-filter');
  for (const store of mergeStores(MERGE_STORE_NAMES)) b.addStateStore(store, 'merge');
  for (const store of policyStores(POLICY_STORE_NAMES)) b.addStateStore(store, 'policy');
  return b.build();
}

/**
 * The stages' options from PUSH_* environment keys (PUSH_HOLD_WINDOW_MS, PUSH_HEARTBEAT_TIMEOUT_MS,
 * PUSH_BACKGROUND_COOLDOWN_MS, PUSH_MERGE_WINDOW_MS, PUSH_MERGE_MODE, PUSH_MERGE_RETENTION_MS,
 * PUSH_MENTION_RULE, PUSH_MENTION_ALL, PUSH_GENERIC_TITLE, PUSH_GENERIC_TEXT, PUSH_VENDOR_QUOTAS,
 * PUSH_PARTITIONS, PUSH_QUOTA_TIME_ZONE, PUSH_DECISION_TAPS). A bad value throws a ConfigError naming its key.
 */
export function decisionsOptionsFromEnv(env: Env = process.env): Pick<DecisionsTopologyOptions, 'onlineFilter' | 'merge' | 'policy' | 'taps'> {
  return { onlineFilter: onlineFilterOptionsFromEnv(env), merge: mergeOptionsFromEnv(env), policy: policyOptionsFromEnv(env), taps: readBool(env, 'PUSH_DECISION_TAPS', false) };
}

/** Raw Avro (no registry framing) with the schemas/ files: for the TopologyTestDriver. */
export function rawAvroValueSerdes(): ValueSerdes {
  const cache = new Map<TopicKey, Serde<unknown>>();
  return (key) => {
    let serde = cache.get(key);
    if (!serde) cache.set(key, (serde = avroSerde(avroType(TOPICS[key].valueSchema))));
    return serde;
  };
}

/** Confluent wire format through the schema registry, subjects `<prefix><topic>-value`. */
export function registryValueSerdes(registry: SchemaRegistry, topicPrefix = ''): ValueSerdes {
  const cache = new Map<TopicKey, Serde<unknown>>();
  return (key) => {
    let serde = cache.get(key);
    if (!serde) {
      const subject = valueSubject(key, topicPrefix);
      cache.set(key, (serde = registryAvroSerde({ registry, schema: topicValueSchema(key), subjectFor: () => subject })));
    }
    return serde;
  };
}
