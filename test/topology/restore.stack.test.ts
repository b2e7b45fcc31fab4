import { test } from 'node:test';
import assert from 'node:assert/strict';
import { uniqueName } from '../support/stack.ts';
import { StreamsApp } from '../../topology/runtime.ts';
import { TopologyBuilder } from '../../topology/builder.ts';
import { stringSerde } from '../../topology/serdes.ts';
import { createLogger } from '../../common/log.ts';
import type { MetricsListener } from '../../topology/metrics.ts';
import { holdTopology } from './fixtures.ts';
import { brokers, createTopics, kafka, readTopic, useAdminAndApps } from './kafka-helpers.ts';

const { admin, apps } = useAdminAndApps();
const logger = createLogger({}, 'error');

test('timers held by a closed instance are restored from the changelog by the next one and fire by wall clock exactly once', { timeout: 90_000 }, async () => {
  const input = uniqueName('hold-in');
  const output = uniqueName('hold-out');
  const applicationId = uniqueName('hold-app');
  await createTopics(admin, [
    { topic: input, partitions: 2 },
    { topic: output, partitions: 2 },
  ]);
  const producer = kafka.producer();
  await producer.connect();
  await producer.send({
    topic: input,
    messages: [
      { key: 'u1', value: 'first' },
      { key: 'u2', value: 'second' },
      { key: 'u3', value: 'third' },
      { key: 'u3', value: 'cancel' },
    ],
  });
  await producer.disconnect();

  let committedInputs = 0;
  let releasedByFirst = 0;
  const first = new StreamsApp({
    applicationId,
    topology: holdTopology(input, output, 6000),
    brokers,
    dlqTopic: uniqueName('hold-dlq'),
    logger,
    metricsListener: {
      onCommit: (e) => void (committedInputs += e.inputRecords),
      onNodeRecords: (e) => void (e.node === 'hold-sink' && (releasedByFirst += e.recordsIn)),
    },
  });
  apps.push(first);
  await first.start();
  while (committedInputs < 4) await new Promise((r) => setTimeout(r, 50));
  await first.close();
  assert.equal(releasedByFirst, 0, 'the first instance closed before any hold expired');

  const restored = new Map<string, number>();
  const metrics: MetricsListener = { onRestoreProgress: (e) => void (e.done && restored.set(`${e.store}@${e.taskId}`, e.restoredRecords)) };
  const second = new StreamsApp({
    applicationId,
    topology: holdTopology(input, output, 6000),
    brokers,
    dlqTopic: uniqueName('hold-dlq'),
    logger,
    metricsListener: metrics,
  });
  apps.push(second);
  await second.start();
  const out = await readTopic(output, (r) => r.length >= 2, 30_000, 2000);
  assert.deepEqual(out.map((r) => [r.key, r.value?.toString()]).sort(), [
    ['u1', 'first'],
    ['u2', 'second'],
  ]);
  const timerRecords = [...restored].filter(([k]) => k.startsWith('hold-timers@')).reduce((n, [, v]) => n + v, 0);
  // u1's and u2's timers; u3's was set and cancelled before its first commit, so the changelog never held it.
  assert.ok(timerRecords >= 2, `timer changelog replayed (${JSON.stringify([...restored])})`);
});

test('processingErrorPolicy fail stops the app with TASK_FAILED and commits nothing of the failing batch', { timeout: 60_000 }, async () => {
  const input = uniqueName('fail-in');
  const output = uniqueName('fail-out');
  await createTopics(admin, [
    { topic: input, partitions: 1 },
    { topic: output, partitions: 1 },
  ]);
  const producer = kafka.producer();
  await producer.connect();
  await producer.send({
    topic: input,
    messages: [
      { key: 'k', value: 'ok' },
      { key: 'k', value: 'boom' },
    ],
  });
  await producer.disconnect();
  const topology = new TopologyBuilder()
    .addSource('in', { topics: [input], keySerde: stringSerde, valueSerde: stringSerde })
    .addProcessor(
      'explode',
      () => {
        let forward: (v: string) => void;
        return {
          init: (ctx) => void (forward = (v) => ctx.forward({ key: 'k', value: v, timestamp: 0 })),
          process: (r) => {
            if (r.value === 'boom') throw new Error('cannot handle boom');
            forward(r.value as string);
          },
        };
      },
      'in',
    )
    .addSink('out', { topic: output, keySerde: stringSerde, valueSerde: stringSerde }, 'explode')
    .build();
  let fatal: unknown;
  const stopped = new Promise<void>((resolve) => {
    const app = new StreamsApp({
      applicationId: uniqueName('fail-app'),
      topology,
      brokers,
      processingErrorPolicy: 'fail',
      commitIntervalMs: 60_000,
      dlqTopic: uniqueName('fail-dlq'),
      logger,
      onFatalError: (e) => ((fatal = e), resolve()),
    });
    apps.push(app);
    void app.start();
  });
  await stopped;
  assert.equal((fatal as { code?: string }).code, 'TASK_FAILED');
  assert.match(String((fatal as Error).message), /cannot handle boom/);
  assert.deepEqual(await readTopic(output, () => false, 2000, 0), []);
});
