/**
 * The latency floor of the event path's Kafka part, on the same broker in the same run: what a
 * record pays from its producer to the fan-out's read_committed consumer when nothing but one
 * exactly-once hop lies between them.
 *
 * Shaped as the pipeline's: a plain producer (the IM backend) writes one record at a time, open
 * loop, at `rate`/s; one identity hop through the StreamsApp runtime under exactly_once with the
 * decisions stage's commit settings (commit interval, caught-up commit) forwards it; a consumer
 * configured as the stages' (read_committed, the same fetch wait) reads it. The pipeline's
 * "persisted → fan-out received" segment (bench/report.ts) is this plus the decisions' own work, so
 * its p99 cannot fall below this one's on this box; the vendor call and the claim come on top.
 */
import { randomBytes } from 'node:crypto';
import type { Admin, Kafka } from 'kafkajs';
import { createLogger } from '../common/log.ts';
import { StreamsApp } from '../topology/runtime.ts';
import { quantile } from './probes.ts';
import { createTopics, identityTopology, suffix, waitForPartitions } from './runtime-bench.ts';
import { readEndpoints } from '../common/endpoints.ts';

export interface HopLatencyOptions {
  readonly brokers: string[];
  /** Records per second, one per send. Default 100. */
  readonly rate?: number;
  /** Length of the measurement, s. Default 20. */
  readonly seconds?: number;
  readonly partitions: number;
  readonly valueBytes: number;
  /** The hop's commit interval and caught-up commit, ms (the decisions stage's). */
  readonly commitIntervalMs: number;
  readonly caughtUpCommitMs: number;
}

export interface HopLatency {
  readonly rate: number;
  readonly records: number;
  readonly p50Ms: number | null;
  readonly p99Ms: number | null;
  readonly p999Ms: number | null;
  readonly maxMs: number | null;
}

/** The stages' fetch wait (topology/consumer-supervisor.ts): minBytes 1 answers as soon as a record is there. */
const STAGE_FETCH_WAIT_MS = 500;
/** A probe record: this byte, then the send time (ms since the epoch, float64), then padding. */
const PROBE = 0x4c;

export async function measureHopLatency(kafka: Kafka, admin: Admin, options: HopLatencyOptions): Promise<HopLatency> {
  const rate = options.rate ?? 100;
  const seconds = options.seconds ?? 20;
  const run = suffix();
  const [input, output] = [`bench-hop-latency-in-${run}`, `bench-hop-latency-out-${run}`];
  await createTopics(admin, [input, output], options.partitions);
  const app = new StreamsApp({
    applicationId: `bench-hop-latency-${run}`,
    topology: identityTopology(input, output),
    brokers: options.brokers,
    kafkaSecurity: readEndpoints().kafkaSecurity,
    processingGuarantee: 'exactly_once',
    commitIntervalMs: options.commitIntervalMs,
    caughtUpCommitMs: options.caughtUpCommitMs,
    dlqTopic: `bench-hop-latency-dlq-${run}`,
    logger: createLogger({}, 'warn'),
  });
  const reader = kafka.consumer({ groupId: `bench-hop-latency-reader-${run}`, readUncommitted: false, maxWaitTimeInMs: STAGE_FETCH_WAIT_MS });
  const producer = kafka.producer({ idempotent: true });
  const latencies: number[] = [];
  try {
    await app.start();
    await waitForPartitions([app], 'the latency hop');
    await reader.connect();
    await reader.subscribe({ topic: output, fromBeginning: true });
    const joined = new Promise<void>((resolve) => reader.on(reader.events.GROUP_JOIN, () => resolve()));
    await reader.run({
      partitionsConsumedConcurrently: options.partitions,
      eachBatch: async ({ batch }) => {
        const now = Date.now();
        for (const m of batch.messages) if (m.value?.[0] === PROBE) latencies.push(now - m.value.readDoubleBE(1));
      },
    });
    await joined;
    await producer.connect();

    const total = rate * seconds;
    const sends: Promise<unknown>[] = [];
    const start = Date.now();
    for (let i = 0; i < total; i++) {
      // Open loop: record i goes out at its scheduled time whether or not earlier sends returned.
      const wait = start + (i * 1000) / rate - Date.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      const value = randomBytes(Math.max(9, options.valueBytes));
      value[0] = PROBE;
      value.writeDoubleBE(Date.now(), 1);
      sends.push(producer.send({ topic: input, acks: -1, messages: [{ key: `user-${i % 10_000}`, value }] }));
    }
    await Promise.all(sends);
    for (const deadline = Date.now() + 30_000; latencies.length < total; await new Promise((r) => setTimeout(r, 100)))
      if (Date.now() > deadline) throw new Error(`the latency hop delivered ${latencies.length} of ${total} records within 30 s`);
    const sorted = latencies.sort((a, b) => a - b);
    return {
      rate,
      records: total,
      p50Ms: quantile(sorted, 0.5),
      p99Ms: quantile(sorted, 0.99),
      p999Ms: quantile(sorted, 0.999),
      maxMs: sorted.at(-1) ?? null,
    };
  } finally {
    // Best-effort: the figures are taken, or the error that ended the phase is on its way up.
    await Promise.allSettled([producer.disconnect(), reader.disconnect(), app.close()]);
    await admin.deleteTopics({ topics: [input, output, `bench-hop-latency-dlq-${run}`] }).catch(() => undefined);
  }
}
