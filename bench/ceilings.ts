/**
 * The ceilings the pipeline is compared with, on the same broker in the same run:
 *   - raw kafkajs consume → produce (one hop, no transactions): the client's limit, and
 *   - the latency floor of the event path's Kafka part: one exactly-once hop at 100 records/s
 *     (bench/hop-latency.ts), and
 *   - a chain of `hops` exactly-once identity hops through the StreamsApp runtime (the same runtime,
 *     commit interval and partition count as the pipeline's stages): the exactly-once limit of a
 *     topology as deep as the pipeline's event path.
 * Measured by a read_committed reader at the end (records ÷ time between the first and the last
 * output record; see bench/runtime-bench.ts). The raw hop drains a pre-filled backlog; the chain's
 * hops all run before its input is produced (as fast as one producer can), so it runs pipelined.
 *
 * The client's CPU per record (`cpu`), from this process's CPU time (everything here runs in it).
 * A produce and a consume are each measured on their own, after the raw scenario has run the same
 * code once (a first pass also pays for compiling it): producing the backlog again into the raw
 * output, and reading the raw input with a fresh group. The chain is its producer, its hops and the
 * reader, so a hop is what is left after a produce and a consume, divided by the hops. What the pipeline's workers pay kafkajs per persisted message is
 * at least its records produced × produce + fetched × consume (bench/report.ts, "client floor").
 */
import { kafkaClient } from '../common/kafka-client.ts';
import { readEndpoints } from '../common/endpoints.ts';
import { errorMessage } from '../common/errors.ts';
import { createLogger } from '../common/log.ts';
import { StreamsApp } from '../topology/runtime.ts';
import { createTopics, fillInput, identityTopology, measureOutput, rawHop, suffix, waitForPartitions } from './runtime-bench.ts';
import { measureHopLatency, type HopLatency } from './hop-latency.ts';

export interface CeilingOptions {
  /** Default: PUSH_KAFKA_BROKERS or the local stack. */
  readonly brokers?: string[];
  /** Records drained per scenario. Default 100 000. */
  readonly records?: number;
  /** Partitions of every topic (use the pipeline's). Default 6. */
  readonly partitions?: number;
  /** Exactly-once hops in the chain (the pipeline's event path has 2: decisions, fan-out). Default 2. */
  readonly hops?: number;
  /** Value size, bytes (about a persisted-message record in Avro). Default 200. */
  readonly valueBytes?: number;
  /** Commit interval of the exactly-once hops, ms (use the pipeline's). Default 100. */
  readonly commitIntervalMs?: number;
  /** The decisions stage's caught-up commit, ms, for the latency floor's hop (bench/hop-latency.ts): PUSH_CAUGHT_UP_COMMIT_MS as the workers read it. */
  readonly caughtUpCommitMs: number;
  /** Length of the latency floor's measurement at 100 records/s, s. Default 20. */
  readonly latencySeconds?: number;
  /** Called with a line of progress. */
  readonly onProgress?: (line: string) => void;
}

export interface CeilingFigure {
  readonly records: number;
  readonly seconds: number;
  /** Output records per second at the end of the chain. */
  readonly recordsPerSecond: number;
}

/** CPU of this process per record, µs (see the file's comment for how each is taken apart). */
export interface ClientCpu {
  /** kafkajs producing one record (acks all, batched as fillInput sends). */
  readonly produceUsPerRecord: number;
  /** kafkajs fetching and handing over one record (eachBatch). */
  readonly consumeUsPerRecord: number;
  /** One exactly-once hop of the StreamsApp runtime (consume, process, transactional produce, commit) per record. */
  readonly exactlyOnceHopUsPerRecord: number;
}

export interface CeilingResult {
  readonly partitions: number;
  readonly valueBytes: number;
  readonly commitIntervalMs: number;
  readonly rawConsumeProduce: CeilingFigure;
  readonly exactlyOnceChain: CeilingFigure & { readonly hops: number };
  readonly cpu: ClientCpu;
  /** One exactly-once hop between a producer and a read_committed consumer at 100 records/s (bench/hop-latency.ts). */
  readonly hopLatency: HopLatency;
}

/** This process's CPU time so far, µs. */
function cpuUs(): number {
  const { user, system } = process.cpuUsage();
  return user + system;
}

const perRecord = (us: number, records: number): number => Math.round((Math.max(0, us) / records) * 10) / 10;

const figure = (records: number, seconds: number): CeilingFigure => ({
  records,
  seconds: Math.round(seconds * 100) / 100,
  recordsPerSecond: Math.round(records / Math.max(seconds, 0.001)),
});

