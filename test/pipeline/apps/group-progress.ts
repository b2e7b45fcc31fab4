/** How far a consumer group has committed a topic, for tests that must wait for a stage to have read a table first. */
import assert from 'node:assert/strict';
import type { Kafka } from 'kafkajs';

/** Per partition of `topic`: the offset consumer group `groupId` committed and the end offset. */
export async function progressOf(kafka: Kafka, groupId: string, topic: string): Promise<Array<{ partition: number; committed: number; end: number }>> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const ends = new Map((await admin.fetchTopicOffsets(topic)).map((p) => [p.partition, Number(p.high)]));
    const [committed] = await admin.fetchOffsets({ groupId, topics: [topic] });
    const at = new Map(committed!.partitions.map((p) => [p.partition, Number(p.offset)]));
    return [...ends].map(([partition, end]) => ({ partition, committed: at.get(partition) ?? -1, end }));
  } finally {
    await admin.disconnect();
  }
}

/** Waits until consumer group `groupId` has committed every record of `topic` (and so what it made of them). */
export async function committedAll(kafka: Kafka, groupId: string, topic: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const progress = await progressOf(kafka, groupId, topic);
    if (progress.every((p) => p.committed >= p.end || p.end === 0)) return; // an empty partition has nothing to commit
    assert.ok(Date.now() < deadline, `${groupId} committed ${topic} in ${timeoutMs} ms: ${JSON.stringify(progress)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}
