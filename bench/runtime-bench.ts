/**
 * Runtime ceiling benchmark: on the same broker, in one run, the throughput of
 *   1. raw kafkajs consume → produce (no transactions, autocommit), and
 *   2. an identity hop through the StreamsApp runtime under exactly_once (and, for reference,
 *      at_least_once),
 * each measured the same way: a read_committed reader counts the output records, and the figure is
 * records ÷ time between the first and the last output record seen.
 *
 * CLI: `node --import tsx bench/runtime-bench.ts [--records 200000] [--partitions 4] [--value-bytes 200]`
 */
import { randomBytes } from 'node:crypto';
import type { Kafka, Admin } from 'kafkajs';
import { kafkaClient } from '../common/kafka-client.ts';
import { readEndpoints } from '../common/endpoints.ts';
import { createLogger } from '../common/log.ts';
import { TopologyBuilder } from '../topology/builder.ts';
import { bufferSerde } from '../topology/serdes.ts';
import { StreamsApp, type ProcessingGuarantee } from '../topology/runtime.ts';
import { createTopicsWithLeaders } from '../topology/create-topics.ts';
import type { ProcessorContext, StreamRecord } from '../topology/api.ts';

export interface RuntimeBenchOptions {
  /** Default: PUSH_KAFKA_BROKERS or the local stack. */
  brokers?: string[];
  /** Records per scenario. Default 200 000. */
  records?: number;
  /** Input and output partitions. Default 4. */
  partitions?: number;
  /** Value size in bytes. Default 200. */
  valueBytes?: number;
  /** Commit interval of the runtime scenarios in ms. Default 100. */
  commitIntervalMs?: number;
  /** Also run the at_least_once runtime scenario. Default true. */
  includeAtLeastOnce?: boolean;
}

export interface ScenarioResult {
  readonly name: string;
  readonly records: number;
  /** Output records per second between the first and the last output record. */
  readonly recordsPerSecond: number;
  readonly seconds: number;
}

export interface RuntimeBenchResult {
  readonly records: number;
  readonly partitions: number;
  readonly valueBytes: number;
  readonly scenarios: ScenarioResult[];
  /** exactly-once runtime ÷ raw kafkajs. */
  readonly eosToRawRatio: number;
}

export const suffix = () => `${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`;

export async function fillInput(kafka: Kafka, topic: string, records: number, valueBytes: number): Promise<void> {
  const producer = kafka.producer();
  await producer.connect();
  const value = randomBytes(valueBytes);
  for (let i = 0; i < records; i += 5000) {
    const n = Math.min(5000, records - i);
    await producer.send({ topic, acks: -1, messages: Array.from({ length: n }, (_, j) => ({ key: `user-${(i + j) % 10_000}`, value })) });
  }
  await producer.disconnect();
}

/** Counts read_committed output until `records` arrived; returns seconds between first and last. */
export async function measureOutput(kafka: Kafka, topic: string, records: number, start: () => Promise<void>): Promise<number> {
  const { first, last } = await measureOutputSpan(kafka, topic, records, start);
  return (last - first) / 1000;
}

/** `measureOutput`'s times (performance.now()) of the first and the last output batch read, for callers that start the clock elsewhere. */
export async function measureOutputSpan(kafka: Kafka, topic: string, records: number, start: () => Promise<void>): Promise<{ first: number; last: number }> {
  const reader = kafka.consumer({ groupId: `bench-reader-${suffix()}`, readUncommitted: false, maxWaitTimeInMs: 50 });
  await reader.connect();
  await reader.subscribe({ topic, fromBeginning: true });
  let seen = 0;
  let first = 0;
  let last = 0;
  let done!: () => void;
  const finished = new Promise<void>((r) => (done = r));
  // Start the scenario only once the reader holds its partitions; otherwise a fast scenario is over
  // before the reader joins and "first to last output" measures a read of a finished topic.
  const joined = new Promise<void>((r) => reader.on(reader.events.GROUP_JOIN, () => r()));
  await reader.run({
    partitionsConsumedConcurrently: 4,
    eachBatch: async ({ batch }) => {
      if (batch.messages.length === 0) return;
      const now = performance.now();
      if (first === 0) first = now;
      seen += batch.messages.length;
      last = now;
      if (seen >= records) done();
    },
  });
  await joined;
  await start();
  await finished;
  await reader.disconnect();
  return { first, last };
}

export async function rawHop(kafka: Kafka, input: string, output: string, records: number, partitions: number): Promise<number> {
  const consumer = kafka.consumer({ groupId: `bench-raw-${suffix()}`, maxWaitTimeInMs: 100 });
  const producer = kafka.producer();
  const seconds = await measureOutput(kafka, output, records, async () => {
    await producer.connect();
    await consumer.connect();
    await consumer.subscribe({ topic: input, fromBeginning: true });
    await consumer.run({
      partitionsConsumedConcurrently: partitions,
      eachBatch: async ({ batch }) => {
        await producer.send({ topic: output, acks: -1, messages: batch.messages.map((m) => ({ key: m.key, value: m.value })) });
      },
    });
  });
  await consumer.disconnect();
  await producer.disconnect();
  return seconds;
}

