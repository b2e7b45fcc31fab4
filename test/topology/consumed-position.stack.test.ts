import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { uniqueName } from '../support/stack.ts';
import { StreamsApp } from '../../topology/runtime.ts';
import { avroSerde } from '../../topology/serdes.ts';
import { createLogger } from '../../common/log.ts';
import { countingTopology, wordSchema, type WordEvent } from './fixtures.ts';
import { brokers, createTopics, decodeCounts, kafka, readTopic } from './kafka-helpers.ts';

const admin = kafka.admin();
const wordSerde = avroSerde<WordEvent>(wordSchema);
let app: StreamsApp | undefined;

before(() => admin.connect());
after(async () => {
  await app?.close();
  await admin.disconnect();
});

async function committedOffset(groupId: string, topic: string): Promise<string | undefined> {
  const [offsets] = await admin.fetchOffsets({ groupId, topics: [topic] });
  return offsets?.partitions[0]?.offset;
}

async function waitForCommitted(groupId: string, topic: string, expected: string, what: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  let seen: string | undefined;
  while (Date.now() < deadline) {
    seen = await committedOffset(groupId, topic);
    if (seen === expected) return;
    await new Promise((r) => setTimeout(r, 250));
  }
  assert.fail(`${what}: committed offset ${seen ?? 'none'}, expected ${expected}`);
}

test('a partition written transactionally is committed past its commit and abort markers: the group shows no lag', { timeout: 90_000 }, async () => {
  const input = uniqueName('marker-in');
  const output = uniqueName('marker-out');
  const applicationId = uniqueName('marker-app');
  await createTopics(admin, [
    { topic: input, partitions: 1 },
    { topic: output, partitions: 1 },
  ]);
  const producer = kafka.producer({ transactionalId: uniqueName('marker-writer'), idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  const writeTransaction = async (words: string[], outcome: 'commit' | 'abort') => {
    const txn = await producer.transaction();
    await txn.send({ topic: input, messages: words.map((word, seq) => ({ key: word, value: wordSerde.serialize(input, { word, seq }) as Buffer })) });
    await (outcome === 'commit' ? txn.commit() : txn.abort());
  };
  try {
    app = new StreamsApp({
      applicationId,
      topology: countingTopology(input, output),
      brokers,
      dlqTopic: uniqueName('marker-dlq'),
      commitIntervalMs: 100,
      logger: createLogger({}, 'error'),
    });
    await app.start();

    // Offsets 0–2 hold the words, 3 the commit marker: fetched together with the records.
    await writeTransaction(['a', 'b', 'a'], 'commit');
    await waitForCommitted(applicationId, input, '4', 'after a committed transaction');

    // Offsets 4–5 aborted records, 6 the abort marker: a fetch with nothing a read_committed consumer sees.
    await writeTransaction(['b', 'c'], 'abort');
    await waitForCommitted(applicationId, input, '7', 'after an aborted transaction');
    const [end] = await admin.fetchTopicOffsets(input);
    assert.equal(end?.high, '7', 'the partition ends at the abort marker');

    const counts = decodeCounts(await readTopic(output, (r) => r.length >= 3, 10_000, 1000));
    assert.deepEqual(
      counts.map((c) => [c.word, c.count]),
      [
        ['a', 1],
        ['b', 1],
        ['a', 2],
      ],
      'only the committed transaction was counted',
    );
  } finally {
    await producer.disconnect();
  }
});
