/**
 * The kafkajs request-queue fix (stack/kafkajs-patch/request-queue.patch; docs/operations.md, "The kafkajs
 * fixes"): kafkajs 2.2.4 as published re-armed a timer of (throttledUntil - now) on every
 * connection that got an answer, a negative delay once no throttle is in force, so each such
 * connection ran a 1 ms timer for as long as it stayed open: thousands of timers a second for a
 * worker's idle producers. With the fix, an idle client arms next to none. Its request-timeout check
 * was a 100 ms interval on every open connection, requests in flight or not; with the fix it runs
 * only while one is, and a request that gets no answer still times out.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type AddressInfo } from 'node:net';
import { type Admin, type Producer } from 'kafkajs';
import { kafkaClient } from '../../../common/kafka-client.ts';
import { assertKafkajsPatched } from '../../../common/kafkajs-patch.ts';
import { stackEndpoints, uniqueName } from '../../support/stack.ts';

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

test('idle producers hold no request-timeout timer: the check runs only while a request is in flight', async () => {
  assertKafkajsPatched();
  const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
  const before = timers();
  const idle: Producer[] = [];
  for (let i = 0; i < 10; i++) {
    const producer = kafka.producer();
    await producer.connect();
    await producer.send({ topic, messages: [{ value: `idle ${i}` }] });
    idle.push(producer);
  }
  producers.push(...idle);
  // Published kafkajs: a 100 ms interval on every open connection, in flight or not (10 or more here).
  await new Promise((resolve) => setTimeout(resolve, 1_500));
  const held = timers() - before;
  assert.ok(held < 5, `${held} timers held by 10 idle producers`);
});

test('a request the broker never answers still times out, and the error says so', async () => {
  // A listener that accepts the connection and never answers: the client's first request hangs.
  const silent = createServer(() => undefined);
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  const port = (silent.address() as AddressInfo).port;
  // The first request (ApiVersions, at connect) times out after the connection timeout: 600 ms here.
  const client = kafkaClient(
    { kafkaBrokers: [`127.0.0.1:${port}`] },
    { clientId: 'request-timeout-test', connectionTimeout: 600, requestTimeout: 300, retry: { retries: 0 } },
  );
  const hanging = client.admin();
  const started = Date.now();
  try {
    // A check that never runs would leave the connect hanging: give up on it after 10 s.
    const gaveUp = new Promise<never>((_, reject) => setTimeout(() => reject(new Error('still hanging after 10 s')), 10_000).unref());
    await assert.rejects(Promise.race([hanging.connect(), gaveUp]), (error: Error) => /ApiVersions.*timed out/i.test(error.message));
    // The check runs every min(requestTimeout, 1 s) while the request is in flight: 600 ms plus at most one check.
    const ms = Date.now() - started;
    assert.ok(ms >= 600 && ms < 2_000, `timed out after ${ms} ms`);
  } finally {
    await hanging.disconnect().catch(() => undefined);
    silent.close();
  }
});
