/**
 * `npm run bench`: the pipeline's figures beside the targets of docs/design.md, "Targets", in one
 * run on one broker.
 *
 *   1. ceilings: raw kafkajs consume→produce and a chain of exactly-once identity hops (bench/ceilings.ts);
 *   2. the pipeline (demo/environment.ts: workers, all six vendor emulators) under open-loop steps of
 *      rising persisted-message rate until one does not keep up (then one step half-way back);
 *   3. latency of offline devices' leading pushes at half the sustained rate and at 100 msgs/s
 *      (emulator receive time), split into segments from the workers' histograms;
 *   4. a group-storm workload: vendor submissions per trigger, and whether every device ends on the
 *      latest seq of each conversation;
 *   5. fan-out throughput with MySQL on 1 and on 4 uid shards, side by side (bench/shards-bench.ts).
 * Every step also reads the workers' /metrics: records produced and fetched per message, commits per
 * second, GC share of the workers' CPU (bench/worker-metrics.ts).
 * Writes bench/results/<timestamp>.json and, beside it, an HTML report with the charts
 * (bench/html-report.ts), and prints a table. `--help` lists the flags.
 */
import { cpus, loadavg, tmpdir } from 'node:os';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { kafkaClient } from '../common/kafka-client.ts';
import { readEndpoints } from '../common/endpoints.ts';
import { readInt, readKey } from '../common/config.ts';
import { CONFIG_KEYS } from '../common/config-keys.ts';
import { startEnvironment } from '../demo/environment.ts';
import { readCaughtUpCommitMs, readCommitIntervalMs } from '../pipeline/worker-config.ts';
import { trafficProducer } from '../demo/traffic.ts';
import { measureCeilings, type CeilingResult } from './ceilings.ts';
import { runPipelinePhases, type PhaseOptions } from './phases.ts';
import { renderHtmlReport } from './html-report.ts';
import { formatTable, type BenchResult } from './report.ts';
import { atRate } from './worker-cpu.ts';
import { processMemory } from './probes.ts';
import { runMemoryBench, type MemoryBenchResult } from './memory-bench.ts';
import { measureShardedFanOut, type ShardBenchResult } from './shards-bench.ts';
import { measureCampaignExpansion, type CampaignBenchResult } from './campaign-expansion.ts';
import { CAMPAIGN_SENDER_RATE } from './campaign-phase.ts';
import { VENDORS, type Vendor } from '../processors/fan-out/vendor-port.ts';

const HELP = `npm run bench -- [flags]

  --quick                short run (smoke test): small steps, small ceilings, about a minute
  --instances N          event-path worker processes (decisions, fan-out; default 1); the other
                         stages run in one more, niced (demo/environment.ts backgroundWorker)
  --all-stages           run every stage in every worker instead
  --partitions N         partitions of every topic (default 6)
  --commit-interval MS   PUSH_COMMIT_INTERVAL_MS of the workers (default: as the workers read it, 250 fused, 100 with PUSH_FAN_OUT_FUSED=false)
  --rates A,B,...        persisted msgs/s of the load steps (default 200,500,1000,2000,4000,8000,16000:
                         cost per message at fixed everyday loads, then up to the sustained rate;
                         stops at the first step that does not keep up, then tries one half-way back)
  --step-seconds S       length of each load step (default 20)
  --warmup-seconds S     load at the first step's rate before the steps, not reported (default 15, quick 3)
  --users N              users of the throughput population (default 5000)
  --latency-seconds S    length of the half-load latency phase (default 30)
  --latency-100-seconds S  length of the fixed 100 msgs/s latency phase (default 20)
  --slow-vendor-seconds S  length of the slow-vendor phase: 100 msgs/s while one vendor answers late,
                           latency over the other vendors' pushes (default 15; 0 skips it)
  --slow-vendor V          the vendor made slow (default hms)
  --slow-vendor-ms MS      how late it answers (default 1000)
  --storm-rate N         persisted msgs/s of the group-storm phase (default: the sustained rate)
  --storm-seconds S      length of the group-storm phase (default 15)
  --ceiling-records N    records per ceiling scenario (default 100000)
  --no-ceilings          skip the ceilings
  --campaign-users N     users of the campaign phase (IM latency beside a campaign; default 100000; quick 2000; 0 skips it)
  --campaign-im-seconds S  length of each of its three IM runs (alone, beside, alone again; default 60, quick 5):
                         a p99 over 20 s of leading pushes swings by half between two runs alone
  --shard-dispatches N   dispatches per run of the 1-vs-4 MySQL shards fan-out phase (default 1500; quick 500)
  --no-shards            skip that phase
  --expansion-uids N     uids of the campaign-expansion throughput phase (bench/campaign-expansion.ts;
                         default 200000, quick 20000; 0 skips it)
  --merge-windows N      also measure merge-state memory with N open windows and the restore time
                         (bench/memory-bench.ts; not in the default run)
  --out FILE             where to write the JSON (default bench/results/<timestamp>.json); the HTML
                         report (charts) goes beside it, the same name ending .html
  extra PUSH_* settings for the workers can be given as env: PUSH_BENCH_WORKER_ENV='K=V,K=V'`;

