import { randomUUID } from 'node:crypto';
import type { Admin, Kafka, PartitionAssigner } from 'kafkajs';
import { AssignerProtocol } from 'kafkajs';
import { errorCode } from '../common/errors.ts';
import type { Logger } from '../common/log.ts';
import { createTopicsWithLeaders, fetchTopicOffsetsWhenLed, replicatedTopic, type TopicReplication } from './create-topics.ts';

/** `<applicationId>-<store>-changelog`, as Kafka Streams names it. */
export function changelogTopicName(applicationId: string, store: string): string {
  return `${applicationId}-${store}-changelog`;
}

export interface TopicToEnsure {
  readonly topic: string;
  readonly numPartitions: number;
  readonly configs?: Readonly<Record<string, string>>;
}

/** Creates the topics that do not exist yet (concurrent creators are fine) and waits for their leaders. */
export async function ensureTopics(admin: Admin, topics: readonly TopicToEnsure[], replication?: TopicReplication): Promise<void> {
  const existing = new Set(await admin.listTopics());
  const missing = topics.filter((t) => !existing.has(t.topic));
  await createTopicsWithLeaders(
    admin,
    missing.map((t) => ({ topic: t.topic, numPartitions: t.numPartitions, ...replicatedTopic(t.configs ?? {}, replication) })),
  );
}

/** One changelog partition to replay into a store. */
export interface RestoreTarget {
  readonly topic: string;
  readonly partition: number;
  /** Applies one changelog record (value null = tombstone). */
  apply(key: string, value: Buffer | null): void;
  /** Called with the running count, and once more with done = true. */
  progress(restoredRecords: number, done: boolean): void;
}

/** Assigns exactly the partitions being restored to the (only) member of a private restore group. */
function fixedAssigner(partitionsByTopic: Map<string, number[]>): PartitionAssigner {
  return () => ({
    name: 'ChangelogRestoreAssigner',
    version: 1,
    async assign({ members }) {
      const assignment = Object.fromEntries(partitionsByTopic);
      return members.map((m, i) => ({
        memberId: m.memberId,
        memberAssignment: AssignerProtocol.MemberAssignment.encode({ version: 1, assignment: i === 0 ? assignment : {}, userData: Buffer.alloc(0) }),
      }));
    },
    protocol({ topics }) {
      return { name: 'ChangelogRestoreAssigner', metadata: AssignerProtocol.MemberMetadata.encode({ version: 1, topics, userData: Buffer.alloc(0) }) };
    },
  });
}

/**
 * Replays changelog partitions from the beginning to their end (read_committed), so that stores
 * hold exactly what committed transactions wrote. kafkajs has no manual assignment, so the replay
 * runs in a throwaway consumer group whose assigner hands it exactly the partitions asked for; the
 * group is deleted afterwards. Call only after the task's producer has fenced its predecessors, so
 * no transaction is left open on these partitions.
 */
export async function restoreChangelogs(kafka: Kafka, admin: Admin, applicationId: string, targets: readonly RestoreTarget[], logger?: Logger): Promise<void> {
  const byKey = new Map(targets.map((t) => [`${t.topic}:${t.partition}`, t]));
  const endOffsets = new Map<string, bigint>();
  for (const topic of new Set(targets.map((t) => t.topic))) {
    for (const p of await fetchTopicOffsetsWhenLed(admin, topic)) {
      const key = `${topic}:${p.partition}`;
      if (byKey.has(key) && BigInt(p.high) > BigInt(p.low)) endOffsets.set(key, BigInt(p.high));
    }
  }
  for (const t of targets) if (!endOffsets.has(`${t.topic}:${t.partition}`)) t.progress(0, true);
  if (endOffsets.size === 0) return;

  const partitionsByTopic = new Map<string, number[]>();
  for (const key of endOffsets.keys()) {
    const t = byKey.get(key)!;
    if (!partitionsByTopic.has(t.topic)) partitionsByTopic.set(t.topic, []);
    partitionsByTopic.get(t.topic)!.push(t.partition);
  }
  const groupId = `${applicationId}-restore-${randomUUID()}`;
  const consumer = kafka.consumer({
    groupId,
    partitionAssigners: [fixedAssigner(partitionsByTopic)],
    maxWaitTimeInMs: 100,
    readUncommitted: false,
    maxBytesPerPartition: 4 * 1024 * 1024,
  });
  const counts = new Map<string, number>();
  let finish!: () => void;
  let fail!: (e: unknown) => void;
  const finished = new Promise<void>((resolve, reject) => ((finish = resolve), (fail = reject)));
  const markPosition = (topic: string, partition: number, lastOffset: string) => {
    const key = `${topic}:${partition}`;
    const end = endOffsets.get(key);
    if (end === undefined || BigInt(lastOffset) + 1n < end) return;
    endOffsets.delete(key);
    byKey.get(key)!.progress(counts.get(key) ?? 0, true);
    if (endOffsets.size === 0) finish();
  };
  consumer.on(consumer.events.END_BATCH_PROCESS, ({ payload }) => markPosition(payload.topic, payload.partition, payload.lastOffset));
  consumer.on(consumer.events.CRASH, ({ payload }) => fail(payload.error));
  try {
    await consumer.connect();
    await consumer.subscribe({ topics: [...partitionsByTopic.keys()], fromBeginning: true });
    await consumer.run({
      autoCommit: false,
      eachBatch: async ({ batch }) => {
        const key = `${batch.topic}:${batch.partition}`;
        const target = byKey.get(key);
        if (!target || !endOffsets.has(key)) return;
        for (const m of batch.messages) {
          if (m.key) target.apply(m.key.toString('utf8'), m.value);
        }
        const n = (counts.get(key) ?? 0) + batch.messages.length;
        counts.set(key, n);
        target.progress(n, false);
      },
    });
    await finished;
  } finally {
    await consumer.disconnect().catch((error) => logger?.debug('restore consumer disconnect failed', { groupId, code: errorCode(error), error }));
    await admin.deleteGroups([groupId]).catch((error) => logger?.debug('restore group not deleted', { groupId, error }));
  }
}
