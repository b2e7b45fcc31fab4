/**
 * Memory and restore benchmark of the merge stage (docs/design.md, "Targets": ≤ 512 MB RSS per
 * worker at 1M open merge windows; restore after restart ≤ 10 s for 1M windows of state).
 *
 * Each phase runs in its own `node --expose-gc` child process so that the figures are those of a
 * process holding the windows and nothing else:
 *   1. `open`: the real merge processor, in real StreamTasks (the code the runtime and the
 *      TopologyTestDriver run), is fed `windows` triggers of distinct (uid, conv, device); changelog
 *      writes are drained and dropped as a commit would. RSS (VmRSS) and heap after a forced GC.
 *   2. `fill` (needs the broker): the same, but the drained changelog records are produced to the
 *      changelog topics of a fresh application id, so they hold exactly what the stage writes.
 *   3. `restore` (needs the broker): a fresh StreamsApp of that application id starts; the figure
 *      is the time from its assignment to "tasks ready" (stores restored, processors initialised),
 *      then RSS and heap of that real worker holding the restored windows.
 *
 * CLI: `node --import tsx bench/memory-bench.ts [--windows 1000000] [--mode leading|trailing-only]
 *       [--partitions 4] [--no-restore]` prints the result as JSON on stdout. With
 * MEMORY_BENCH_SPACES=1 the `open` and `restore` phases also print V8's heap spaces and the large
 * mappings (malloc `[heap]` included) on stderr. The changelog topics of a run are deleted at its end.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { kafkaClient } from '../common/kafka-client.ts';
import { readEndpoints } from '../common/endpoints.ts';
import { createLogger, type Logger } from '../common/log.ts';
import { TopologyBuilder, type Topology } from '../topology/builder.ts';
import { jsonSerde, stringSerde, type Serde } from '../topology/serdes.ts';
import { StreamTask } from '../topology/task.ts';
import { StreamsApp } from '../topology/runtime.ts';
import { changelogTopicName, ensureTopics } from '../topology/changelog.ts';
import { TOPICS } from '../pipeline/topics.ts';
import { merge } from '../processors/merge/merge.ts';
import { mergeStores, type MergeMode } from '../processors/merge/options.ts';
import type { PushCandidate } from '../processors/model/records.ts';

export interface MemoryBenchOptions {
  /** Open merge windows (distinct (uid, conv, device)). Default 1 000 000. */
  windows?: number;
  /** Merge mode. Default `leading` (the default of the stage). */
  mode?: MergeMode;
  /** Partitions (tasks) the windows are spread over. Default 4. */
  partitions?: number;
  /** Also fill changelogs on the broker and time a restore. Default true. */
  restore?: boolean;
  /** Default: PUSH_KAFKA_BROKERS or the local stack. */
  brokers?: string[];
}

export interface MemoryBenchResult {
  readonly windows: number;
  readonly mode: MergeMode;
  readonly partitions: number;
  /** RSS (VmRSS) after a forced GC of a process holding the windows in StreamTasks, MB. */
  readonly rssMb: number;
  /** V8 heap used after the same GC, MB. */
  readonly heapMb: number;
  /** Node's baseline: RSS of the same process before the first window, MB. */
  readonly baselineRssMb: number;
  /** Seconds to open the windows (processing, not a target). */
  readonly openSeconds: number;
  /** Changelog records the stage wrote for them (windows + timers). */
  readonly changelogRecords?: number;
  /** Assignment → "tasks ready" of a fresh StreamsApp restoring the windows, ms. */
  readonly restoreMs?: number;
  /** Records replayed by that restore. */
  readonly restoredRecords?: number;
  /** RSS of that worker after restore and a forced GC, MB. */
  readonly restoredRssMb?: number;
  readonly restoredHeapMb?: number;
}

const IN_TOPIC = 'bench.merge.candidates';
/**
 * The input topic of a fill and restore run: its own, so the restoring app gets one task per
 * changelog partition (a topic shared between runs keeps the partition count of the first one, and
 * a run with more partitions would restore only some of its changelogs). Deleted with the run's
 * changelogs (deleteBenchTopics).
 */
const runInputTopic = (appId: string) => `${appId}-candidates`;
const MB = 1024 * 1024;
/** Windows stay open through the run: the task clock is an hour ahead of real time. */
const CLOCK_AHEAD_MS = 3_600_000;

