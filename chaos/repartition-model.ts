/**
 * The independent model a repartition is checked against (test/pipeline/repartition/repartition.stack.test.ts, chaos/repartition.ts):
 * what a changelog holds, read with a plain consumer rather than the runtime's restore or the
 * repartition's own reader, and the partition of a uid as the producers choose it.
 */
import { Partitioners, type PartitionMetadata } from 'kafkajs';
import { kafkaClient } from '../common/kafka-client.ts';
import { randomBytes } from 'node:crypto';
import { readEndpoints } from '../common/endpoints.ts';

export interface ChangelogEntry {
  readonly partition: number;
  readonly key: string;
  readonly value: Buffer;
}

/** Latest value per (partition, key) of a changelog, tombstones applied, read to its end (read_committed). */
export async function readChangelog(topic: string): Promise<ChangelogEntry[]> {
  const kafka = kafkaClient(readEndpoints(), { clientId: 'repartition-model' });
  const admin = kafka.admin();
  await admin.connect();
  const ends = new Map((await admin.fetchTopicOffsets(topic)).filter((p) => Number(p.high) > Number(p.low)).map((p) => [p.partition, Number(p.high)]));
  const groupId = `repartition-model-${randomBytes(6).toString('hex')}`;
  const latest = new Map<string, ChangelogEntry>();
  if (ends.size === 0) return await admin.disconnect().then(() => []);
  const consumer = kafka.consumer({ groupId, maxWaitTimeInMs: 100 });
  let done!: () => void;
  const finished = new Promise<void>((resolve) => (done = resolve));
  // The last record of a partition may be followed by transaction markers: done when the fetch position passed the end.
  consumer.on(consumer.events.END_BATCH_PROCESS, ({ payload }) => {
    if (Number(payload.lastOffset) + 1 >= (ends.get(payload.partition) ?? 0)) ends.delete(payload.partition);
    if (ends.size === 0) done();
  });
  try {
    await consumer.connect();
    await consumer.subscribe({ topics: [topic], fromBeginning: true });
    await consumer.run({
      eachMessage: async ({ partition, message }) => {
        const key = message.key!.toString();
        if (message.value === null) latest.delete(`${partition}|${key}`);
        else latest.set(`${partition}|${key}`, { partition, key, value: message.value });
      },
    });
    await finished;
  } finally {
    await consumer.disconnect();
    await admin.deleteGroups([groupId]).catch(() => undefined);
    await admin.disconnect();
  }
  return [...latest.values()];
}

/** The partition of a uid among `n`, as kafkajs' producers choose it (its default partitioner). */
export function uidPartition(uid: string, n: number): number {
  const metadata: PartitionMetadata[] = Array.from({ length: n }, (_, partitionId) => ({
    partitionId,
    leader: 0,
    replicas: [0],
    isr: [0],
    offlineReplicas: [],
    partitionErrorCode: 0,
  }));
  return Partitioners.DefaultPartitioner()({ topic: 'model', partitionMetadata: metadata, message: { key: uid, value: null } });
}
