import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { stackEndpoints, uniqueName } from '../support/stack.ts';
import { StreamsApp, type StreamsAppOptions } from '../../topology/runtime.ts';
import { registryAvroSerde } from '../../topology/registry-serde.ts';
import { TopologyBuilder, type Topology } from '../../topology/builder.ts';
import { stringSerde } from '../../topology/serdes.ts';
import type { ProcessorContext, StreamRecord } from '../../topology/api.ts';
import { DLQ_HEADERS } from '../../topology/dlq.ts';
import { DLQ_MAX_MESSAGE_BYTES, TOPIC_RESOURCE } from '../../topology/topic-rules.ts';
import type { MetricsListener } from '../../topology/metrics.ts';
import { PipelineMetrics } from '../../sinks/metrics/pipeline-metrics.ts';
import { startMetricsServer } from '../../sinks/metrics/server.ts';
import { PushError } from '../../common/errors.ts';
import { createLogger } from '../../common/log.ts';
import { wordSchema, type WordEvent } from './fixtures.ts';
import { brokers, createTopics, kafka, produceWords, readTopic, type ReadRecord } from './kafka-helpers.ts';
import { padTopology, releaseTopology, scalerTopology } from './poison-fixtures.ts';
import { schemaRegistryClient } from '../../common/registry-client.ts';

/**
 * Production errors and restarts on the real stack (docs/design.md, "Runtime"): an output that
 * cannot be serialized or is over the broker's size limit goes to the DLQ and the partition goes
 * on, with no restart; a restart loop backs off and shows in /metrics and pushctl status.
 */

const admin = kafka.admin();
const registry = schemaRegistryClient(stackEndpoints());
const running: Array<{ app: StreamsApp; metrics: PipelineMetrics }> = [];

before(() => admin.connect());
after(async () => {
  for (const r of running) {
    await r.app.close();
    r.metrics.stopGcObserver();
  }
  await admin.disconnect();
});

interface Started {
  readonly app: StreamsApp;
  readonly applicationId: string;
  readonly metrics: PipelineMetrics;
  readonly restarts: Array<{ code: string; consecutive: number; backoffMs: number; at: number }>;
  readonly fatal: unknown[];
}

async function startApp(topology: Topology, dlqTopic: string, options: Partial<StreamsAppOptions> = {}): Promise<Started> {
  const applicationId = uniqueName('pp-app');
  const metrics = new PipelineMetrics();
  const restarts: Started['restarts'] = [];
  const fatal: unknown[] = [];
  const listener: MetricsListener = {
    ...metrics.listener,
    onRestart: (e) => {
      restarts.push({ code: e.code, consecutive: e.consecutive, backoffMs: e.backoffMs, at: Date.now() });
      metrics.listener.onRestart!(e);
    },
  };
  const app = new StreamsApp({
    applicationId,
    topology,
    brokers,
    dlqTopic,
    metricsListener: listener,
    logger: createLogger({}, 'error'),
    onFatalError: (e) => fatal.push(e),
    ...options,
  });
  running.push({ app, metrics });
  await app.start();
  return { app, applicationId, metrics, restarts, fatal };
}

async function produce(topic: string, messages: Array<{ key: string | null; value: Buffer }>): Promise<void> {
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  // One request per record: a near-1 MB record and another one in one batch would be over the broker's limit.
  for (const m of messages) await producer.send({ topic, acks: -1, messages: [m] });
  await producer.disconnect();
}

async function committedOffset(groupId: string, topic: string, atLeast: number, timeoutMs = 30_000): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const [t] = await admin.fetchOffsets({ groupId, topics: [topic] });
    const offset = Number(t?.partitions.find((p) => p.partition === 0)?.offset ?? -1);
    if (offset >= atLeast || Date.now() > deadline) return offset;
    await new Promise((r) => setTimeout(r, 250));
  }
}

const header = (r: ReadRecord, name: string) => r.headers[name]?.toString();

