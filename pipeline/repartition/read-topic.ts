/**
 * Reads a compacted topic (a changelog, a table) to its end, read_committed, as the latest value per
 * key and partition, tombstones applied: what a store restored from it holds. Uses the runtime's own
 * restore (topology/changelog.ts), so the copy sees exactly what a worker would restore.
 */
import type { Admin, Kafka } from 'kafkajs';
import { restoreChangelogs } from '../../topology/changelog.ts';
import { fetchTopicOffsetsWhenLed } from '../../topology/create-topics.ts';

/** Latest value per key, by partition. */
export type TopicContent = Map<number, Map<string, Buffer>>;

export async function readLatest(kafka: Kafka, admin: Admin, topic: string, groupPrefix: string): Promise<TopicContent> {
  const content: TopicContent = new Map();
  const partitions = (await fetchTopicOffsetsWhenLed(admin, topic)).map((p) => p.partition);
  for (const p of partitions) content.set(p, new Map());
  await restoreChangelogs(
    kafka,
    admin,
    groupPrefix,
    partitions.map((partition) => ({
      topic,
      partition,
      apply: (key, value) => {
        const entries = content.get(partition)!;
        if (value === null) entries.delete(key);
        else entries.set(key, value);
      },
      progress: () => undefined,
    })),
  );
  return content;
}

/** How many entries the content holds, all partitions. */
export const entryCount = (c: TopicContent): number => [...c.values()].reduce((n, m) => n + m.size, 0);
