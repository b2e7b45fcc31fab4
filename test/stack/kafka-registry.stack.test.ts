import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { EachMessagePayload } from 'kafkajs';
import { kafkaClient } from '../../common/kafka-client.ts';
import { schemaRegistryClient } from '../../common/registry-client.ts';
import { SchemaType } from '@kafkajs/confluent-schema-registry';
import { stackEndpoints, uniqueName } from '../support/stack.ts';
import { createTopicsWithLeaders } from '../../topology/create-topics.ts';

const endpoints = stackEndpoints();
const kafka = kafkaClient(endpoints, { clientId: 'stack-smoke' });

async function createTopics(...topics: string[]): Promise<void> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    await createTopicsWithLeaders(
      admin,
      topics.map((topic) => ({ topic, numPartitions: 1 })),
    );
  } finally {
    await admin.disconnect();
  }
}

/** Consumes `topic` from the beginning until `count` records arrived (or `settleMs` of quiet after it). */
async function consumeAll(topic: string, count: number, isolation: 'read_committed' | 'read_uncommitted'): Promise<EachMessagePayload['message'][]> {
  const consumer = kafka.consumer({ groupId: uniqueName('smoke-reader'), readUncommitted: isolation === 'read_uncommitted' });
  const seen: EachMessagePayload['message'][] = [];
  await consumer.connect();
  await consumer.subscribe({ topics: [topic], fromBeginning: true });
  let resolveDone!: () => void;
  const done = new Promise<void>((resolve) => (resolveDone = resolve));
  await consumer.run({
    eachMessage: async ({ message }) => {
      seen.push(message);
      if (seen.length >= count) resolveDone();
    },
  });
  await Promise.race([done, new Promise((resolve) => setTimeout(resolve, 20_000))]);
  // Give anything beyond the expected count a moment to show up, so extra records fail the test.
  await new Promise((resolve) => setTimeout(resolve, 1500));
  await consumer.disconnect();
  return seen;
}

test('an Avro record registered in the schema registry round-trips through Kafka', async () => {
  const topic = uniqueName('smoke-avro');
  await createTopics(topic);
  const registry = schemaRegistryClient(endpoints);
  const schema = {
    type: 'record',
    name: 'SmokeMessage',
    namespace: 'im.push.smoke',
    fields: [
      { name: 'uid', type: 'string' },
      { name: 'seq', type: 'long' },
      { name: 'summary', type: ['null', 'string'], default: null },
    ],
  };
  const { id } = await registry.register({ type: SchemaType.AVRO, schema: JSON.stringify(schema) }, { subject: `${topic}-value` });
  assert.ok(id > 0, 'the registry assigns a schema id');
  assert.equal(await registry.getLatestSchemaId(`${topic}-value`), id);

  const value = { uid: 'u-1', seq: 42, summary: 'hello' };
  const encoded = await registry.encode(id, value);
  assert.equal(encoded[0], 0, 'Confluent wire format starts with the magic byte 0');
  assert.equal(encoded.readInt32BE(1), id, 'followed by the schema id');

  const producer = kafka.producer();
  await producer.connect();
  await producer.send({ topic, messages: [{ key: 'u-1', value: encoded }] });
  await producer.disconnect();

  const [message] = await consumeAll(topic, 1, 'read_committed');
  assert.ok(message?.value);
  assert.deepEqual({ ...(await registry.decode(message.value)) }, value);
});

test('a transactional consume-transform-produce commits output and offsets together; aborted output stays invisible', async () => {
  const input = uniqueName('smoke-tx-in');
  const output = uniqueName('smoke-tx-out');
  const groupId = uniqueName('smoke-tx-group');
  await createTopics(input, output);

  const plain = kafka.producer();
  await plain.connect();
  await plain.send({ topic: input, messages: Array.from({ length: 10 }, (_, i) => ({ key: `k${i}`, value: String(i) })) });
  await plain.disconnect();

  const producer = kafka.producer({ transactionalId: uniqueName('smoke-tx'), idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();

  // An aborted transaction: its records must never be read under read_committed.
  const aborted = await producer.transaction();
  await aborted.send({ topic: output, messages: [{ key: 'aborted', value: 'must-not-be-seen' }] });
  await aborted.abort();

  const consumer = kafka.consumer({ groupId });
  await consumer.connect();
  await consumer.subscribe({ topics: [input], fromBeginning: true });
  let processed = 0;
  let resolveDone!: () => void;
  const done = new Promise<void>((resolve) => (resolveDone = resolve));
  await consumer.run({
    autoCommit: false,
    eachBatchAutoResolve: false,
    eachBatch: async ({ batch, resolveOffset }) => {
      const tx = await producer.transaction();
      await tx.send({ topic: output, messages: batch.messages.map((m) => ({ key: m.key, value: String(Number(m.value) * 10) })) });
      const last = batch.messages[batch.messages.length - 1]!;
      await tx.sendOffsets({
        consumerGroupId: groupId,
        topics: [{ topic: batch.topic, partitions: [{ partition: batch.partition, offset: String(Number(last.offset) + 1) }] }],
      });
      await tx.commit();
      for (const m of batch.messages) resolveOffset(m.offset);
      processed += batch.messages.length;
      if (processed >= 10) resolveDone();
    },
  });
  await Promise.race([done, new Promise((resolve) => setTimeout(resolve, 20_000))]);
  await consumer.disconnect();
  await producer.disconnect();
  assert.equal(processed, 10);

  const committed = await consumeAll(output, 10, 'read_committed');
  assert.deepEqual(
    committed.map((m) => Number(m.value)).sort((a, b) => a - b),
    [0, 10, 20, 30, 40, 50, 60, 70, 80, 90],
  );
  assert.ok(!committed.some((m) => String(m.value) === 'must-not-be-seen'), 'aborted record is not visible to read_committed');

  const uncommitted = await consumeAll(output, 11, 'read_uncommitted');
  assert.ok(
    uncommitted.some((m) => String(m.value) === 'must-not-be-seen'),
    'the aborted record is in the log (read_uncommitted sees it)',
  );

  const admin = kafka.admin();
  await admin.connect();
  const [offsets] = await admin.fetchOffsets({ groupId, topics: [input] });
  await admin.disconnect();
  assert.equal(offsets?.partitions[0]?.offset, '10', 'input offsets were committed inside the transaction');
});