test(
  'an Avro sink node given an out-of-range long while processing: the input goes to the DLQ with its reason; the next record on the partition is processed and committed',
  { timeout: 120_000 },
  async () => {
    const [input, output, audit, dlq] = ['pp-words', 'pp-scaled', 'pp-audit', 'pp-dlq-a'].map(uniqueName) as [string, string, string, string];
    await createTopics(admin, [
      { topic: input, partitions: 1 },
      { topic: output, partitions: 1 },
      { topic: audit, partitions: 1 },
    ]);
    await produceWords(input, [
      { key: 'k', value: { word: 'first', seq: 0 } },
      { key: 'k', value: { word: 'huge', seq: 1 } },
      { key: 'k', value: { word: 'next', seq: 2 } },
    ]);
    const run = await startApp(scalerTopology(input, output, audit, registryAvroSerde<WordEvent>({ registry, schema: wordSchema })), dlq);

    const [out, letters] = await Promise.all([readTopic(output, (r) => r.length >= 2, 60_000), readTopic(dlq, (r) => r.length >= 1, 60_000)]);
    const words = await Promise.all(out.map(async (r) => ((await registry.decode(r.value!)) as WordEvent).word));
    assert.deepEqual(words, ['first', 'next']);
    assert.equal(letters.length, 1);
    const letter = letters[0]!;
    assert.equal(header(letter, DLQ_HEADERS.phase), 'production');
    assert.equal(header(letter, DLQ_HEADERS.errorCode), 'SERIALIZATION_FAILED');
    assert.match(header(letter, DLQ_HEADERS.errorMessage)!, /seq \(long\)/);
    assert.equal(header(letter, DLQ_HEADERS.sinkTopic), output);
    assert.equal(header(letter, DLQ_HEADERS.sourceTopic), input);
    assert.equal(header(letter, DLQ_HEADERS.sourceOffset), '1');
    assert.equal(await committedOffset(run.applicationId, input, 3), 3, 'the offsets after the poison record are committed');
    assert.deepEqual(run.restarts, []);
    assert.deepEqual(run.fatal, []);
  },
);

test(
  'a punctuator output that cannot be serialized goes to the DLQ, rendered, and the task keeps punctuating; nothing stops',
  { timeout: 120_000 },
  async () => {
    const [input, output, dlq] = ['pp-held', 'pp-released', 'pp-dlq-b'].map(uniqueName) as [string, string, string];
    await createTopics(admin, [
      { topic: input, partitions: 1 },
      { topic: output, partitions: 1 },
    ]);
    const json = (w: WordEvent) => ({ key: w.word, value: Buffer.from(JSON.stringify(w)) });
    await produce(input, [json({ word: 'a', seq: 1 }), json({ word: 'b', seq: 1e20 }), json({ word: 'c', seq: 3 })]);
    const run = await startApp(releaseTopology(input, output, registryAvroSerde<WordEvent>({ registry, schema: wordSchema })), dlq);

    const letters = await readTopic(dlq, (r) => r.length >= 1, 60_000, 0);
    await produce(input, [json({ word: 'd', seq: 4 })]);
    const out = await readTopic(output, (r) => r.length >= 3, 60_000);

    assert.deepEqual(
      out.map((r) => r.key),
      ['a', 'c', 'd'],
      'the punctuation goes on, and later ones too',
    );
    assert.equal(letters.length, 1);
    const letter = letters[0]!;
    assert.equal(letter.key, 'b');
    assert.equal(letter.value?.toString(), '{"word":"b","seq":100000000000000000000}');
    assert.equal(header(letter, DLQ_HEADERS.valueFormat), 'json');
    assert.equal(header(letter, DLQ_HEADERS.phase), 'production');
    assert.equal(header(letter, DLQ_HEADERS.errorCode), 'SERIALIZATION_FAILED');
    assert.equal(header(letter, DLQ_HEADERS.origin), 'punctuator:releaser');
    assert.equal(header(letter, DLQ_HEADERS.node), 'released-sink');
    assert.equal(header(letter, DLQ_HEADERS.sinkTopic), output);
    assert.deepEqual(run.restarts, [], 'no restart');
    assert.deepEqual(run.fatal, [], 'no fatal error');
    assert.deepEqual(run.app.assignedTasks(), ['0_0']);
    assert.equal(run.metrics.deadLetters.get({ app: run.applicationId, topic: output, code: 'SERIALIZATION_FAILED' }), 1, 'counted in push_dlq_records_total');
  },
);

