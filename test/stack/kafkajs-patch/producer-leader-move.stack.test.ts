/**
 * The kafkajs producer fix (stack/kafkajs-patch/producer-retry.patch; docs/operations.md, "The kafkajs
 * fixes"), on the 3-broker cluster: one send spans two brokers while the leadership of one
 * of its partitions has moved to the other broker. kafkajs 2.2.4 as published retried only brokers
 * that had not answered yet, so the moved partition's record was never written and the send still
 * resolved (the losses `npm run chaos -- --brokers 3` found during reassignments); or, when its retry
 * overtook an answer in flight, it wrote the other partition's record twice. Each partition must
 * hold exactly what was sent to it, for an idempotent and for a transactional producer. Against the
 * published file the idempotent case fails (the moved partition's second record is missing); the
 * transactional one passed there as well, its timing not hitting the stale leader.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { type Admin, type Producer } from 'kafkajs';
import { kafkaClient } from '../../../common/kafka-client.ts';
import { clusterBrokers, kafkaClusterService } from '../../../stack/kafka-cluster.ts';
import { assertKafkajsPatched } from '../../../common/kafkajs-patch.ts';
import { uniqueName } from '../../support/stack.ts';

const cluster = kafkaClusterService();
let started = false;
const kafka = kafkaClient({ kafkaBrokers: clusterBrokers() }, { clientId: 'leader-move-test' });
let admin: Admin;

before(async () => {
  started = (await cluster.up()) === 'started';
  admin = kafka.admin();
  await admin.connect();
});

after(async () => {
  await admin?.disconnect();
  if (started) await cluster.down();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(what: string, check: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(250);
  }
}

async function leaders(topic: string): Promise<number[]> {
  const { topics } = await admin.fetchTopicMetadata({ topics: [topic] });
  return topics[0]!.partitions.sort((a, b) => a.partitionId - b.partitionId).map((p) => p.leader);
}

/** Values per partition, read from the start (read_committed) until `count` values came. */
async function readAll(topic: string, count: number): Promise<string[][]> {
  const consumer = kafka.consumer({ groupId: uniqueName('leader-move-reader'), maxWaitTimeInMs: 100 });
  const out: string[][] = [[], []];
  await consumer.connect();
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({ eachMessage: async ({ partition, message }) => void out[partition]!.push(message.value!.toString()) });
    await until(`${count} records in ${topic}`, async () => out.flat().length >= count, 20_000).catch(() => undefined);
    await sleep(500); // anything beyond `count` (a duplicate) arrives too
    return out;
  } finally {
    await consumer.disconnect();
  }
}

/**
 * Partition 0 led by broker 1, partition 1 by broker 2; the producer learns that layout with a first
 * send, then partition 1 is reassigned to brokers [1, 3] (its leader moves to broker 1) and the
 * producer, its metadata now stale, sends to both partitions at once.
 */
type Send = (topic: string, messages: Array<{ partition: number; value: string }>) => Promise<void>;

async function sendAcrossLeaderMove(producer: Producer, send: Send): Promise<string[][]> {
  const topic = uniqueName('leader-move');
  // Leaders are waited for below: createTopics' own wait can fail while the new topic's metadata spreads.
  await admin.createTopics({
    waitForLeaders: false,
    topics: [
      {
        topic,
        replicaAssignment: [
          { partition: 0, replicas: [1, 2, 3] },
          { partition: 1, replicas: [2, 3, 1] },
        ],
      },
    ],
  });
  await until('leaders 1 and 2', async () => (await leaders(topic)).join() === '1,2');
  await producer.connect();
  await send(topic, [
    { partition: 0, value: 'first-0' },
    { partition: 1, value: 'first-1' },
  ]);
  await admin.alterPartitionReassignments({ topics: [{ topic, partitionAssignment: [{ partition: 1, replicas: [1, 3] }] }] });
  await until('the reassignment', async () => (await admin.listPartitionReassignments({})).topics.length === 0 && (await leaders(topic)).join() === '1,1');
  await send(topic, [
    { partition: 0, value: 'second-0' },
    { partition: 1, value: 'second-1' },
  ]);
  return readAll(topic, 4);
}

const EXPECTED = [
  ['first-0', 'second-0'],
  ['first-1', 'second-1'],
];

test('the installed kafkajs carries the producer fix', () => {
  assertKafkajsPatched();
});

test('an idempotent send spanning two brokers writes every record once when one partition moved to the other broker', async () => {
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: false });
  try {
    const read = await sendAcrossLeaderMove(producer, async (topic, messages) => void (await producer.send({ topic, acks: -1, messages })));
    assert.deepEqual(read, EXPECTED);
  } finally {
    await producer.disconnect();
  }
});

/**
 * A cluster's first transaction creates `__transaction_state`, whose partitions' leaders then move
 * to their preferred replicas (auto leader rebalance): a transaction meeting such a move fails with
 * NOT_COORDINATOR. This commits one transaction for `transactionalId` (into a topic of its own),
 * trying again with a fresh producer, then waits until every coordinator sits on its preferred
 * replica, so the test's own transactions meet a settled coordinator.
 */
async function settleTransactions(transactionalId: string): Promise<void> {
  const topic = uniqueName('leader-move-warm-up');
  await admin.createTopics({ waitForLeaders: false, topics: [{ topic, numPartitions: 1, replicationFactor: 3 }] });
  await until('a first transaction', async () => {
    const producer = kafka.producer({ transactionalId, idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: false });
    await producer.connect();
    try {
      const txn = await producer.transaction();
      await txn.send({ topic, acks: -1, messages: [{ value: 'warm-up' }] });
      await txn.commit();
      return true;
    } finally {
      await producer.disconnect();
    }
  });
  await until('the transaction coordinators on their preferred replicas', async () => {
    const { topics } = await admin.fetchTopicMetadata({ topics: ['__transaction_state'] });
    return topics[0]!.partitions.every((p) => p.leader === p.replicas[0]);
  });
}

test('a transaction spanning two brokers commits every record once when one partition moved to the other broker', async () => {
  const transactionalId = uniqueName('leader-move-txn');
  await settleTransactions(transactionalId);
  const producer = kafka.producer({ transactionalId, idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: false });
  try {
    const read = await sendAcrossLeaderMove(producer, async (topic, messages) => {
      const txn = await producer.transaction();
      await txn.send({ topic, acks: -1, messages });
      await txn.commit();
    });
    assert.deepEqual(read, EXPECTED);
  } finally {
    await producer.disconnect();
  }
});
