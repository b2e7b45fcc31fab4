/**
 * The pipeline part of the benchmark, against a started environment: the rising open-loop steps,
 * the latency phases (half the sustained rate, then a fixed 100 msgs/s) and the group-storm phase,
 * each on its own population (its own uid prefix) so their pushes can be told apart at the emulators.
 */
import type { Environment } from '../demo/environment.ts';
import type { ReceivedPush } from '../emulators/index.ts';
import type { Vendor } from '../processors/fan-out/vendor-port.ts';
import { buildPopulation, setupRecords, timeline, type Population, type TimelineCounters } from '../demo/workload.ts';
import { leadingPushLatency, stormFigures, type LatencyFigures, type StormFigures } from './analysis.ts';
import { processesCpuMs, processesWakeups } from './probes.ts';
import { runStep, waitDrained, type PipelineUnderTest, type StepResult } from './steps.ts';
import { formatSegments } from './worker-metrics.ts';
import { describeStep } from './report.ts';
import { CAMPAIGN_SENDER_RATE, runCampaignPhase, type CampaignFigures } from './campaign-phase.ts';

export interface PhaseOptions {
  /** Offered persisted messages/s of the load steps, ascending. */
  readonly rates: readonly number[];
  readonly stepSeconds: number;
  /** Users of the throughput population. */
  readonly users: number;
  readonly latencySeconds: number;
  /** Length of the fixed-rate 100 msgs/s latency phase (after the half-load one), s. */
  readonly lowRateSeconds: number;
  /** Persisted msgs/s of the storm phase. Default: the sustained rate. */
  readonly stormRate?: number;
  readonly stormSeconds: number;
  /** The workers' merge window (PUSH_MERGE_WINDOW_MS), ms. */
  readonly mergeWindowMs: number;
  readonly seed: number;
  /** After the first step that does not keep up, try one half-way between it and the last that did. */
  readonly bisect: boolean;
  /**
   * Per draw of the timeline, the chance of a group storm (~285 messages) instead of a one-to-one
   * message. Default 0.0015: about 30 % of the messages are in storms.
   */
  readonly stormShare?: number;
  /** How often to halve the rate when the first step does not keep up. */
  readonly lowerTries: number;
  /** Seconds the idle workers' CPU is measured before the steps. */
  readonly idleSeconds: number;
  /**
   * Seconds of load at the first step's rate before the steps, not reported: the workers compile
   * their hot paths, open their connections and fill their caches there, so the first step costs
   * what the others do. 0 skips it.
   */
  readonly warmupSeconds: number;
  /** Users of the campaign phase (bench/campaign-phase.ts); 0 skips it. */
  readonly campaignUsers?: number;
  /** The workers' PUSH_CAMPAIGN_UID_DIR and PUSH_CAMPAIGN_EXPANSION_RATE (the campaign is expanded from a uid file). */
  readonly campaignUidDir?: string;
  readonly campaignExpansionRate?: number;
  /** Its IM load beside the campaign, persisted msgs/s, and each IM run's length, s. */
  readonly campaignImRate?: number;
  readonly campaignImSeconds?: number;
  /**
   * The slow-vendor phase: at 100 msgs/s, `vendor`'s emulator answers every send `ms` late, and the
   * leading-push latency is measured over the pushes to the other vendors: whether one vendor's
   * slowness holds up the pushes to the others (the decisions' and the fan-out's commits). `seconds`
   * 0 skips it.
   */
  readonly slowVendor?: { readonly vendor: Vendor; readonly ms: number; readonly seconds: number };
}