export async function measureCeilings(options: CeilingOptions): Promise<CeilingResult> {
  const brokers = options.brokers ?? readEndpoints().kafkaBrokers;
  const records = options.records ?? 100_000;
  const partitions = options.partitions ?? 6;
  const hops = options.hops ?? 2;
  const valueBytes = options.valueBytes ?? 200;
  const commitIntervalMs = options.commitIntervalMs ?? 100;
  const say = options.onProgress ?? (() => undefined);
  const kafka = kafkaClient({ kafkaBrokers: brokers, kafkaSecurity: readEndpoints().kafkaSecurity }, { clientId: 'bench-ceilings' });
  const admin = kafka.admin();
  await admin.connect();
  const run = suffix();
  const rawIn = `bench-raw-in-${run}`;
  const rawOut = `bench-raw-out-${run}`;
  const chain = Array.from({ length: hops + 1 }, (_, i) => `bench-eos-${run}-${i}`);
  const topics = [rawIn, rawOut, ...chain];
  const apps: StreamsApp[] = [];
  try {
    await createTopics(admin, topics, partitions);
    say(`[ceiling] raw kafkajs consume→produce: filling ${records} records ...`);
    await fillInput(kafka, rawIn, records, valueBytes);
    const raw = figure(records, await rawHop(kafka, rawIn, rawOut, records, partitions));
    say(`[ceiling] raw kafkajs consume→produce: ${raw.recordsPerSecond} records/s`);
    say(`[ceiling] client CPU: producing and reading ${records} records once more ...`);
    let cpuFrom = cpuUs();
    await fillInput(kafka, rawOut, records, valueBytes);
    const produceUs = cpuUs() - cpuFrom;
    cpuFrom = cpuUs();
    await measureOutput(kafka, rawIn, records, async () => undefined);
    const consumeUs = cpuUs() - cpuFrom;

    // Every hop runs before the first record arrives, so the chain is measured pipelined, as the
    // pipeline's stages run (started one by one on a backlog, early hops would finish before the
    // last one started and the figure would be the last hop's alone).
    say(`[ceiling] ${hops} exactly-once identity hops: starting the hops ...`);
    for (let i = 0; i < hops; i++) {
      const app = new StreamsApp({
        applicationId: `bench-eos-chain-${run}-${i}`,
        topology: identityTopology(chain[i]!, chain[i + 1]!),
        brokers,
        kafkaSecurity: readEndpoints().kafkaSecurity,
        processingGuarantee: 'exactly_once',
        commitIntervalMs,
        dlqTopic: `bench-eos-dlq-${run}`,
        logger: createLogger({}, 'warn'),
      });
      apps.push(app);
      await app.start();
    }
    await waitForPartitions(apps, 'the exactly-once hops');
    say(`[ceiling] ${hops} exactly-once identity hops: producing ${records} records into the first ...`);
    cpuFrom = cpuUs();
    const seconds = await measureOutput(kafka, chain[hops]!, records, () => fillInput(kafka, chain[0]!, records, valueBytes));
    const hopUs = (cpuUs() - cpuFrom - produceUs - consumeUs) / hops;
    const eos = { ...figure(records, seconds), hops };
    say(`[ceiling] ${hops} exactly-once identity hops: ${eos.recordsPerSecond} records/s`);
    const cpu: ClientCpu = {
      produceUsPerRecord: perRecord(produceUs, records),
      consumeUsPerRecord: perRecord(consumeUs, records),
      exactlyOnceHopUsPerRecord: perRecord(hopUs, records),
    };
    say(
      `[ceiling] client CPU per record: produce ${cpu.produceUsPerRecord} µs, consume ${cpu.consumeUsPerRecord} µs, exactly-once hop ${cpu.exactlyOnceHopUsPerRecord} µs`,
    );
    say('[ceiling] latency floor: one exactly-once hop at 100 records/s ...');
    const hopLatency = await measureHopLatency(kafka, admin, {
      brokers,
      partitions,
      valueBytes,
      commitIntervalMs,
      caughtUpCommitMs: options.caughtUpCommitMs,
      seconds: options.latencySeconds ?? 20,
    });
    say(`[ceiling] latency floor: p50 ${hopLatency.p50Ms} ms, p99 ${hopLatency.p99Ms} ms, p99.9 ${hopLatency.p999Ms} ms`);
    return { partitions, valueBytes, commitIntervalMs, rawConsumeProduce: raw, exactlyOnceChain: eos, cpu, hopLatency };
  } finally {
    // Best-effort cleanup: the figures are taken (or the error that ended the run is on its way up).
    for (const app of apps) await app.close().catch(() => undefined);
    await admin
      .deleteTopics({ topics: [...topics, `bench-eos-dlq-${run}`] })
      .catch((error: unknown) => say(`[ceiling] could not delete the run's topics (${errorMessage(error)}); they stay behind`));
    await admin.disconnect();
  }
}