/** The merge sub-topology alone: candidates ─► merge ─► merged, outcomes. */
export function mergeBenchTopology(mode: MergeMode, inTopic = IN_TOPIC): Topology {
  const none: Serde<unknown> = { serialize: () => Buffer.alloc(0), deserialize: () => null };
  const b = new TopologyBuilder()
    .addSource('candidates-source', { topics: [inTopic], keySerde: stringSerde, valueSerde: jsonSerde<PushCandidate>() })
    .addProcessor('merge', merge({ mode, windowMs: 10_000, outputs: { merged: 'merged-sink', outcomes: 'outcomes-sink' } }), 'candidates-source')
    .addSink('merged-sink', { topic: 'bench.merge.merged', keySerde: stringSerde, valueSerde: none }, 'merge')
    .addSink('outcomes-sink', { topic: 'bench.merge.outcomes', keySerde: stringSerde, valueSerde: none }, 'merge');
  for (const store of mergeStores()) b.addStateStore(store, 'merge');
  return b.build();
}

/** Trigger `i`: 250k users × 4 conversations, one device each (ids shaped like production ones). */
export function benchCandidate(i: number, at: number): PushCandidate {
  const user = 1_000_000_000 + (i % 250_000);
  const conv = (i / 250_000) | 0;
  return {
    kind: 'TRIGGER',
    uid: String(user),
    device_id: `dev-${user.toString(16)}-a1`,
    conv_id: conv % 2 ? `g_${700_000 + (user % 9973) + conv}` : `p2p_${user}_${user + conv}`,
    seq: 1 + (i % 7),
    msg_id: `m-${at.toString(36)}-${i.toString(36)}`,
    conv_type: conv % 2 ? 'GROUP' : 'SINGLE',
    sender_uid: String(2_000_000_000 + (i % 99_991)),
    unread_cnt: 1 + (i % 7),
    title: `Sender ${i % 99_991}`,
    summary: `message number ${i} of the benchmark conversation`,
    sensitive: false,
    mention: 'NONE',
    persisted_at: at,
    app_id: 'im.bench',
    presence: 'OFFLINE',
    decided_at: at,
  };
}

const memory = () => {
  (globalThis as { gc?: () => void }).gc?.();
  (globalThis as { gc?: () => void }).gc?.();
  const status = readStatus();
  const u = process.memoryUsage();
  const mb = (bytes: number) => Math.round((bytes / MB) * 10) / 10;
  return { rssMb: Math.round((status.get('VmRSS') ?? 0) / 102.4) / 10, heapMb: mb(u.heapUsed), heapTotalMb: mb(u.heapTotal), externalMb: mb(u.external) };
};

function readStatus(): Map<string, number> {
  const text = readFileSync('/proc/self/status', 'utf8');
  return new Map(
    text
      .split('\n')
      .map((l) => l.split(':'))
      .filter((p) => p.length === 2)
      .map(([k, v]) => [k!.trim(), Number.parseInt(v!, 10)]),
  );
}

/** Feeds the triggers to one task per partition; `onChangelog` receives each commit's changelog. */
async function openWindows(
  topology: Topology,
  windows: number,
  partitions: number,
  appId: string,
  onChangelog?: (records: Array<{ topic: string; partition: number; key: Buffer; value: Buffer | null }>) => Promise<void>,
): Promise<StreamTask[]> {
  const now = Date.now() + CLOCK_AHEAD_MS;
  const inTopic = topology.sourceTopics[0]!;
  const tasks = Array.from(
    { length: partitions },
    (_, p) =>
      new StreamTask({
        applicationId: appId,
        topology,
        subtopology: topology.subtopologies[0]!,
        partition: p,
        clock: () => now,
        dlqTopic: 'bench.dlq',
        processingErrorPolicy: 'fail',
        changelogTopic: (s) => changelogTopicName(appId, s),
      }),
  );
  for (const t of tasks) await t.init();
  const serde = jsonSerde<PushCandidate>();
  const COMMIT_EVERY = 2_000;
  for (let i = 0; i < windows; i++) {
    const c = benchCandidate(i, now);
    const p = i % partitions;
    await tasks[p]!.process({
      topic: inTopic,
      partition: p,
      offset: String(i),
      key: Buffer.from(c.uid),
      value: serde.serialize(inTopic, c) as Buffer,
      timestamp: now,
      headers: {},
    });
    if ((i + 1) % COMMIT_EVERY === 0 || i === windows - 1) {
      for (const t of tasks) {
        const { changelog } = t.drainOutputs();
        if (onChangelog && changelog.length > 0)
          await onChangelog(changelog.map((r) => ({ topic: r.topic, partition: r.partition!, key: r.key!, value: r.value })));
      }
    }
  }
  return tasks;
}