export interface PhaseResults {
  readonly steps: StepResult[];
  readonly latency: (LatencyFigures & { step: StepResult; rate: number }) | null;
  /** The same at a fixed 100 persisted msgs/s. */
  readonly latencyAt100: (LatencyFigures & { step: StepResult; rate: number }) | null;
  /** The same at 100 msgs/s over the other vendors' pushes while one vendor is slow (`PhaseOptions.slowVendor`). */
  readonly slowVendorLatency: (LatencyFigures & { step: StepResult; rate: number; slowVendor: Vendor; slowMs: number }) | null;
  readonly storm: (StormFigures & { step: StepResult }) | null;
  /** IM latency alone and beside a campaign, and the campaign's throughput (bench/campaign-phase.ts). */
  readonly campaign: CampaignFigures | null;
  /** CPU the workers use with no load (polling, punctuators, empty commits), ms per second, all workers. */
  readonly idleWorkerCpuMsPerSecond: number;
  /** Their main threads' wake-ups with no load, per second, all workers (bench/probes.ts processWakeups). */
  readonly idleWorkerWakeupsPerSecond: number;
  readonly notes: string[];
}

async function idleCpu(put: PipelineUnderTest, seconds: number): Promise<{ cpuMsPerSecond: number; wakeupsPerSecond: number }> {
  const pids = put.workerPids();
  const cpu0 = processesCpuMs(pids);
  const wakeups0 = processesWakeups(pids);
  const t0 = Date.now();
  await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
  const elapsed = (Date.now() - t0) / 1000;
  return {
    cpuMsPerSecond: Math.round((processesCpuMs(pids) - cpu0) / elapsed),
    wakeupsPerSecond: Math.round((processesWakeups(pids) - wakeups0) / elapsed),
  };
}

/** Takes (and forgets) what every emulator received so far. */
function takeReceived(env: Environment): ReceivedPush[] {
  return env.emulators.all().flatMap((e) => e.received.splice(0, e.received.length));
}

