import type { ValueSerdes } from '../serdes.ts';
import { topicName, type TopicKey } from '../topics.ts';
import { stringSerde } from '../../topology/serdes.ts';

/**
 * What every application's wiring takes, beside its own options: how values are encoded (registry
 * serdes on Kafka, raw Avro in the TopologyTestDriver) and the topic name prefix.
 */
export interface WiringOptions {
  readonly valueSerdes: ValueSerdes;
  /** PUSH_TOPIC_PREFIX; default none. */
  readonly topicPrefix?: string;
}

/** Source and sink node options of a pipeline topic: uid keys as strings, values by the topic's serde. */
export function topicIo(options: WiringOptions) {
  const topic = (key: TopicKey) => topicName(key, options.topicPrefix);
  return {
    topic,
    source: (key: TopicKey) => ({ topics: [topic(key)], keySerde: stringSerde, valueSerde: options.valueSerdes(key) }),
    sink: (key: TopicKey) => ({ topic: topic(key), keySerde: stringSerde, valueSerde: options.valueSerdes(key) }),
  };
}