test(
  'a near-1 MB input whose output is over the broker limit goes to the DLQ as RECORD_TOO_LARGE; the next record comes out, no restart',
  { timeout: 120_000 },
  async () => {
    const [input, output, dlq] = ['pp-blobs', 'pp-padded', 'pp-dlq-c'].map(uniqueName) as [string, string, string];
    await createTopics(admin, [
      { topic: input, partitions: 1 },
      { topic: output, partitions: 1 },
    ]);
    // The largest value the broker's default limit (1,048,588 bytes per batch) takes with a 1-byte key.
    const big = Buffer.alloc(1_048_400, 0x61);
    await produce(input, [
      { key: 'k', value: big },
      { key: 'k', value: Buffer.from('small') },
    ]);
    const run = await startApp(padTopology(200, {}, input, output), dlq);

    const [out, letters] = await Promise.all([readTopic(output, (r) => r.length >= 1, 60_000), readTopic(dlq, (r) => r.length >= 1, 60_000)]);
    assert.deepEqual(
      out.map((r) => r.value?.length),
      [5 + 200],
      'the next record on the partition comes out',
    );
    assert.equal(letters.length, 1);
    const letter = letters[0]!;
    assert.equal(header(letter, DLQ_HEADERS.errorCode), 'RECORD_TOO_LARGE');
    assert.equal(header(letter, DLQ_HEADERS.phase), 'production');
    assert.equal(header(letter, DLQ_HEADERS.sourceOffset), '0');
    assert.equal(header(letter, DLQ_HEADERS.valueOmittedBytes), undefined);
    assert.ok(letter.value?.equals(big), 'the DLQ record (input plus reason headers, over 1,048,588 bytes) was written whole');
    assert.equal(await committedOffset(run.applicationId, input, 2), 2);
    assert.deepEqual(run.restarts, [], 'no restart loop');
    assert.equal(run.metrics.appRestarts.get({ app: run.applicationId, code: 'COMMIT_FAILED' }), 0);
    const { resources } = await admin.describeConfigs({
      includeSynonyms: false,
      resources: [{ type: TOPIC_RESOURCE, name: dlq, configNames: ['max.message.bytes'] }],
    });
    assert.equal(resources[0]?.configEntries[0]?.configValue, String(DLQ_MAX_MESSAGE_BYTES), 'the runtime created the DLQ with room for such records');
  },
);

