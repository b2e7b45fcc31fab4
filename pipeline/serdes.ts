/**
 * Value serdes of the pipeline's topics, by their key in TOPICS: through the schema registry on
 * Kafka, or raw Avro of the same schemas/ files in the TopologyTestDriver.
 */
import type { SchemaRegistry } from '@kafkajs/confluent-schema-registry';
import { avroSerde, type Serde } from '../topology/serdes.ts';
import { registryAvroSerde } from '../topology/registry-serde.ts';
import { avroType, topicValueSchema, valueSubject } from './schemas.ts';
import { TOPICS, type TopicKey } from './topics.ts';

/** Gives the value serde of a topic (by its key in TOPICS). */
export type ValueSerdes = (key: TopicKey) => Serde<unknown>;

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

/**
 * One serde for a source that reads several topics with different value schemas (the values of
 * each topic by that topic's serde).
 */
export function perTopicSerde(serdes: ValueSerdes, topics: ReadonlyArray<readonly [string, TopicKey]>): Serde<unknown> {
  const byTopic = new Map(topics.map(([name, key]) => [name, serdes(key)]));
  return {
    serialize: (topic, value) => byTopic.get(topic)!.serialize(topic, value),
    deserialize: (topic, data) => byTopic.get(topic)!.deserialize(topic, data),
  };
}
