/**
 * Merge-state memory and restore time (DESIGN §7: ≤ 512 MB RSS at 1M open merge windows, restore
 * ≤ 10 s). The merge stage alone runs on Kafka through the StreamsApp runtime (exactly-once, real
 * changelogs), fed `windows` distinct (uid, conv) pairs, each with a leading trigger and a second
 * trigger that stays carried (an open window with a pending trailing update: the larger state).
 * Triggers are stamped an hour ahead, so no window closes while measured.
 *
 * Run in its own process so its RSS is the merge state's (two phases, each a process):
 *   node --expose-gc --import tsx bench/merge-state.ts fill <run> <windows> <partitions>
 *   node --expose-gc --import tsx bench/merge-state.ts restore <run> <windows> <partitions>
 * Each prints one JSON line. `measureMergeState` runs both and deletes the topics.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Kafka, logLevel } from 'kafkajs';
import { readEndpoints } from '../common/endpoints.ts';
import { createLogger, type Logger } from '../common/log.ts';
import { TopologyBuilder } from '../topology/builder.ts';
import { avroSerde, stringSerde } from '../topology/serdes.ts';
import { StreamsApp } from '../topology/runtime.ts';
import type { MetricsListener } from '../topology/metrics.ts';
import { avroType } from '../pipeline/schemas.ts';
import { merge } from '../processors/merge/merge.ts';
import { mergeStores, MERGE_STORE_NAMES } from '../processors/merge/options.ts';
import { processMemory } from './probes.ts';

export interface MergeStateResult {
  readonly windows: number;
  readonly partitions: number;
  /** Seconds to process the 2 × windows triggers (exactly-once, one process). */
  readonly fillSeconds: number;
  /** RSS of the process holding the open windows, after a forced GC, MB. */
  readonly rssMbWithWindows: number;
  readonly heapUsedMbWithWindows: number;
  /** RSS of a fresh process before it starts the app (baseline of node + modules), MB. */
  readonly rssMbBaseline: number;
  /** Seconds from a fresh instance's start until every task restored its stores and was ready. */
  readonly restoreSeconds: number;
  readonly rssMbAfterRestore: number;
}

const topicsOf = (run: string) => ({ candidates: `${run}-candidates`, merged: `${run}-merged`, outcomes: `${run}-outcomes` });

function app(run: string, partitions: number, logger: Logger, metricsListener: MetricsListener = {}): StreamsApp {
  const t = topicsOf(run);
  const topology = new TopologyBuilder()
    .addSource('candidates-source', { topics: [t.candidates], keySerde: stringSerde, valueSerde: avroSerde(avroType('push-candidate.avsc')) })
    .addProcessor('merge', merge({ windowMs: 10_000, retentionMs: 60_000, outputs: { merged: 'merged-sink', outcomes: 'outcomes-sink' } }), 'candidates-source')
    .addSink('merged-sink', { topic: t.merged, keySerde: stringSerde, valueSerde: avroSerde(avroType('push-merged.avsc')) }, 'merge')
    .addSink('outcomes-sink', { topic: t.outcomes, keySerde: stringSerde, valueSerde: avroSerde(avroType('push-outcome.avsc')) }, 'merge');
  for (const store of mergeStores(MERGE_STORE_NAMES)) topology.addStateStore(store, 'merge');
  return new StreamsApp({
    applicationId: run, topology: topology.build(), brokers: readEndpoints().kafkaBrokers, processingGuarantee: 'exactly_once',
    commitIntervalMs: 100, partitionsConsumedConcurrently: partitions, dlqTopic: `${run}-dlq`, logger, metricsListener,
  });
}

function memory(): { rssMb: number; heapUsedMb: number } {
  (globalThis as { gc?: () => void }).gc?.();
  return { rssMb: processMemory(process.pid)?.rssMb ?? 0, heapUsedMb: Math.round(process.memoryUsage().heapUsed / 1048576) };
}

function candidate(i: number, second: boolean, at: number) {
  return {
    kind: 'TRIGGER', uid: `ms-u${i}`, device_id: `ms-u${i}-d0`, conv_id: `c${i}`, seq: second ? 2 : 1, msg_id: `m-${i}-${second ? 2 : 1}`,
    conv_type: 'GROUP', sender_uid: `ms-s${i % 1000}`, unread_cnt: second ? 2 : 1, title: `Group c${i}`,
    summary: `message ${second ? 2 : 1} in a conversation with a summary of typical length`, sensitive: false, mention: 'NONE',
    persisted_at: at, app_id: 'app-bench', presence: 'OFFLINE', decided_at: at,
  };
}

