/**
 * Creating and inspecting the pipeline's topics (pipeline/topics.ts) on a cluster: used by the
 * worker at start, by `pushctl topics` and by the demo.
 */
import type { Admin, ITopicConfig } from 'kafkajs';
import { kafkaClient, type KafkaAccess } from '../common/kafka-client.ts';
import { readEndpoints } from '../common/endpoints.ts';
import { ConfigError } from '../common/errors.ts';
import { createTopicsWithLeaders, replicatedTopic, TopicCreationError, type TopicReplication } from '../topology/create-topics.ts';
import { TOPICS, topicName, type TopicKey } from './topics.ts';
import { readReplication } from './worker-config.ts';

/** How many partitions the topics get and the prefix of their names (PUSH_TOPIC_PREFIX). */
export interface TopicPlan {
  readonly partitions: number;
  readonly prefix: string;
  /** Replicas and min.insync.replicas. Default PUSH_REPLICATION_FACTOR and PUSH_MIN_INSYNC_REPLICAS. */
  readonly replication?: TopicReplication;
}

/** One pipeline topic as found on the cluster. */
export type TopicSize =
  { readonly name: string; readonly exists: false } | { readonly name: string; readonly exists: true; readonly partitions: number; readonly records: number };

function admin(access: KafkaAccess) {
  return kafkaClient(access, { clientId: 'pushctl' }).admin();
}

/** Creates the pipeline's topics that are missing (idempotent); returns the names it created. */
export async function createPipelineTopics(plan: TopicPlan, access: KafkaAccess = readEndpoints()): Promise<string[]> {
  const replication = plan.replication ?? readReplication();
  const client = admin(access);
  await client.connect();
  try {
    const existing = new Set(await client.listTopics());
    const wanted: ITopicConfig[] = (Object.keys(TOPICS) as TopicKey[])
      .map((key) => ({ key, name: topicName(key, plan.prefix) }))
      .filter(({ name }) => !existing.has(name))
      .map(({ key, name }) => {
        const configs = 'configs' in TOPICS[key] ? (TOPICS[key] as { configs: Record<string, string> }).configs : {};
        return { topic: name, numPartitions: plan.partitions, ...replicatedTopic(configs, replication) };
      });
    try {
      await createTopicsWithLeaders(client, wanted);
    } catch (error) {
      // More replicas than brokers: the setting is what to change.
      if (error instanceof TopicCreationError && error.refusals.some((r) => r.type === 'INVALID_REPLICATION_FACTOR'))
        throw new ConfigError('PUSH_REPLICATION_FACTOR', `${replication.factor} replicas asked, more than the cluster's brokers can hold (${error.message})`);
      throw error;
    }
    await assertPartitionCount(client, plan);
    return wanted.map((t) => t.topic);
  } finally {
    await client.disconnect();
  }
}

/**
 * The pipeline's topics must all have `plan.partitions` partitions: tasks are co-partitioned and
 * vendor quotas are split by PUSH_PARTITIONS, so a worker started with another count than its
 * topics' (e.g. a new generation after `pushctl repartition`, docs/operations.md) fails at start.
 */
async function assertPartitionCount(client: Admin, plan: TopicPlan): Promise<void> {
  const names = (Object.keys(TOPICS) as TopicKey[]).map((key) => topicName(key, plan.prefix));
  const { topics } = await client.fetchTopicMetadata({ topics: names });
  const other = topics.filter((t) => t.partitions.length !== plan.partitions);
  if (other.length > 0)
    throw new ConfigError(
      'PUSH_PARTITIONS',
      `${plan.partitions} set, but ${other.length} of the pipeline's topics have another count (${other
        .slice(0, 3)
        .map((t) => `${t.name} has ${t.partitions.length}`)
        .join(
          ', ',
        )}${other.length > 3 ? ', …' : ''}); set the count the topics have, or move them to another one with pushctl repartition (docs/operations.md, "Growing the partition count")`,
    );
}

/** Every pipeline topic with its partition count and the records it holds (end minus start offsets). */
export async function pipelineTopicSizes(prefix: string, access: KafkaAccess = readEndpoints()): Promise<TopicSize[]> {
  const client = admin(access);
  await client.connect();
  try {
    const existing = new Set(await client.listTopics());
    const sizes: TopicSize[] = [];
    for (const name of (Object.keys(TOPICS) as TopicKey[]).map((key) => topicName(key, prefix))) {
      if (!existing.has(name)) {
        sizes.push({ name, exists: false });
        continue;
      }
      const offsets = await client.fetchTopicOffsets(name);
      sizes.push({ name, exists: true, partitions: offsets.length, records: offsets.reduce((sum, p) => sum + Number(p.high) - Number(p.low), 0) });
    }
    return sizes;
  } finally {
    await client.disconnect();
  }
}