/** V8 heap spaces (size / used, MB) and the mappings above 4 MB RSS: where the RSS goes. */
async function memoryBreakdown(): Promise<string> {
  const { getHeapSpaceStatistics } = await import('node:v8');
  const spaces = getHeapSpaceStatistics().map((x) => `${x.space_name} ${Math.round(x.space_size / MB)}/${Math.round(x.space_used_size / MB)} MB`);
  const mappings = readFileSync('/proc/self/smaps', 'utf8')
    .split(/\n(?=[0-9a-f]+-)/)
    .map((seg) => ({ head: seg.split('\n')[0]!.slice(0, 90), kb: Number(/\nRss:\s+(\d+)/.exec(seg)?.[1] ?? 0) }))
    .filter((m) => m.kb > 4096)
    .map((m) => `${Math.round(m.kb / 1024)} MB ${m.head}`);
  return [...spaces, ...mappings].join('\n') + '\n';
}

/** Child phase `open`: RSS and heap of a process holding the windows. */
async function phaseOpen(o: Required<MemoryBenchOptions>): Promise<object> {
  const baseline = memory();
  const started = Date.now();
  const tasks = await openWindows(mergeBenchTopology(o.mode), o.windows, o.partitions, 'bench-memory');
  const openSeconds = (Date.now() - started) / 1000;
  const m = memory();
  const held = tasks.reduce((n, t) => n + (t.stores.get('merge-windows') as unknown as { size: number }).size, 0);
  if (process.env.MEMORY_BENCH_SPACES) process.stderr.write(await memoryBreakdown());
  return { ...m, baselineRssMb: baseline.rssMb, openSeconds, storeKeys: held };
}

/** Child phase `fill`: the stage's changelog records for the windows, produced to the broker. */
async function phaseFill(o: Required<MemoryBenchOptions>, appId: string): Promise<object> {
  const kafka = kafkaClient({ kafkaBrokers: o.brokers, kafkaSecurity: readEndpoints().kafkaSecurity }, { clientId: `${appId}-fill` });
  const admin = kafka.admin();
  await admin.connect();
  const topology = mergeBenchTopology(o.mode, runInputTopic(appId));
  await ensureTopics(admin, [
    { topic: runInputTopic(appId), numPartitions: o.partitions },
    ...mergeStores()
      .filter((s) => s.changelog !== false)
      .map((s) => ({ topic: changelogTopicName(appId, s.name), numPartitions: o.partitions, configs: { 'cleanup.policy': 'compact' } })),
  ]);
  await admin.disconnect();
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  let records = 0;
  await openWindows(topology, o.windows, o.partitions, appId, async (changelog) => {
    const byTopic = new Map<string, Array<{ partition: number; key: Buffer; value: Buffer | null }>>();
    for (const r of changelog) {
      if (!byTopic.has(r.topic)) byTopic.set(r.topic, []);
      byTopic.get(r.topic)!.push({ partition: r.partition, key: r.key, value: r.value });
    }
    await producer.sendBatch({ acks: -1, topicMessages: [...byTopic].map(([topic, messages]) => ({ topic, messages })) });
    records += changelog.length;
  });
  await producer.disconnect();
  return { changelogRecords: records };
}

/** Child phase `restore`: a fresh worker restores the changelogs; assignment → tasks ready. */
async function phaseRestore(o: Required<MemoryBenchOptions>, appId: string): Promise<object> {
  let assignedAt = 0;
  let readyAt = 0;
  let restoredRecords = 0;
  let ready!: () => void;
  const isReady = new Promise<void>((r) => (ready = r));
  const base = createLogger({}, 'warn');
  const watch = (inner: Logger): Logger => ({
    debug: inner.debug,
    warn: inner.warn,
    error: inner.error,
    info: (message, fields) => {
      if (message === 'tasks ready' && readyAt === 0) {
        readyAt = Date.now();
        ready();
      }
      inner.info(message, fields);
    },
    child: (fields) => watch(inner.child(fields)),
  });
  const app = new StreamsApp({
    applicationId: appId,
    topology: mergeBenchTopology(o.mode, runInputTopic(appId)),
    brokers: o.brokers,
    kafkaSecurity: readEndpoints().kafkaSecurity,
    dlqTopic: TOPICS.dlq.name,
    logger: watch(base),
    metricsListener: {
      onAssignment: (e) => {
        if (e.taskIds.length > 0 && assignedAt === 0) assignedAt = Date.now();
      },
      onRestoreProgress: (e) => {
        if (e.done) restoredRecords += e.restoredRecords;
      },
    },
  });
  await app.start();
  await isReady;
  const m = memory();
  if (process.env.MEMORY_BENCH_SPACES) process.stderr.write(`restored worker:\n${await memoryBreakdown()}`);
  await app.close();
  return { restoreMs: readyAt - assignedAt, restoredRecords, restoredRssMb: m.rssMb, restoredHeapMb: m.heapMb };
}