async function fill(run: string, windows: number, partitions: number): Promise<object> {
  const baseline = memory();
  const t = topicsOf(run);
  const kafka = new Kafka({ clientId: 'merge-state', brokers: readEndpoints().kafkaBrokers, logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ waitForLeaders: true, topics: [t.candidates, t.merged, t.outcomes].map((topic) => ({ topic, numPartitions: partitions })) });
  await admin.disconnect();
  const serde = avroSerde<object>(avroType('push-candidate.avsc'));
  const producer = kafka.producer();
  await producer.connect();
  const at = Date.now() + 3_600_000;
  for (const second of [false, true]) {
    for (let i = 0; i < windows; i += 5000) {
      const n = Math.min(5000, windows - i);
      const messages = await Promise.all(Array.from({ length: n }, async (_, j) => ({ key: `ms-u${i + j}`, value: await serde.serialize(t.candidates, candidate(i + j, second, at)) })));
      await producer.send({ topic: t.candidates, acks: -1, messages });
    }
  }
  await producer.disconnect();
  let processed = 0;
  let done!: () => void;
  const finished = new Promise<void>((r) => (done = r));
  const started = Date.now();
  const streams = app(run, partitions, createLogger({}, 'warn'), {
    onCommit: (e) => {
      processed += e.inputRecords;
      if (processed >= 2 * windows) done();
    },
  });
  await streams.start();
  await finished;
  const fillSeconds = (Date.now() - started) / 1000;
  const m = memory();
  await streams.close();
  return { fillSeconds, rssMbWithWindows: m.rssMb, heapUsedMbWithWindows: m.heapUsedMb, rssMbBaseline: baseline.rssMb };
}

async function restore(run: string, partitions: number): Promise<object> {
  let ready!: (ms: number) => void;
  const readyAt = new Promise<number>((r) => (ready = r));
  const base = createLogger({}, 'warn');
  const logger: Logger = {
    debug: () => undefined, warn: base.warn, error: base.error, child: () => logger,
    info: (message, fields) => {
      if (message === 'tasks ready') ready(Date.now());
      void fields;
    },
  };
  const streams = app(run, partitions, logger);
  const started = Date.now();
  await streams.start();
  const restoreSeconds = ((await readyAt) - started) / 1000;
  const m = memory();
  await streams.close();
  return { restoreSeconds, rssMbAfterRestore: m.rssMb };
}

function child(args: string[]): Promise<Record<string, number>> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, ['--expose-gc', '--import', 'tsx', fileURLToPath(import.meta.url), ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    p.stdout.on('data', (d: Buffer) => (out += d.toString()));
    p.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out.trim().split('\n').pop()!)) : reject(new Error(`merge-state ${args[0]} exited with ${code}`))));
  });
}

/** Fills `windows` open merge windows in one process, restores them in another; deletes the topics after. */
export async function measureMergeState(windows: number, partitions: number, say: (line: string) => void): Promise<MergeStateResult> {
  const run = `bench-ms-${Date.now().toString(36)}`;
  try {
    say(`[merge-state] filling ${windows} open windows (${2 * windows} triggers) ...`);
    const filled = await child(['fill', run, String(windows), String(partitions)]);
    say(`[merge-state] ${windows} windows: RSS ${filled.rssMbWithWindows} MB after GC (baseline ${filled.rssMbBaseline} MB), filled in ${filled.fillSeconds} s; restoring ...`);
    const restored = await child(['restore', run, String(windows), String(partitions)]);
    say(`[merge-state] restore ${restored.restoreSeconds} s, RSS after restore ${restored.rssMbAfterRestore} MB`);
    return {
      windows, partitions, fillSeconds: filled.fillSeconds!, rssMbWithWindows: filled.rssMbWithWindows!, heapUsedMbWithWindows: filled.heapUsedMbWithWindows!,
      rssMbBaseline: filled.rssMbBaseline!, restoreSeconds: restored.restoreSeconds!, rssMbAfterRestore: restored.rssMbAfterRestore!,
    };
  } finally {
    const admin = new Kafka({ clientId: 'merge-state', brokers: readEndpoints().kafkaBrokers, logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
    const topics = (await admin.listTopics()).filter((t) => t.startsWith(run));
    if (topics.length > 0) await admin.deleteTopics({ topics }).catch(() => undefined);
    await admin.disconnect();
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [mode, run, windows, partitions] = process.argv.slice(2);
  const result = mode === 'fill' ? await fill(run!, Number(windows), Number(partitions)) : await restore(run!, Number(partitions));
  console.log(JSON.stringify(result));
  process.exit(0);
}