test('a restart loop backs off exponentially and shows in /metrics and pushctl status; the run ends after a healthy period', { timeout: 180_000 }, async () => {
  const [input, output, dlq] = ['pp-flaky-in', 'pp-flaky-out', 'pp-dlq-d'].map(uniqueName) as [string, string, string];
  await createTopics(admin, [
    { topic: input, partitions: 1 },
    { topic: output, partitions: 1 },
  ]);
  await produce(input, [{ key: 'k', value: Buffer.from('payload') }]);
  // Fails the first four attempts at the record with a transient error, whichever task instance makes them.
  let failuresLeft = 4;
  const topology = new TopologyBuilder()
    .addSource('in', { topics: [input], keySerde: stringSerde, valueSerde: stringSerde })
    .addProcessor(
      'flaky',
      () => {
        let ctx: ProcessorContext;
        return {
          init: (c: ProcessorContext) => void (ctx = c),
          process(r: StreamRecord<string, string>) {
            if (failuresLeft > 0) {
              failuresLeft--;
              throw new PushError('BROKER_HICCUP', 'injected transient failure', { retriable: true });
            }
            ctx.forward(r);
          },
        };
      },
      'in',
    )
    .addSink('out', { topic: output, keySerde: stringSerde, valueSerde: stringSerde }, 'flaky')
    .build();
  const run = await startApp(topology, dlq, { restartBackoffInitialMs: 1000, restartBackoffMaxMs: 20_000, restartBackoffResetMs: 15_000 });
  const server = await startMetricsServer(run.metrics.registry, { live: () => true, ready: () => true }, 0);
  try {
    const out = await readTopic(output, (r) => r.length >= 1, 90_000, 500);
    assert.deepEqual(
      out.map((r) => r.value?.toString()),
      ['payload'],
      'processed once the failures stop, once',
    );

    assert.deepEqual(
      run.restarts.map((r) => [r.code, r.consecutive]),
      [
        ['BROKER_HICCUP', 1],
        ['BROKER_HICCUP', 2],
        ['BROKER_HICCUP', 3],
        ['BROKER_HICCUP', 4],
      ],
    );
    run.restarts.forEach((r, i) => assert.ok(r.backoffMs >= 500 * 2 ** i && r.backoffMs <= 1000 * 2 ** i, `backoff ${i + 1}: ${r.backoffMs} ms`));
    const gaps = run.restarts.slice(1).map((r, i) => r.at - run.restarts[i]!.at);
    gaps.forEach((gap, i) =>
      assert.ok(gap >= run.restarts[i]!.backoffMs, `restart ${i + 2} came ${gap} ms after restart ${i + 1}, which waited ${run.restarts[i]!.backoffMs} ms`),
    );
    assert.ok(gaps[2]! > gaps[0]!, `the time between restarts grows: ${gaps.join(', ')} ms`);

    const scrape = await (await fetch(`http://127.0.0.1:${server.port}/metrics`)).text();
    assert.match(scrape, new RegExp(`^push_app_restarts_total\\{app="${run.applicationId}",code="BROKER_HICCUP"\\} 4$`, 'm'));
    assert.match(scrape, new RegExp(`^push_app_consecutive_restarts\\{app="${run.applicationId}"\\} 4$`, 'm'));
    assert.match(scrape, new RegExp(`^push_app_restart_backoff_ms\\{app="${run.applicationId}"\\} ${run.restarts[3]!.backoffMs}$`, 'm'));

    const pushctl = promisify(execFile);
    const metricsUrl = `http://127.0.0.1:${server.port}/metrics`;
    const status = await pushctl(process.execPath, ['--import', 'tsx', 'cli/pushctl.ts', 'status', '--app', run.applicationId, '--metrics', metricsUrl], {
      timeout: 60_000,
    });
    assert.match(status.stdout, /restarts: 4 \(BROKER_HICCUP 4\), 4 in a row, backoff \d+\.\d s .*RESTART LOOP/);

    // Healthy for restartBackoffResetMs after the last restart: the run is over, the count stays.
    const deadline = Date.now() + 40_000;
    while (
      Date.now() < deadline &&
      !new RegExp(`^push_app_consecutive_restarts\\{app="${run.applicationId}"\\} 0$`, 'm').test(await (await fetch(metricsUrl)).text())
    )
      await new Promise((r) => setTimeout(r, 500));
    const settled = await pushctl(process.execPath, ['--import', 'tsx', 'cli/pushctl.ts', 'status', '--app', run.applicationId, '--metrics', metricsUrl], {
      timeout: 60_000,
    });
    assert.match(settled.stdout, /restarts: 4 \(BROKER_HICCUP 4\), 0 in a row, backoff 0\.0 s/);
    assert.doesNotMatch(settled.stdout, /RESTART LOOP/);
    assert.equal(run.restarts.length, 4);
    assert.deepEqual(run.fatal, []);
  } finally {
    await server.close();
  }
});