const ROOT = fileURLToPath(new URL('..', import.meta.url));

function flag(args: string[], name: string): string | undefined {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
}

function intFlag(args: string[], name: string, fallback: number, max: number, min = 1): number {
  return readInt({ [name]: flag(args, name) }, name, fallback, { min, max });
}

function gitSha(): string | null {
  try {
    return execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim();
  } catch {
    return null;
  }
}

function slowVendorFlag(args: string[]): Vendor {
  const vendor = flag(args, '--slow-vendor') ?? 'hms';
  if (!(VENDORS as readonly string[]).includes(vendor)) throw new Error(`--slow-vendor: one of ${VENDORS.join(', ')}, got ${vendor}`);
  return vendor as Vendor;
}

function extraWorkerEnv(): Record<string, string> {
  const raw = process.env.PUSH_BENCH_WORKER_ENV ?? '';
  return Object.fromEntries(
    raw
      .split(',')
      .filter(Boolean)
      .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
  );
}

async function deleteRunTopics(prefixes: string[]): Promise<void> {
  const admin = kafkaClient(readEndpoints(), { clientId: 'bench-cleanup' }).admin();
  await admin.connect();
  try {
    const topics = (await admin.listTopics()).filter((t) => prefixes.some((p) => t.startsWith(p)));
    if (topics.length > 0) await admin.deleteTopics({ topics });
  } finally {
    await admin.disconnect();
  }
}

