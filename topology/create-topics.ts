/**
 * Creating topics on a cluster of any size: the replication each gets, and a wait for leaders that
 * holds on several brokers. kafkajs' own `waitForLeaders` asks one broker for the new topics'
 * metadata and gives up on UNKNOWN_TOPIC_OR_PARTITION, which a broker answers until the controller's
 * metadata reaches it; on a 3-broker cluster that failed a worker's start.
 */
import type { Admin, ITopicConfig } from 'kafkajs';
import { errorMessage } from '../common/errors.ts';
import { kafkaErrorType } from './kafka-errors.ts';

/** How many replicas a created topic gets and how many must have a write (`min.insync.replicas`). */
export interface TopicReplication {
  readonly factor: number;
  readonly minInsyncReplicas: number;
}

/**
 * A created topic's replication factor and configs: `replication`'s when given, else the broker's
 * defaults (replication factor -1, no `min.insync.replicas` of its own).
 */
export function replicatedTopic(
  configs: Readonly<Record<string, string>>,
  replication?: TopicReplication,
): { replicationFactor: number; configEntries: Array<{ name: string; value: string }> } {
  const all = replication ? { ...configs, 'min.insync.replicas': String(replication.minInsyncReplicas) } : configs;
  return { replicationFactor: replication?.factor ?? -1, configEntries: Object.entries(all).map(([name, value]) => ({ name, value })) };
}

/** A topic the broker refused to create, with Kafka's reason (e.g. INVALID_REPLICATION_FACTOR: fewer brokers than replicas). */
export class TopicCreationError extends Error {
  constructor(readonly refusals: ReadonlyArray<{ topic: string; type: string; message: string }>) {
    super(`creating topics failed: ${refusals.map((r) => `${r.topic}: ${r.type} (${r.message})`).join('; ')}`);
    this.name = 'TopicCreationError';
  }
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Creates `topics` (one that exists already, e.g. made by a concurrent creator, is fine) and waits
 * until every partition of each has a leader. Throws TopicCreationError naming each refused topic
 * and Kafka's reason.
 */
export async function createTopicsWithLeaders(admin: Admin, topics: ITopicConfig[], timeoutMs = 60_000): Promise<void> {
  if (topics.length === 0) return;
  try {
    await admin.createTopics({ topics, waitForLeaders: false });
  } catch (error) {
    // One error per refused topic (KafkaJSAggregateError); anything else (a connection lost, the
    // controller moving) is thrown as it is, so callers can tell a transient failure.
    const errors = (error as { errors?: Array<{ topic?: string; type?: string; message?: string }> }).errors;
    if (!Array.isArray(errors)) throw error;
    const refused = errors.filter((e) => e.type !== 'TOPIC_ALREADY_EXISTS' && !/already exists/i.test(e.message ?? ''));
    if (refused.length > 0) throw new TopicCreationError(refused.map((e) => ({ topic: e.topic ?? '?', type: e.type ?? 'UNKNOWN', message: e.message ?? '' })));
  }
  await waitForLeaders(admin, topics, timeoutMs);
}

/** Leadership not settled yet: the broker named leader in the metadata may not serve the partition for a moment after creation. */
const LEADER_MOVING = new Set(['NOT_LEADER_FOR_PARTITION', 'NOT_LEADER_OR_FOLLOWER', 'LEADER_NOT_AVAILABLE', 'UNKNOWN_TOPIC_OR_PARTITION']);

/**
 * `admin.fetchTopicOffsets`, asked again while the partitions' leadership settles (kafkajs gives up
 * at once on NOT_LEADER_FOR_PARTITION, which a just-created topic's leader answers for a moment).
 */
export async function fetchTopicOffsetsWhenLed(admin: Admin, topic: string, timeoutMs = 30_000): ReturnType<Admin['fetchTopicOffsets']> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await admin.fetchTopicOffsets(topic);
    } catch (error) {
      const type = kafkaErrorType(error);
      if (type === undefined || !LEADER_MOVING.has(type) || Date.now() > deadline) throw error;
      await sleep(100);
    }
  }
}

/** Waits until the metadata names a leader for every partition and each leader answers for its partitions. */
async function waitForLeaders(admin: Admin, topics: ITopicConfig[], timeoutMs: number): Promise<void> {
  const names = topics.map((t) => t.topic);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const { topics: metadata } = await admin.fetchTopicMetadata({ topics: names });
      if (metadata.length === names.length && metadata.every((t) => t.partitions.length > 0 && t.partitions.every((p) => p.leader >= 0))) {
        for (const name of names) await fetchTopicOffsetsWhenLed(admin, name, Math.max(0, deadline - Date.now()));
        return;
      }
    } catch (error) {
      // Not known to the broker asked yet, or no leader yet: asked again until the deadline.
      if (Date.now() > deadline) throw new Error(`topics ${names.join(', ')} have no leader after ${timeoutMs} ms: ${errorMessage(error)}`, { cause: error });
    }
    if (Date.now() > deadline) throw new Error(`topics ${names.join(', ')} have no leader after ${timeoutMs} ms`);
    await sleep(100);
  }
}