/** Removes the topics of a restore run: its input topic and its changelogs. */
async function deleteBenchTopics(brokers: string[], appId: string): Promise<void> {
  const admin = kafkaClient({ kafkaBrokers: brokers, kafkaSecurity: readEndpoints().kafkaSecurity }, { clientId: `${appId}-cleanup` }).admin();
  await admin.connect();
  try {
    const topics = (await admin.listTopics()).filter((t) => t.startsWith(`${appId}-`));
    if (topics.length > 0) await admin.deleteTopics({ topics });
    // Best-effort: a group that is already gone (or never committed) has nothing to delete.
    await admin.deleteGroups([appId]).catch(() => undefined);
  } finally {
    await admin.disconnect();
  }
}

/** Runs one phase in a fresh `node --expose-gc` process; returns its JSON result. */
function runChild(phase: string, o: Required<MemoryBenchOptions>, appId: string): Promise<Record<string, number>> {
  const self = fileURLToPath(import.meta.url);
  const args = [
    '--expose-gc',
    '--import',
    'tsx',
    self,
    '--child',
    phase,
    '--app',
    appId,
    '--windows',
    String(o.windows),
    '--mode',
    o.mode,
    '--partitions',
    String(o.partitions),
    '--brokers',
    o.brokers.join(','),
  ];
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString('utf8')));
    child.on('error', reject);
    child.on('exit', (code) => {
      if (code !== 0) return reject(new Error(`memory bench phase ${phase} exited with ${code}`));
      try {
        resolve(JSON.parse(out.trim().split('\n').pop()!) as Record<string, number>);
      } catch (error) {
        reject(new Error(`memory bench phase ${phase} printed no result: ${String(error)}`));
      }
    });
  });
}

function withDefaults(opts: MemoryBenchOptions): Required<MemoryBenchOptions> {
  return {
    windows: opts.windows ?? 1_000_000,
    mode: opts.mode ?? 'leading',
    partitions: opts.partitions ?? 4,
    restore: opts.restore ?? true,
    brokers: opts.brokers ?? readEndpoints().kafkaBrokers,
  };
}

/** Runs the phases (each in its own process) and returns the figures. */
export async function runMemoryBench(opts: MemoryBenchOptions = {}): Promise<MemoryBenchResult> {
  const o = withDefaults(opts);
  const open = await runChild('open', o, 'bench-memory');
  const result: MemoryBenchResult = {
    windows: o.windows,
    mode: o.mode,
    partitions: o.partitions,
    rssMb: open.rssMb!,
    heapMb: open.heapMb!,
    baselineRssMb: open.baselineRssMb!,
    openSeconds: open.openSeconds!,
  };
  if (!o.restore) return result;
  const appId = `bench-restore-${Date.now().toString(36)}`;
  try {
    const fill = await runChild('fill', o, appId);
    const restore = await runChild('restore', o, appId);
    return { ...result, ...fill, ...restore } as MemoryBenchResult;
  } finally {
    await deleteBenchTopics(o.brokers, appId);
  }
}

function arg(argv: string[], name: string): string | undefined {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1] : undefined;
}

async function main(argv: string[]): Promise<void> {
  const num = (name: string) => (arg(argv, name) === undefined ? undefined : Number(arg(argv, name)));
  const opts: MemoryBenchOptions = {
    windows: num('windows'),
    mode: arg(argv, 'mode') as MergeMode | undefined,
    partitions: num('partitions'),
    restore: !argv.includes('--no-restore'),
    brokers: arg(argv, 'brokers')?.split(','),
  };
  const phase = arg(argv, 'child');
  if (phase === undefined) {
    process.stdout.write(JSON.stringify(await runMemoryBench(opts), null, 2) + '\n');
    return;
  }
  const o = withDefaults(opts);
  const appId = arg(argv, 'app')!;
  const out = phase === 'open' ? await phaseOpen(o) : phase === 'fill' ? await phaseFill(o, appId) : await phaseRestore(o, appId);
  process.stdout.write(JSON.stringify(out) + '\n');
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  main(process.argv.slice(2)).then(
    () => process.exit(0),
    (error) => {
      process.stderr.write(`memory bench failed: ${String((error as Error)?.stack ?? error)}\n`);
      process.exit(1);
    },
  );
}
