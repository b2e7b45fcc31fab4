import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { kafkaClient } from '../../common/kafka-client.ts';
import { schemaRegistryClient } from '../../common/registry-client.ts';
import { KafkaReceiptPublisher, type KeyedReceiptRaw, type ReceiptRawRecord } from '../../receipts/publisher.ts';
import { createTopicsWithLeaders } from '../../topology/create-topics.ts';
import { stackEndpoints, uniqueName } from '../support/stack.ts';

describe('receipt publisher: callbacks verified while a request is in flight go together in the next one', () => {
  const endpoints = stackEndpoints();
  const topic = uniqueName('receipts-raw-batching');
  const kafka = kafkaClient(endpoints, { clientId: 'publisher-batching-test' });
  const produces: number[] = [];
  let publisher: KafkaReceiptPublisher;

  before(async () => {
    const admin = kafka.admin();
    await admin.connect();
    await createTopicsWithLeaders(admin, [{ topic, numPartitions: 3, replicationFactor: 1 }]);
    await admin.disconnect();
    publisher = new KafkaReceiptPublisher({ endpoints, topic, onRequest: (api) => void (api === 'Produce' && produces.push(Date.now())) });
  });

  after(async () => {
    await publisher?.close();
  });

  const callback = (i: number, bodyBytes = 64): KeyedReceiptRaw => ({
    key: `u-${i % 7}`,
    record: {
      receipt_id: `r-${i}`,
      vendor: 'vivo',
      app_id: 'app',
      content_type: 'application/json',
      body: Buffer.from(`${i}:`.padEnd(bodyBytes, 'x')),
      received_at: Date.now(),
    },
  });

  /** Every record on the topic, decoded, by receipt id. */
  async function onTopic(expected: number): Promise<Map<string, ReceiptRawRecord>> {
    const registry = schemaRegistryClient(endpoints);
    const consumer = kafka.consumer({ groupId: uniqueName('publisher-batching') });
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    const seen = new Map<string, ReceiptRawRecord>();
    let copies = 0;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`saw ${seen.size} of ${expected}`)), 30_000);
      void consumer.run({
        eachMessage: async ({ message }) => {
          const record = (await registry.decode(message.value!)) as ReceiptRawRecord;
          copies++;
          seen.set(record.receipt_id, record);
          if (seen.size === expected) {
            clearTimeout(timer);
            resolve();
          }
        },
      });
    });
    await consumer.disconnect();
    assert.equal(copies, expected, 'each callback once');
    return seen;
  }

  test('a lone callback goes at once in its own request', async () => {
    produces.length = 0;
    await publisher.publish([callback(0)]);
    assert.equal(produces.length, 1);
  });

  test('200 concurrent callbacks all land, in far fewer requests than callbacks', async () => {
    produces.length = 0;
    await Promise.all(Array.from({ length: 200 }, (_, i) => publisher.publish([callback(i + 1)])));
    assert.ok(produces.length >= 2 && produces.length <= 20, `${produces.length} produce requests for 200 callbacks`);
    const seen = await onTopic(201);
    for (let i = 0; i <= 200; i++) assert.equal(seen.get(`r-${i}`)?.body.toString().split(':')[0], String(i));
  });

  test('a batch stays under the request size bound: three 200 KB callbacks at once take at least two requests', async () => {
    produces.length = 0;
    await Promise.all([201, 202, 203].map((i) => publisher.publish([callback(i, 200 * 1024)])));
    assert.ok(produces.length >= 2, `${produces.length} produce requests`);
    const seen = await onTopic(204);
    assert.equal(seen.get('r-203')?.body.length, 200 * 1024);
  });
});