export function identityTopology(input: string, output: string) {
  return new TopologyBuilder()
    .addSource('bench-source', { topics: [input], keySerde: bufferSerde, valueSerde: bufferSerde })
    .addProcessor(
      'identity',
      () => {
        let ctx: ProcessorContext;
        return { init: (c: ProcessorContext) => void (ctx = c), process: (r: StreamRecord<Buffer, Buffer>) => ctx.forward(r) };
      },
      'bench-source',
    )
    .addSink('bench-sink', { topic: output, keySerde: bufferSerde, valueSerde: bufferSerde }, 'identity')
    .build();
}

async function runtimeHop(
  kafka: Kafka,
  brokers: string[],
  input: string,
  output: string,
  records: number,
  guarantee: ProcessingGuarantee,
  commitIntervalMs: number,
  partitions: number,
): Promise<number> {
  const app = new StreamsApp({
    applicationId: `bench-${guarantee.replace(/_/g, '-')}-${suffix()}`,
    topology: identityTopology(input, output),
    brokers,
    kafkaSecurity: readEndpoints().kafkaSecurity,
    processingGuarantee: guarantee,
    commitIntervalMs,
    partitionsConsumedConcurrently: partitions,
    dlqTopic: `bench-dlq-${suffix()}`,
    logger: createLogger({}, 'warn'),
  });
  const seconds = await measureOutput(kafka, output, records, () => app.start());
  await app.close();
  return seconds;
}

/** Waits until every app holds some partition (60 s at most), so a measurement starts on running hops. */
export async function waitForPartitions(apps: readonly StreamsApp[], what: string): Promise<void> {
  for (const deadline = Date.now() + 60_000; apps.some((a) => a.assignedTasks().length === 0);) {
    if (Date.now() > deadline) throw new Error(`${what} got no partitions within 60 s`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** Waits for leaders as the workers do (topology/create-topics.ts): a broker just started answers UNKNOWN_TOPIC_OR_PARTITION for a moment. */
export async function createTopics(admin: Admin, topics: string[], partitions: number): Promise<void> {
  await createTopicsWithLeaders(
    admin,
    topics.map((topic) => ({ topic, numPartitions: partitions, replicationFactor: 1 })),
  );
}

export async function runRuntimeBench(opts: RuntimeBenchOptions = {}): Promise<RuntimeBenchResult> {
  const brokers = opts.brokers ?? readEndpoints().kafkaBrokers;
  const records = opts.records ?? 200_000;
  const partitions = opts.partitions ?? 4;
  const valueBytes = opts.valueBytes ?? 200;
  const commitIntervalMs = opts.commitIntervalMs ?? 100;
  const kafka = kafkaClient({ kafkaBrokers: brokers, kafkaSecurity: readEndpoints().kafkaSecurity }, { clientId: 'runtime-bench' });
  const admin = kafka.admin();
  await admin.connect();
  const input = `bench-in-${suffix()}`;
  const scenarios: Array<[string, (out: string) => Promise<number>]> = [
    ['raw kafkajs consume→produce', (out) => rawHop(kafka, input, out, records, partitions)],
    ['runtime identity hop, exactly_once', (out) => runtimeHop(kafka, brokers, input, out, records, 'exactly_once', commitIntervalMs, partitions)],
  ];
  if (opts.includeAtLeastOnce ?? true)
    scenarios.push([
      'runtime identity hop, at_least_once',
      (out) => runtimeHop(kafka, brokers, input, out, records, 'at_least_once', commitIntervalMs, partitions),
    ]);
  const outputs = scenarios.map(() => `bench-out-${suffix()}`);
  const created = [input, ...outputs];
  try {
    await createTopics(admin, created, partitions);
    await fillInput(kafka, input, records, valueBytes);
    const results: ScenarioResult[] = [];
    for (const [i, [name, run]] of scenarios.entries()) {
      const seconds = await run(outputs[i]!);
      results.push({ name, records, seconds: round(seconds), recordsPerSecond: Math.round(records / seconds) });
    }
    return { records, partitions, valueBytes, scenarios: results, eosToRawRatio: round(results[1]!.recordsPerSecond / results[0]!.recordsPerSecond) };
  } finally {
    // Best-effort cleanup: the run's figures (or its error) do not depend on the topics being deleted.
    await admin.deleteTopics({ topics: created }).catch(() => undefined);
    await admin.disconnect();
  }
}

const round = (x: number) => Math.round(x * 100) / 100;

function arg(name: string): number | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : undefined;
}

if (process.argv[1] && import.meta.url.endsWith(process.argv[1].split('/').pop()!)) {
  const result = await runRuntimeBench({ records: arg('records'), partitions: arg('partitions'), valueBytes: arg('value-bytes') });
  console.log(JSON.stringify(result, null, 2));
  for (const s of result.scenarios) console.log(`${s.name.padEnd(40)} ${String(s.recordsPerSecond).padStart(8)} records/s  (${s.records} in ${s.seconds} s)`);
  console.log(`exactly-once runtime ÷ raw kafkajs: ${result.eosToRawRatio}`);
}
