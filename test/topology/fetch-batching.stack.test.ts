import { test } from 'node:test';
import assert from 'node:assert/strict';
import { uniqueName } from '../support/stack.ts';
import { StreamsApp } from '../../topology/runtime.ts';
import { createLogger } from '../../common/log.ts';
import { countingTopology } from './fixtures.ts';
import { brokers, createTopics, decodeCounts, kafka, readTopic, useAdminAndApps, wordSerde } from './kafka-helpers.ts';

/**
 * fetchMinBytes / fetchMaxWaitMs (topology/runtime-options.ts): an application off the latency path
 * gathers a trickle of records into few fetches, and still processes every record. Two applications
 * read the same trickle: one with the defaults (a record ends a fetch at once), one waiting for 64 KiB
 * or 200 ms.
 */
const { admin, apps } = useAdminAndApps();

test('an application with a fetch minimum asks the broker far less often for the same trickle, and counts every record', { timeout: 120_000 }, async () => {
  const input = uniqueName('fetch-batching-in');
  const eager = { output: uniqueName('fetch-eager-out'), fetches: 0 };
  const gathering = { output: uniqueName('fetch-gathering-out'), fetches: 0 };
  await createTopics(admin, [
    { topic: input, partitions: 1 },
    { topic: eager.output, partitions: 1 },
    { topic: gathering.output, partitions: 1 },
  ]);
  let counting = false;
  for (const [side, fetch] of [
    [eager, {}],
    [gathering, { fetchMinBytes: 64 * 1024, fetchMaxWaitMs: 200 }],
  ] as const) {
    const app = new StreamsApp({
      applicationId: uniqueName('fetch-batching-app'),
      topology: countingTopology(input, side.output),
      brokers,
      dlqTopic: uniqueName('fetch-batching-dlq'),
      commitIntervalMs: 500,
      ...fetch,
      metricsListener: { onKafkaRequest: ({ api }) => void (counting && api === 'Fetch' && side.fetches++) },
      logger: createLogger({}, 'error'),
    });
    apps.push(app);
    await app.start();
  }

  // 150 single-record sends 20 ms apart: about 3 s of a steady trickle.
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  const sends = 150;
  counting = true;
  try {
    for (let seq = 0; seq < sends; seq++) {
      const word = `w${seq % 5}`;
      await producer.send({ topic: input, acks: -1, messages: [{ key: word, value: wordSerde.serialize(input, { word, seq }) as Buffer }] });
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  } finally {
    await producer.disconnect();
  }
  counting = false;

  for (const side of [eager, gathering]) {
    const counts = decodeCounts(await readTopic(side.output, (r) => r.length >= sends, 30_000, 200));
    assert.equal(counts.length, sends, `${side.output}: one count per record`);
    assert.deepEqual(
      counts.filter((c) => c.word === 'w0').map((c) => c.count),
      Array.from({ length: sends / 5 }, (_, i) => i + 1),
      'each record counted once, in order',
    );
  }
  assert.ok(
    gathering.fetches * 3 < eager.fetches,
    `fetches during the trickle: ${gathering.fetches} with a 64 KiB minimum and a 200 ms wait vs ${eager.fetches} with the defaults`,
  );
});