export async function runPipelinePhases(put: PipelineUnderTest & { env: Environment }, options: PhaseOptions): Promise<PhaseResults> {
  const { env, say } = put;
  const notes: string[] = [];
  const loadPopulation = buildPopulation({ users: options.users, apps: [env.appId], seed: options.seed, idPrefix: `${env.run}t` }, env.emulators.token);
  const stormUsers = Math.max(100, Math.min(options.users, 2000));
  const storm = buildPopulation(
    {
      users: stormUsers,
      apps: [env.appId],
      seed: options.seed + 1,
      idPrefix: `${env.run}s`,
      onlineShare: 0,
      backgroundShare: 0,
      quietShare: 0,
      deadTokenShare: 0,
    },
    env.emulators.token,
  );
  // As in the demo: some devices' preferred token is already dead at the vendor (fan-out falls back).
  for (const device of loadPopulation.devices) if (device.deadFirstToken) env.emulators[device.tokens[0]!.vendor].deadTokens.add(device.tokens[0]!.token);

  say(
    `[bench] populations: load ${loadPopulation.users.length} users / ${loadPopulation.devices.length} devices, storm ${storm.users.length} users / ${storm.devices.length} devices; sending tokens and settings ...`,
  );
  for (const population of [loadPopulation, storm]) {
    const setup = setupRecords(population);
    await put.traffic.send('tokens', setup.tokens);
    await put.traffic.send('settings', setup.settings);
  }
  await waitDrained(put, 120_000);
  takeReceived(env);

  const counters: TimelineCounters = { seqs: new Map(), unread: new Map() };
  /** A timeline of `seconds` starting 1.5 s from now (a storm spreads over ~2 s: the last start 2 s before the end). */
  const load = (population: Population, rate: number, seconds: number, extra: { stormShare?: number; counters?: TimelineCounters }) => {
    const startMs = Date.now() + 1500;
    const records = [
      ...timeline(population, {
        users: population.users.length,
        seed: options.seed,
        messages: Math.round(rate * seconds),
        durationMs: Math.max(1000, seconds * 1000 - 2000),
        startMs,
        ...extra,
      }),
    ];
    return { records, window: { startMs, seconds } };
  };
  // Trailing merge updates go out at window close: a phase is drained only after that.
  const settleMs = options.mergeWindowMs + 2000;

  const steps: StepResult[] = [];
  const step = async (rate: number, note = '') => {
    say(`[bench] step ${rate} msgs/s${note} for ${options.stepSeconds} s ...`);
    const { records, window } = load(loadPopulation, rate, options.stepSeconds, { counters, stormShare: options.stormShare ?? 0.0015 });
    const result = await runStep(put, `${rate}/s`, records, { window });
    takeReceived(env);
    steps.push(result);
    say(`[bench] step ${rate} msgs/s: ${result.sustained ? 'kept up' : 'did NOT keep up'} — ${result.verdict}`);
    say(`[bench] step ${rate} msgs/s: ${describeStep(result)}`);
    return result.sustained;
  };
  if (options.warmupSeconds > 0) {
    const rate = options.rates[0]!;
    say(`[bench] warm-up: ${rate} msgs/s for ${options.warmupSeconds} s (not reported) ...`);
    const { records, window } = load(loadPopulation, rate, options.warmupSeconds, { counters, stormShare: options.stormShare ?? 0.0015 });
    await runStep(put, 'warm-up', records, { window });
    takeReceived(env);
  }
  // Up the rates until one does not keep up; if the first already does not, halve (up to lowerTries times).
  let lastKept: number | undefined;
  let firstFailed: number | undefined;
  for (const rate of options.rates) {
    if (!(await step(rate))) {
      firstFailed = rate;
      break;
    }
    lastKept = rate;
  }
  for (
    let rate = Math.round(options.rates[0]! / 2), tries = 0;
    lastKept === undefined && tries < options.lowerTries && rate >= 10;
    rate = Math.round(rate / 2), tries++
  ) {
    if (await step(rate, ' (lower)')) lastKept = rate;
    else firstFailed = rate;
  }
  if (options.bisect && firstFailed !== undefined && lastKept !== undefined) {
    const rate = Math.round((lastKept + firstFailed) / 2);
    if (rate !== lastKept && rate !== firstFailed) await step(rate, ' (half-way)');
  }

  const best = steps.filter((s) => s.sustained).sort((a, b) => b.offeredRate - a.offeredRate)[0];
  const maxRate = best ? Math.min(best.offeredRate, best.generatorRate) : options.rates[0]!;
  if (!best) notes.push(`latency measured at half the lowest step's rate (${options.rates[0]}/s) since no step kept up`);
  const halfRate = Math.max(1, Math.round(maxRate / 2));
  say(`[bench] latency phase: ${halfRate} msgs/s (half of ${maxRate}) for ${options.latencySeconds} s ...`);
  // A step that did not keep up may leave a backlog (its drain wait is bounded): the latency phase
  // starts on a drained pipeline, or its figures would measure that backlog.
  if ((await waitDrained(put, 600_000)) === null)
    notes.push('the pipeline had not drained 10 min after the load steps; the latency phase started on a backlog');
  // Let the steps' merge windows close first, so the phase's first messages are leading pushes.
  await new Promise((resolve) => setTimeout(resolve, settleMs));
  const latencyPhase = async (rate: number, seconds: number, slow?: Vendor) => {
    const latencyLoad = load(loadPopulation, rate, seconds, { counters, stormShare: options.stormShare ?? 0.0015 });
    const latencyStep = await runStep(put, `latency ${rate}/s`, latencyLoad.records, { settleMs, window: latencyLoad.window });
    const received = takeReceived(env).filter((push) => push.vendor !== slow);
    const figures = { ...leadingPushLatency(latencyLoad.records, loadPopulation, received, 2 * options.mergeWindowMs), step: latencyStep, rate };
    say(
      `[bench] latency at ${rate}/s${slow ? ` to the vendors other than ${slow}` : ''}: p50 ${figures.p50Ms} ms, p99 ${figures.p99Ms} ms, p99.9 ${figures.p999Ms} ms over ${figures.samples} leading pushes; segments (leading pushes):`,
    );
    for (const line of latencyStep.breakdown ? formatSegments(latencyStep.breakdown.segments) : ['    (no worker metrics)']) say(line);
    if (!latencyStep.sustained) notes.push(`the ${rate}/s latency phase itself did not keep up: ${latencyStep.verdict}`);
    return figures;
  };
  const latency = await latencyPhase(halfRate, options.latencySeconds);
  // runStep waited settleMs after the load: the phase's merge windows are closed.
  say(`[bench] latency phase: 100 msgs/s for ${options.lowRateSeconds} s ...`);
  const latencyAt100 = await latencyPhase(100, options.lowRateSeconds);
  let slowVendorLatency: PhaseResults['slowVendorLatency'] = null;
  const slow = options.slowVendor;
  if (slow && slow.seconds > 0) {
    say(`[bench] slow-vendor phase: 100 msgs/s for ${slow.seconds} s, ${slow.vendor} answering ${slow.ms} ms late ...`);
    const emulator = env.emulators[slow.vendor];
    emulator.latencyMs = slow.ms;
    try {
      slowVendorLatency = { ...(await latencyPhase(100, slow.seconds, slow.vendor)), slowVendor: slow.vendor, slowMs: slow.ms };
    } finally {
      emulator.latencyMs = 0;
    }
  }

  const stormRate = options.stormRate ?? maxRate;
  say(`[bench] group-storm phase: ${stormRate} msgs/s for ${options.stormSeconds} s ...`);
  const stormLoad = load(storm, stormRate, options.stormSeconds, { stormShare: 1 });
  const stormStep = await runStep(put, `storm ${stormRate}/s`, stormLoad.records, { settleMs, window: stormLoad.window });
  const stormResult = { ...stormFigures(stormLoad.records, storm, takeReceived(env)), step: stormStep };
  say(
    `[bench] storm: ${stormResult.submissions} submissions for ${stormResult.triggers} triggers (${stormResult.submissionsPerTrigger}); ${stormResult.pairsFinalLatest}/${stormResult.pairs} (device, conv) end on the latest seq`,
  );
  if (stormResult.pairsWithoutPush > 0)
    notes.push(`${stormResult.pairsWithoutPush} storm (device, conv) pairs got no accepted push at all (see the workers' logs and the outcomes topic)`);
  const campaignUsers = options.campaignUsers ?? 0;
  const campaign =
    campaignUsers > 0
      ? await runCampaignPhase(
          put,
          loadPopulation,
          (rate, seconds) => load(loadPopulation, rate, seconds, { counters, stormShare: options.stormShare ?? 0.0015 }),
          {
            users: campaignUsers,
            imRate: options.campaignImRate ?? 100,
            imSeconds: options.campaignImSeconds ?? options.lowRateSeconds,
            senderRatePerSecond: CAMPAIGN_SENDER_RATE,
            mergeWindowMs: options.mergeWindowMs,
            timeoutSeconds: Math.ceil(campaignUsers / CAMPAIGN_SENDER_RATE) * 2 + 120,
            uidDir: options.campaignUidDir ?? '',
            expansionRatePerSecond: options.campaignExpansionRate ?? 0,
          },
        )
      : null;
  if (campaign && campaign.reached < campaign.users) notes.push(`the campaign reached ${campaign.reached} of ${campaign.users} users before the phase gave up`);
  // Idle burn last, when every phase has drained and every merge window closed (measured before the
  // steps it caught the tail of the setup records).
  const idle = await idleCpu(put, options.idleSeconds);
  say(`[bench] idle workers use ${idle.cpuMsPerSecond} CPU ms/s and wake ${idle.wakeupsPerSecond} times a second (all workers, no load)`);
  return {
    steps,
    latency,
    latencyAt100,
    slowVendorLatency,
    storm: stormResult,
    campaign,
    idleWorkerCpuMsPerSecond: idle.cpuMsPerSecond,
    idleWorkerWakeupsPerSecond: idle.wakeupsPerSecond,
    notes,
  };
}
