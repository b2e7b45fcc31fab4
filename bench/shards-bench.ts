/**
 * Fan-out throughput with MySQL on 1 and on 4 uid shards (docs/data.md "Shards"),
 * side by side in the same run: a fan-out application (the pipeline's topology, its MySQL ledger,
 * the FCM emulator) drains the same backlog of dispatches once per shard count. The shards are
 * databases on the same MariaDB, so the figure shows what the per-shard statements cost or gain
 * on one server (parallel claim and result batches), not the capacity of separate servers.
 * Measured as committed push.outcomes records ÷ the time from the moment the fan-out holds its
 * partitions (the backlog already waiting) to the last outcome read (bench/runtime-bench.ts
 * `measureOutputSpan`; first-to-last output would flatter a short run). After an unreported warm-up
 * run the shard counts alternate (1, 4, 4, 1) and each figure is the mean of its runs: the machine is shared.
 */
import { fileURLToPath } from 'node:url';
import type { Kafka } from 'kafkajs';
import { kafkaClient } from '../common/kafka-client.ts';
import { schemaRegistryClient } from '../common/registry-client.ts';
import mysql from 'mysql2/promise';
import type { SchemaRegistry } from '@kafkajs/confluent-schema-registry';
import { readEndpoints } from '../common/endpoints.ts';
import { createLogger } from '../common/log.ts';
import { startEmulators } from '../emulators/index.ts';
import { migrate } from '../migrations/migrate.ts';
import { buildFanOutTopology } from '../pipeline/apps/fan-out.ts';
import { registerSchemas } from '../pipeline/schemas.ts';
import { registryValueSerdes } from '../pipeline/serdes.ts';
import { topicName } from '../pipeline/topics.ts';
import { collapseId, taskId } from '../processors/model/ids.ts';
import type { PushDispatch } from '../processors/model/records.ts';
import { openShardedPools } from '../sinks/mysql/shards.ts';
import { MysqlPushTaskLedger } from '../sinks/mysql/tasks.ts';
import { createVendorRegistry } from '../sinks/vendors/registry.ts';
import { StreamsApp } from '../topology/runtime.ts';
import { createTopics, measureOutputSpan, suffix } from './runtime-bench.ts';
import { mysqlClientOptions } from '../common/mysql-url.ts';

export interface ShardBenchOptions {
  /** Dispatches drained per measured run. Default 1 500. */
  readonly dispatches?: number;
  /** Measured runs per shard count, in the order 1, 4, 4, 1, … so that drift on a shared machine falls on both. Default 2. */
  readonly rounds?: number;
  /** Dispatches of the unreported first run (connections, JIT, the vendor's auth token). Default 500. */
  readonly warmUpDispatches?: number;
  /** Partitions of push.dispatch. Default 6. */
  readonly partitions?: number;
  /** Commit interval of the fan-out, ms (use the pipeline's). Default 100. */
  readonly commitIntervalMs?: number;
  /** Shard counts measured, in order. Default 1 and 4. */
  readonly shardCounts?: readonly number[];
  readonly onProgress?: (line: string) => void;
}

export interface ShardBenchRun {
  readonly shards: number;
  readonly dispatches: number;
  readonly seconds: number;
  /** Committed outcomes per second (one per dispatch: every push is accepted). */
  readonly dispatchesPerSecond: number;
}

export interface ShardBenchFigure {
  readonly shards: number;
  /** The mean of the runs' dispatches per second. */
  readonly dispatchesPerSecond: number;
  readonly runs: ShardBenchRun[];
}

export interface ShardBenchResult {
  readonly partitions: number;
  readonly commitIntervalMs: number;
  readonly dispatches: number;
  /** One figure per shard count, in the order of `shardCounts`. */
  readonly figures: ShardBenchFigure[];
}

const FAN_OUT_TOPICS = ['dispatch', 'presence', 'outcomes', 'tokens', 'dlq'] as const;

export async function measureShardedFanOut(options: ShardBenchOptions = {}): Promise<ShardBenchResult> {
  const endpoints = readEndpoints();
  const dispatches = options.dispatches ?? 1_500;
  const partitions = options.partitions ?? 6;
  const commitIntervalMs = options.commitIntervalMs ?? 100;
  const kafka = kafkaClient(endpoints, { clientId: 'shards-bench' });
  const registry = schemaRegistryClient(endpoints);
  const em = await startEmulators();
  const vendors = createVendorRegistry(em.appsConfig);
  const counts = options.shardCounts ?? [1, 4];
  const runs: ShardBenchRun[] = [];
  try {
    await drainOnce(kafka, registry, em, vendors, { shards: counts[0]!, dispatches: options.warmUpDispatches ?? 500, partitions, commitIntervalMs });
    for (let round = 0; round < (options.rounds ?? 2); round++) {
      for (const shards of round % 2 === 0 ? counts : [...counts].reverse()) {
        const run = await drainOnce(kafka, registry, em, vendors, { shards, dispatches, partitions, commitIntervalMs });
        runs.push(run);
        options.onProgress?.(
          `[bench] fan-out on ${shards} MySQL shard(s): ${run.dispatchesPerSecond.toLocaleString('en-US')} dispatches/s (${dispatches} in ${run.seconds} s)`,
        );
      }
    }
  } finally {
    await vendors.close();
    await em.close();
  }
  const figures = counts.map((shards) => {
    const mine = runs.filter((r) => r.shards === shards);
    return { shards, dispatchesPerSecond: Math.round(mine.reduce((n, r) => n + r.dispatchesPerSecond, 0) / Math.max(mine.length, 1)), runs: mine };
  });
  return { partitions, commitIntervalMs, dispatches, figures };
}

