/**
 * Reads compacted topics (changelogs, tables) to their end, read_committed, as the latest value per
 * key and partition, tombstones applied: what a store restored from them holds. Uses the runtime's
 * own restore (topology/changelog.ts), so the copy sees exactly what a worker would restore; all
 * topics of one call are read by one consumer (one group join).
 */
import type { Admin, Kafka } from 'kafkajs';
import { restoreChangelogs, type RestoreTarget } from '../../topology/changelog.ts';
import { fetchTopicOffsetsWhenLed } from '../../topology/create-topics.ts';

/** Latest value per key, by partition. */
export type TopicContent = Map<number, Map<string, Buffer>>;

export async function readLatest(kafka: Kafka, admin: Admin, topics: readonly string[], groupPrefix: string): Promise<Map<string, TopicContent>> {
  const contents = new Map<string, TopicContent>();
  const targets: RestoreTarget[] = [];
  for (const topic of topics) {
    const content: TopicContent = new Map();
    contents.set(topic, content);
    for (const { partition } of await fetchTopicOffsetsWhenLed(admin, topic)) {
      const entries = new Map<string, Buffer>();
      content.set(partition, entries);
      targets.push({
        topic,
        partition,
        apply: (key, value) => (value === null ? entries.delete(key) : entries.set(key, value)),
        progress: () => undefined,
      });
    }
  }
  await restoreChangelogs(kafka, admin, groupPrefix, targets);
  return contents;
}

/** How many entries the content holds, all partitions. */
export const entryCount = (c: TopicContent): number => [...c.values()].reduce((n, m) => n + m.size, 0);
