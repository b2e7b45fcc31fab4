/**
 * Wiring of the decision stages (DESIGN §2, §2.1–2.3) into one topology:
 *
 *   sub-topology 0: im.message.persisted, im.presence, push.tokens ─► online-filter ─► push.candidates
 *                   push.merged, push.settings, push.tokens, im.presence ─► policy ─► push.dispatch
 *                   (online-filter and policy) ─► push.outcomes
 *   sub-topology 1: push.candidates ─► merge ─► push.merged, push.outcomes
 *
 * push.tokens has one source feeding both stages that keep tokens, so the two stages share a
 * sub-topology; every topic is keyed by uid, so all of it is co-partitioned. Node and store names are
 * stable: they name the changelog topics.
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
import type { Env } from '../common/config.ts';
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
}

/** The topics the decision stages read (sources) and write (sinks). */
export const DECISION_TOPICS = {
  reads: ['persisted', 'presence', 'tokens', 'settings', 'candidates', 'merged'],
  writes: ['candidates', 'merged', 'dispatch', 'outcomes'],
} as const satisfies { reads: readonly TopicKey[]; writes: readonly TopicKey[] };

/** Builds the decisions topology. Processor options are validated here (ConfigError naming the PUSH_* key). */
export function buildDecisionsTopology(options: DecisionsTopologyOptions): Topology {
  const t = (key: TopicKey) => topicName(key, options.topicPrefix);
  const source = (key: TopicKey) => ({ topics: [t(key)], keySerde: stringSerde, valueSerde: options.valueSerdes(key) });
  const sink = (key: TopicKey) => ({ topic: t(key), keySerde: stringSerde, valueSerde: options.valueSerdes(key) });
  const b = new TopologyBuilder()
    .addSource('persisted-source', source('persisted'))
    .addSource('presence-source', source('presence'))
    .addSource('tokens-source', source('tokens'))
    .addSource('settings-source', source('settings'))
    .addSource('merged-source', source('merged'))
    .addProcessor('online-filter', onlineFilter({ ...options.onlineFilter, outputs: { candidates: 'candidates-sink', outcomes: 'outcomes-sink' } }), 'persisted-source', 'presence-source', 'tokens-source')
    .addProcessor('policy', policy({ ...options.policy, outputs: { dispatch: 'dispatch-sink', outcomes: 'outcomes-sink' } }), 'merged-source', 'settings-source', 'tokens-source', 'presence-source')
    .addSink('candidates-sink', sink('candidates'), 'online-filter')
    .addSink('dispatch-sink', sink('dispatch'), 'policy')
    .addSink('outcomes-sink', sink('outcomes'), 'online-filter', 'policy')
    .addSource('candidates-source', source('candidates'))
    .addProcessor('merge', merge({ ...options.merge, outputs: { merged: 'merged-sink', outcomes: 'merge-outcomes-sink' } }), 'candidates-source')
    .addSink('merged-sink', sink('merged'), 'merge')
    .addSink('merge-outcomes-sink', sink('outcomes'), 'merge');
  for (const store of onlineFilterStores(ONLINE_FILTER_STORE_NAMES)) b.addStateStore(store, 'online-filter');
  for (const store of mergeStores(MERGE_STORE_NAMES)) b.addStateStore(store, 'merge');
  for (const store of policyStores(POLICY_STORE_NAMES)) b.addStateStore(store, 'policy');
  return b.build();
}

/**
 * The stages' options from PUSH_* environment keys (PUSH_HOLD_WINDOW_MS, PUSH_HEARTBEAT_TIMEOUT_MS,
 * PUSH_BACKGROUND_COOLDOWN_MS, PUSH_MERGE_WINDOW_MS, PUSH_MERGE_MODE, PUSH_MERGE_RETENTION_MS,
 * PUSH_MENTION_RULE, PUSH_MENTION_ALL, PUSH_GENERIC_TITLE, PUSH_GENERIC_TEXT, PUSH_VENDOR_QUOTAS,
 * PUSH_PARTITIONS, PUSH_QUOTA_TIME_ZONE). A bad value throws a ConfigError naming its key.
 */
export function decisionsOptionsFromEnv(env: Env = process.env): Pick<DecisionsTopologyOptions, 'onlineFilter' | 'merge' | 'policy'> {
  return { onlineFilter: onlineFilterOptionsFromEnv(env), merge: mergeOptionsFromEnv(env), policy: policyOptionsFromEnv(env) };
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
