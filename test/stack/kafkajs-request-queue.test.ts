/**
 * The kafkajs request-queue fix (stack/kafkajs-patch/apply.mjs; docs/operations.md, "The kafkajs
 * fixes"): kafkajs 2.2.4 as published re-armed a timer of (throttledUntil - now) on every
 * connection that got an answer, a negative delay once no throttle is in force, so each such
 * connection ran a 1 ms timer for as long as it stayed open: thousands of timers a second for a
 * worker's idle producers. With the fix, an idle client arms next to none.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { type Admin, type Producer } from 'kafkajs';
import { kafkaClient } from '../../common/kafka-client.ts';
import { assertKafkajsPatched } from '../../common/kafkajs-patch.ts';
import { stackEndpoints, uniqueName } from '../support/stack.ts';

const kafka = kafkaClient(stackEndpoints(), { clientId: 'request-queue-test' });
const topic = uniqueName('request-queue');
const producers: Producer[] = [];
let admin: Admin;

before(async () => {
  admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic, numPartitions: 1, replicationFactor: 1 }] });
});

after(async () => {
  for (const p of producers) await p.disconnect();
  await admin.deleteTopics({ topics: [topic] }).catch(() => undefined);
  await admin.disconnect();
});

test('idle producers whose requests were all answered arm almost no timers', async () => {
  assertKafkajsPatched();
  for (let i = 0; i < 10; i++) {
    const producer = kafka.producer();
    await producer.connect();
    await producer.send({ topic, messages: [{ value: `record ${i}` }] });
    producers.push(producer);
  }
  await new Promise((resolve) => setTimeout(resolve, 200));

  // Counts the timers armed during one idle second (kafkajs calls the global setTimeout).
  const original = globalThis.setTimeout;
  let armed = 0;
  globalThis.setTimeout = ((...args: Parameters<typeof setTimeout>) => {
    armed++;
    return original(...args);
  }) as typeof setTimeout;
  try {
    await new Promise((resolve) => original(resolve, 1_000));
  } finally {
    globalThis.setTimeout = original;
  }
  // Published kafkajs: about a thousand per answered connection (at least 10 of them here).
  assert.ok(armed < 100, `${armed} timers armed in one idle second by 10 idle producers`);
});
