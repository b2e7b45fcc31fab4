import { test } from 'node:test';
import assert from 'node:assert/strict';
import { uniqueName } from '../support/stack.ts';
import { StreamsApp } from '../../topology/runtime.ts';
import { createLogger } from '../../common/log.ts';
import { countingTopology } from './fixtures.ts';
import { brokers, createTopics, decodeCounts, produceWords, readTopic, useAdminAndApps } from './kafka-helpers.ts';

/**
 * caughtUpCommitMs (topology/runtime-options.ts): a task with no fetched record waiting commits
 * its outputs shortly after its previous commit, instead of waiting out the commit interval. The
 * interval here is a minute, so outputs seen within seconds were committed by the caught-up rule.
 */
const { admin, apps } = useAdminAndApps();

async function startCounting(name: string, caughtUpCommitMs?: number): Promise<{ input: string; output: string }> {
  const input = uniqueName(`${name}-in`);
  const output = uniqueName(`${name}-out`);
  await createTopics(admin, [
    { topic: input, partitions: 1 },
    { topic: output, partitions: 1 },
  ]);
  const app = new StreamsApp({
    applicationId: uniqueName(`${name}-app`),
    topology: countingTopology(input, output),
    brokers,
    dlqTopic: uniqueName(`${name}-dlq`),
    commitIntervalMs: 60_000,
    ...(caughtUpCommitMs === undefined ? {} : { caughtUpCommitMs }),
    logger: createLogger({}, 'error'),
  });
  apps.push(app);
  await app.start();
  return { input, output };
}

const words = (list: string[]) => list.map((word, seq) => ({ key: word, value: { word, seq } }));

test('a caught-up task commits its outputs without waiting for the commit interval, each batch as it comes', { timeout: 90_000 }, async () => {
  const { input, output } = await startCounting('caught-up', 10);
  await produceWords(input, words(['a', 'b', 'a']));
  const first = decodeCounts(await readTopic(output, (r) => r.length >= 3, 20_000, 200));
  assert.deepEqual(
    first.map((c) => [c.word, c.count]),
    [
      ['a', 1],
      ['b', 1],
      ['a', 2],
    ],
    'the first batch is readable (read_committed) long before the one-minute interval',
  );
  // A second batch right after: the task commits again once the first commit is done.
  await produceWords(input, words(['b']));
  const second = decodeCounts(await readTopic(output, (r) => r.length >= 4, 20_000, 200));
  assert.deepEqual(second.map((c) => [c.word, c.count]).at(-1), ['b', 2], 'the second batch is committed too, without waiting for the interval');
});

test('without caughtUpCommitMs the outputs wait for the commit interval', { timeout: 60_000 }, async () => {
  const { input, output } = await startCounting('interval-only');
  await produceWords(input, words(['a']));
  const seen = await readTopic(output, (r) => r.length >= 1, 5_000, 0);
  assert.equal(seen.length, 0, 'nothing is committed within 5 s of a one-minute interval');
});