interface DrainPlan {
  readonly shards: number;
  readonly dispatches: number;
  readonly partitions: number;
  readonly commitIntervalMs: number;
}

/** One shard count: fresh databases and topics, the backlog produced, then drained by a fan-out application; everything dropped after. */
async function drainOnce(
  kafka: Kafka,
  registry: SchemaRegistry,
  em: Awaited<ReturnType<typeof startEmulators>>,
  vendors: ReturnType<typeof createVendorRegistry>,
  plan: DrainPlan,
): Promise<ShardBenchRun> {
  const id = suffix().replace(/[^A-Za-z0-9]/g, '_');
  const prefix = `bench-shards-${id}.`;
  const names = Array.from({ length: plan.shards }, (_, i) => `bench_shards_${id}_${i}`);
  const base = new URL(readEndpoints().mysqlUrl);
  const urls = names.map((name) => Object.assign(new URL(base), { pathname: `/${name}` }).toString());
  const admin = kafka.admin();
  await admin.connect();
  const topics = FAN_OUT_TOPICS.map((t) => topicName(t, prefix));
  const pools = openShardedPools(urls, readEndpoints().mysqlSecurity, { connectionLimit: 8 });
  const ledger = new MysqlPushTaskLedger({ shards: pools });
  let app: StreamsApp | undefined;
  try {
    await migrate({ mysqlUrl: urls[0]!, mysqlShards: urls });
    await createTopics(admin, topics, plan.partitions);
    await registerSchemas(registry, { prefix });
    await produceBacklog(kafka, registry, prefix, em, plan.dispatches);
    const valueSerdes = registryValueSerdes(registry, prefix);
    app = new StreamsApp({
      applicationId: `bench-shards-${id}`,
      topology: buildFanOutTopology({ valueSerdes, topicPrefix: prefix, fanOut: { vendors, ledger } }),
      brokers: readEndpoints().kafkaBrokers,
      kafkaSecurity: readEndpoints().kafkaSecurity,
      processingGuarantee: 'exactly_once',
      commitIntervalMs: plan.commitIntervalMs,
      partitionsConsumedConcurrently: plan.partitions,
      dlqTopic: topicName('dlq', prefix),
      logger: createLogger({ bench: 'shards' }, 'warn'),
    });
    const started = app;
    // From the moment the fan-out holds its partitions (the backlog is waiting) to the last committed outcome.
    let from = 0;
    const { last } = await measureOutputSpan(kafka, topicName('outcomes', prefix), plan.dispatches, async () => {
      await started.start();
      while (started.assignedTasks().length === 0) await new Promise((r) => setTimeout(r, 10));
      from = performance.now();
    });
    const seconds = (last - from) / 1000;
    return {
      shards: plan.shards,
      dispatches: plan.dispatches,
      seconds: Math.round(seconds * 100) / 100,
      dispatchesPerSecond: Math.round(plan.dispatches / Math.max(seconds, 0.001)),
    };
  } finally {
    await app?.close();
    ledger.close();
    await pools.end();
    const endpoints = readEndpoints();
    const db = await mysql.createConnection(mysqlClientOptions(endpoints.mysqlUrl, endpoints.mysqlSecurity));
    for (const name of names) await db.query(`DROP DATABASE IF EXISTS \`${name}\``);
    await db.end();
    await admin
      .deleteTopics({ topics: (await admin.listTopics()).filter((t) => t.startsWith(prefix) || t.startsWith(`bench-shards-${id}-`)) })
      .catch(() => undefined);
    await admin.disconnect();
  }
}

/** One dispatch per user (so the rows spread over the shards as users do), each to a valid FCM token of the emulator. */
async function produceBacklog(
  kafka: Kafka,
  registry: SchemaRegistry,
  prefix: string,
  em: Awaited<ReturnType<typeof startEmulators>>,
  count: number,
): Promise<void> {
  const topic = topicName('dispatch', prefix);
  const serde = registryValueSerdes(registry, prefix)('dispatch');
  const producer = kafka.producer();
  await producer.connect();
  try {
    const now = Date.now();
    for (let i = 0; i < count; i += 1_000) {
      const batch = Array.from({ length: Math.min(1_000, count - i) }, (_, k): PushDispatch => {
        const uid = `bench-u-${i + k}`;
        const device = `bench-d-${i + k}`;
        return {
          task_id: taskId(uid, 'c-bench', 1, device),
          uid,
          device_id: device,
          conv_id: 'c-bench',
          seq: 1,
          msg_id: `m-${i + k}`,
          app_id: 'app-1',
          platform: 'android',
          channels: [{ vendor: 'fcm', token: em.token('fcm', uid), classification: {} }],
          title: 'Alice',
          body: 'See you at 7?',
          badge: 1,
          collapse_id: collapseId(uid, 'c-bench'),
          silent: false,
          kind: 'LEADING',
          merged_count: 1,
          persisted_at: now,
          decided_at: now,
        } as PushDispatch;
      });
      const messages = await Promise.all(batch.map(async (d) => ({ key: d.uid, value: await serde.serialize(topic, d) })));
      await producer.send({ topic, messages, acks: -1 });
    }
  } finally {
    await producer.disconnect();
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  // `npx tsx bench/shards-bench.ts [dispatches]`: this phase alone.
  measureShardedFanOut({ dispatches: Number(process.argv[2] ?? 1_500), onProgress: (line) => console.log(line) }).then(
    (r) => console.log(JSON.stringify(r)),
    (error: unknown) => {
      console.error(error);
      process.exitCode = 1;
    },
  );
}
