/** Producing to and reading from the real stack for the decisions integration tests. */
import { after, before } from 'node:test';
import { type Admin } from 'kafkajs';
import { kafkaClient } from '../../../common/kafka-client.ts';
import { schemaRegistryClient } from '../../../common/registry-client.ts';
import { stackEndpoints, uniqueName } from '../../support/stack.ts';
import { registerSchemas } from '../../../pipeline/schemas.ts';
import { registryValueSerdes, type ValueSerdes } from '../../../pipeline/serdes.ts';
import { TOPICS, topicName, type TopicKey } from '../../../pipeline/topics.ts';
import { createTopicsWithLeaders } from '../../../topology/create-topics.ts';

export const endpoints = stackEndpoints();
export const kafka = kafkaClient(endpoints, { clientId: 'decisions-tests' });
export const registry = schemaRegistryClient(endpoints);

/** An admin client, connected before the file's tests and disconnected after them. */
export function useAdmin(): Admin {
  const admin = kafka.admin();
  before(() => admin.connect());
  after(() => admin.disconnect());
  return admin;
}

export interface TestTopics {
  prefix: string;
  name(key: TopicKey): string;
  serdes: ValueSerdes;
}

/** Creates every pipeline topic under a fresh prefix (4 partitions) and registers their schemas. */
export async function createTestTopics(admin: Admin, partitions = 4): Promise<TestTopics> {
  const prefix = `${uniqueName('decisions')}.`;
  const keys = Object.keys(TOPICS) as TopicKey[];
  await createTopicsWithLeaders(
    admin,
    keys.map((k) => ({ topic: topicName(k, prefix), numPartitions: partitions, replicationFactor: 1 })),
  );
  await registerSchemas(registry, { prefix });
  return { prefix, name: (k) => topicName(k, prefix), serdes: registryValueSerdes(registry, prefix) };
}

/** Produces records keyed by uid, encoded with the registry serde, in batches. */
export async function produce(t: TestTopics, key: TopicKey, records: Array<{ uid: string; timestamp: number } & object>, batch = 1_000): Promise<void> {
  const producer = kafka.producer({ allowAutoTopicCreation: false });
  await producer.connect();
  try {
    const topic = t.name(key);
    const serde = t.serdes(key);
    for (let i = 0; i < records.length; i += batch) {
      const messages = await Promise.all(
        records.slice(i, i + batch).map(async (r) => ({ key: r.uid, value: await serde.serialize(topic, r), timestamp: String(r.timestamp) })),
      );
      await producer.send({ topic, acks: -1, messages });
    }
  } finally {
    await producer.disconnect();
  }
}

/** Waits until the application's committed offsets reach the end of the given topics. */
export async function waitConsumed(admin: Admin, groupId: string, topics: string[], timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    let behind = 0;
    for (const topic of topics) {
      const ends = await admin.fetchTopicOffsets(topic);
      const [committed] = await admin.fetchOffsets({ groupId, topics: [topic] });
      for (const p of ends) {
        const c = committed?.partitions.find((x) => x.partition === p.partition);
        const at = c && Number(c.offset) >= 0 ? Number(c.offset) : 0;
        behind += Math.max(0, Number(p.high) - at);
      }
    }
    if (behind === 0) return;
    if (Date.now() > deadline) throw new Error(`${groupId} still ${behind} records behind on ${topics.join(', ')}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/**
 * Reads a topic (read_committed) from the beginning, decoding values with the registry, until
 * `enough` holds or `timeoutMs` passes; then keeps reading `settleMs` more to catch extra records.
 */
export async function readDecoded<V>(t: TestTopics, key: TopicKey, enough: (values: V[]) => boolean, timeoutMs: number, settleMs = 3_000): Promise<V[]> {
  const topic = t.name(key);
  const serde = t.serdes(key);
  const consumer = kafka.consumer({ groupId: uniqueName('reader'), maxWaitTimeInMs: 100, readUncommitted: false });
  const values: V[] = [];
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  let done!: () => void;
  const reached = new Promise<void>((r) => (done = r));
  await consumer.run({
    eachBatch: async ({ batch }) => {
      for (const m of batch.messages) if (m.value) values.push(JSON.parse(JSON.stringify(await serde.deserialize(topic, m.value))) as V);
      if (enough(values)) done();
    },
  });
  const timer = setTimeout(done, timeoutMs);
  await reached;
  clearTimeout(timer);
  await new Promise((r) => setTimeout(r, settleMs));
  await consumer.disconnect();
  return values;
}