export async function main(args: string[]): Promise<number> {
  if (args.includes('--help')) {
    console.log(HELP);
    return 0;
  }
  const quick = args.includes('--quick');
  const started = new Date();
  const say = (line: string) => console.log(`${new Date().toISOString().slice(11, 19)} ${line}`);
  const instances = intFlag(args, '--instances', 1, 16);
  const partitions = intFlag(args, '--partitions', 6, 64);
  const commitIntervalMs = intFlag(args, '--commit-interval', readCommitIntervalMs(extraWorkerEnv()), 60_000);
  const rates = (flag(args, '--rates') ?? (quick ? '100' : '200,500,1000,2000,4000,8000,16000'))
    .split(',')
    .map(Number)
    .filter((n) => n > 0);
  // The campaign phase's uid file goes here (a campaign names its file relative to PUSH_CAMPAIGN_UID_DIR).
  const uidDir = mkdtempSync(join(tmpdir(), 'bench-uids-'));
  // The campaign phase has one sender, limited to CAMPAIGN_SENDER_RATE pushes/s: expanding its
  // campaign faster would only queue requests ahead of the lane and spend the machine's CPU on them
  // sooner (docs/entry.md, "Campaign expansion"), so the expansion runs at the sender's rate.
  const workerEnv: Record<string, string> = {
    PUSH_COMMIT_INTERVAL_MS: String(commitIntervalMs),
    PUSH_CAMPAIGN_UID_DIR: uidDir,
    PUSH_CAMPAIGN_EXPANSION_RATE: String(CAMPAIGN_SENDER_RATE),
    ...extraWorkerEnv(),
  };
  const mergeWindowMs = Number(workerEnv.PUSH_MERGE_WINDOW_MS ?? 5000);
  const phase: PhaseOptions = {
    rates,
    stepSeconds: intFlag(args, '--step-seconds', quick ? 5 : 20, 3600),
    users: intFlag(args, '--users', quick ? 400 : 5000, 1_000_000),
    latencySeconds: intFlag(args, '--latency-seconds', quick ? 5 : 30, 3600),
    lowRateSeconds: intFlag(args, '--latency-100-seconds', quick ? 5 : 20, 3600),
    slowVendor: {
      vendor: slowVendorFlag(args),
      ms: intFlag(args, '--slow-vendor-ms', 1000, 60_000),
      seconds: intFlag(args, '--slow-vendor-seconds', quick ? 5 : 15, 3600, 0),
    },
    ...(flag(args, '--storm-rate') ? { stormRate: intFlag(args, '--storm-rate', 1, 1_000_000) } : {}),
    stormSeconds: intFlag(args, '--storm-seconds', quick ? 4 : 15, 3600),
    mergeWindowMs,
    seed: 1,
    bisect: !quick,
    lowerTries: quick ? 1 : 3,
    idleSeconds: quick ? 2 : 8,
    warmupSeconds: intFlag(args, '--warmup-seconds', quick ? 3 : 15, 3600, 0),
    campaignUsers: intFlag(args, '--campaign-users', quick ? 2_000 : 100_000, 10_000_000, 0),
    campaignImSeconds: intFlag(args, '--campaign-im-seconds', quick ? 5 : 60, 3600),
    campaignUidDir: uidDir,
    campaignExpansionRate: readKey(workerEnv, CONFIG_KEYS.PUSH_CAMPAIGN_EXPANSION_RATE),
  };
  const notes: string[] = [];
  const loadAtStart = loadavg().map((x) => Math.round(x * 100) / 100);

  let ceilings: CeilingResult | null = null;
  if (!args.includes('--no-ceilings')) {
    say('[bench] ceilings on the same broker ...');
    ceilings = await measureCeilings({
      records: intFlag(args, '--ceiling-records', quick ? 40_000 : 100_000, 10_000_000),
      partitions,
      commitIntervalMs,
      // The floor is one exactly-once hop, as the fan-out apart waits for the decisions' (fused, no push does).
      caughtUpCommitMs: readCaughtUpCommitMs({ ...workerEnv, PUSH_FAN_OUT_FUSED: 'false' }, commitIntervalMs),
      latencySeconds: quick ? 5 : 20,
      onProgress: say,
    });
  }

  let shards: ShardBenchResult | null = null;
  if (!args.includes('--no-shards')) {
    say('[bench] fan-out with MySQL on 1 and on 4 uid shards (bench/shards-bench.ts) ...');
    shards = await measureShardedFanOut({
      dispatches: intFlag(args, '--shard-dispatches', quick ? 500 : 1_500, 1_000_000),
      partitions,
      commitIntervalMs,
      onProgress: say,
    });
  }

  let campaignExpansion: CampaignBenchResult | null = null;
  const expansionUids = readInt({ '--expansion-uids': flag(args, '--expansion-uids') }, '--expansion-uids', quick ? 20_000 : 200_000, {
    min: 0,
    max: 10_000_000,
  });
  if (expansionUids > 0) {
    say(`[bench] campaign expansion: one campaign of ${expansionUids} uids (bench/campaign-expansion.ts) ...`);
    campaignExpansion = await measureCampaignExpansion({ uids: expansionUids, partitions, commitIntervalMs });
    say(`[bench] campaign expansion: ${campaignExpansion.requestsPerSecond} requests/s, ${campaignExpansion.cpuMsPerThousand} ms CPU per 1 000`);
  }

  let mergeState: MemoryBenchResult | null = null;
  if (flag(args, '--merge-windows')) {
    const windows = intFlag(args, '--merge-windows', 1, 10_000_000);
    say(`[bench] merge state: ${windows} open windows, then a restore (bench/memory-bench.ts) ...`);
    mergeState = await runMemoryBench({ windows, partitions });
    say(`[bench] merge state: RSS ${mergeState.rssMb} MB (heap ${mergeState.heapMb} MB), restore ${mergeState.restoreMs ?? 'n/a'} ms`);
  }

  const backgroundWorker = !args.includes('--all-stages');
  say(
    `[bench] pipeline: ${instances} worker(s)${backgroundWorker ? ' + 1 for the stages off the event path' : ' running every stage'}, ${partitions} partitions, commit interval ${commitIntervalMs} ms`,
  );
  const env = await startEnvironment({ instances, partitions, workerEnv, backgroundWorker, verbose: true });
  // Ctrl-C or a kill must not leave worker processes behind.
  const stopWorkers = () => {
    for (const w of env.workers) w.process.kill('SIGTERM');
    process.exit(130);
  };
  process.once('SIGINT', stopWorkers);
  process.once('SIGTERM', stopWorkers);
  const pidsOf = (workers: typeof env.workers) => workers.map((w) => w.process.pid).filter((p): p is number => p !== undefined);
  const workerPids = () => pidsOf(env.workers);
  const eventPathPids = backgroundWorker ? () => pidsOf(env.workers.filter((w) => w.index !== env.backgroundWorkerIndex)) : undefined;
  const peakRssMb = new Map<number, number>();
  const rssAtEnd = new Map<number, number | null>();
  let outcome: Awaited<ReturnType<typeof runPipelinePhases>>;
  const admin = kafkaClient(readEndpoints(), { clientId: 'bench-lag' }).admin();
  try {
    try {
      await env.waitReady();
    } catch (error) {
      // A worker that lost a startup race with fresh topics exits; give each such worker one restart.
      const dead = env.workers.filter((w) => w.process.exitCode !== null);
      if (dead.length === 0) throw error;
      notes.push(`worker(s) ${dead.map((w) => w.index).join(', ')} exited during startup (${String(error)}); restarted once`);
      say(`[bench] ${String(error)}; restarting it once`);
      for (const w of dead) await env.startWorker(w.index);
      await env.waitReady();
    }
    await admin.connect();
    const traffic = await trafficProducer(env.topicPrefix);
    try {
      const metricsPorts = () => env.workers.map((w) => w.metricsPort);
      outcome = await runPipelinePhases(
        {
          env,
          admin,
          traffic,
          workerPids,
          ...(eventPathPids ? { eventPathPids } : {}),
          metricsPorts,
          peakRssMb,
          say,
          applicationId: env.applicationId,
          topicPrefix: env.topicPrefix,
          mysqlUrl: readEndpoints().mysqlShards[0]!,
        },
        phase,
      );
    } finally {
      await traffic.close();
    }
  } finally {
    for (const pid of workerPids()) {
      const memory = processMemory(pid);
      rssAtEnd.set(pid, memory?.rssMb ?? null);
      peakRssMb.set(pid, Math.max(peakRssMb.get(pid) ?? 0, memory?.peakRssMb ?? 0));
    }
    // Best-effort: the figures are taken; a failed disconnect must not keep the workers from being stopped.
    await admin.disconnect().catch(() => undefined);
    say('[bench] stopping workers and emulators ...');
    await env.close();
    rmSync(uidDir, { recursive: true, force: true });
    await deleteRunTopics([env.topicPrefix, `${env.applicationId}-`]).catch((e) => notes.push(`could not delete the run's topics: ${String(e)}`));
  }

  const sustained = outcome.steps.filter((s) => s.sustained).sort((a, b) => b.offeredRate - a.offeredRate)[0];
  const sustainedRate = sustained ? Math.min(sustained.offeredRate, sustained.generatorRate) : 0;
  if (!sustained) notes.push('no load step kept up: the sustained rate is reported as 0');
  if (outcome.steps.every((s) => s.sustained)) notes.push(`every step kept up: the sustained rate is a lower bound; run with higher --rates`);
  notes.push(...outcome.notes);
  notes.push(
    'sustained = the step kept its persisted-message input lag ≤ 2 s of load at the end and its event-path lag did not rise (slope ≤ 5 % of the input record rate); ceilings drain a backlog, the pipeline is driven open-loop',
  );
  notes.push('the broker (Kafka 3.9.1 KRaft), MariaDB, ClickHouse, the registry, the emulators, the generator and the workers share this machine');
  const kafkajsVersion = (JSON.parse(readFileSync(join(ROOT, 'node_modules/kafkajs/package.json'), 'utf8')) as { version: string }).version;
  const result: BenchResult = {
    startedAt: started.toISOString(),
    finishedAt: new Date().toISOString(),
    command: `npm run bench -- ${args.join(' ')}`.trim(),
    environment: {
      cpus: cpus().length,
      cpuModel: cpus()[0]?.model ?? 'unknown',
      node: process.version,
      kafkajs: kafkajsVersion,
      brokers: readEndpoints().kafkaBrokers,
      coLocated: 'broker co-located with the pipeline',
      gitSha: gitSha(),
      loadAverageAtStart: loadAtStart,
      loadAverageAtEnd: loadavg().map((x) => Math.round(x * 100) / 100),
    },
    config: {
      quick,
      instances,
      backgroundWorker,
      partitions,
      commitIntervalMs,
      mergeWindowMs,
      users: phase.users,
      stepSeconds: phase.stepSeconds,
      rates,
      seed: phase.seed,
      workerEnv,
    },
    ceilings,
    shards,
    campaignExpansion,
    steps: outcome.steps,
    sustainedEventsPerSecond: sustainedRate,
    sustainedStep: sustained?.label ?? null,
    idleWorkerCpuMsPerSecond: outcome.idleWorkerCpuMsPerSecond,
    idleWorkerWakeupsPerSecond: outcome.idleWorkerWakeupsPerSecond,
    pipelineToCeiling: ceilings && sustained ? Math.round((sustainedRate / ceilings.exactlyOnceChain.recordsPerSecond) * 1000) / 1000 : null,
    pipelineToRawCeiling: ceilings && sustained ? Math.round((sustainedRate / ceilings.rawConsumeProduce.recordsPerSecond) * 10000) / 10000 : null,
    atSustainedRate: sustained ? atRate(sustained, outcome.idleWorkerCpuMsPerSecond) : null,
    latency: outcome.latency,
    latencyAt100: outcome.latencyAt100,
    slowVendorLatency: outcome.slowVendorLatency,
    campaign: outcome.campaign,
    mergeState,
    storm: outcome.storm,
    workers: [...peakRssMb.entries()].map(([pid, peak]) => ({ pid, peakRssMb: peak, rssMbAtEnd: rssAtEnd.get(pid) ?? null })),
    notes,
  };
  const out = flag(args, '--out') ?? join(ROOT, 'bench', 'results', `${started.toISOString().replace(/[:.]/g, '-')}.json`);
  mkdirSync(join(out, '..'), { recursive: true });
  writeFileSync(out, `${JSON.stringify(result, null, 2)}\n`);
  const table = formatTable(result);
  const html = out.replace(/(\.json)?$/, '.html');
  writeFileSync(html, renderHtmlReport(result, table));
  console.log(`\n=== offline-push benchmark (${quick ? 'quick' : 'default'} run, ${Math.round((Date.now() - started.getTime()) / 1000)} s) ===\n`);
  console.log(table);
  console.log(`\nresults: ${out}`);
  console.log(`report:  ${html}`);
  return 0;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (error) => {
      console.error(error);
      process.exit(1);
    },
  );
}
