/**
 * One open-loop load step against a running pipeline: the timeline's records are produced at their
 * scheduled times whatever the pipeline does, while the stage groups' lag, the workers' CPU and
 * memory and the machine's CPU are sampled; then the step drains. `sustained` says whether the
 * pipeline kept up (bounded input lag, no rising trend).
 */
import type { Admin } from 'kafkajs';
import type { TrafficProducer } from '../demo/traffic.ts';
import type { TimedRecord } from '../demo/workload.ts';
import { cpus } from 'node:os';
import {
  boxBusyMs,
  boxBusyShare,
  boxCpu,
  processesCpuMs,
  processesWakeups,
  processMemory,
  round1,
  sampleLag,
  serviceCpuMs,
  sqlCounters,
  SERVICES,
  slope,
  type LagSample,
  type Service,
  type SqlCounters,
} from './probes.ts';
import type { StageName } from '../pipeline/apps/index.ts';
import { scrapeWorkers, delta, stepBreakdown, type StepBreakdown } from './worker-metrics.ts';

export interface PipelineUnderTest {
  readonly admin: Admin;
  readonly applicationId: string;
  readonly topicPrefix: string;
  readonly traffic: TrafficProducer;
  /** Pids of the worker processes (read afresh: workers may be restarted). */
  readonly workerPids: () => number[];
  /** Pids of the workers running the event path, when the stages off it run in a worker of their own. */
  readonly eventPathPids?: () => number[];
  /** The workers' /metrics ports (read afresh); without them a step has no breakdown. */
  readonly metricsPorts?: () => number[];
  /** Peak RSS seen per worker pid, MB; steps update it. */
  readonly peakRssMb: Map<number, number>;
  /** The MySQL server the pipeline writes to (its statement counters are read around each step). */
  readonly mysqlUrl?: string;
  readonly say: (line: string) => void;
}

export interface StepCriteria {
  /** Most the persisted-message input may lag at the end of the load, in seconds of offered load. Default 2. */
  readonly maxInputLagSeconds?: number;
  /** Largest rise of the event-path lag over the second half of the step, as a share of the input record rate. Default 0.05. */
  readonly maxLagSlopeShare?: number;
  /** Longest wait for the step to drain, ms. Default 60 000. */
  readonly drainTimeoutMs?: number;
  /** Quiet time needed after the load before the step counts as drained (merge windows close), ms. Default 0. */
  readonly settleMs?: number;
  /** Lag sampling interval, ms. Default 2000. */
  readonly sampleEveryMs?: number;
  /** The span the timeline was generated over; default from its first persisted to its last record. */
  readonly window?: { readonly startMs: number; readonly seconds: number };
}

export interface StepResult {
  readonly label: string;
  /** Persisted messages per second the timeline offered. */
  readonly offeredRate: number;
  readonly seconds: number;
  readonly persistedMessages: number;
  /** All records produced (persisted messages and presence events). */
  readonly inputRecords: number;
  /** Persisted messages per second the generator actually produced (open loop: should equal offered). */
  readonly generatorRate: number;
  /** Persisted messages per second the decisions group committed past during the load. */
  readonly consumedRate: number;
  /** Persisted-message lag of the decisions group at the end of the load. */
  readonly inputLagAtEnd: number;
  /** Lag per stage group at the end of the load (records of all the group's input topics). */
  readonly lagAtEnd: Readonly<Record<StageName, number>>;
  readonly maxPathLag: number;
  /** Least-squares slope of the event-path lag over the second half of the load, records/s. */
  readonly pathLagSlope: number;
  /** Seconds from the end of the load until every group had caught up; null when it did not within the timeout. */
  readonly drainSeconds: number | null;
  readonly sustained: boolean;
  /** Why the step counts as sustained or not. */
  readonly verdict: string;
  /** Worker CPU (user + system, all workers) from the start of the load until drained, per 1,000 persisted messages. */
  readonly workerCpuMsPer1k: number;
  /** The same CPU per persisted message, ms (gross: idle burn included). */
  readonly workerCpuMsPerMessage: number;
  /**
   * The part of it spent by the workers running the event path (decisions and fan-out), per
   * persisted message, ms; null when every stage ran in the same workers. The rest is the stages
   * off the event path: receipts, the ClickHouse sink, campaigns and the business lane.
   */
  readonly eventPathWorkerCpuMsPerMessage: number | null;
  /** The workers' main threads' wake-ups (bench/probes.ts processWakeups), all workers, per second over the same span. */
  readonly workerWakeupsPerSecond: number;
  /** The same CPU in ms, and the seconds it was measured over (for subtracting the idle burn). */
  readonly workerCpuMs: number;
  readonly cpuSeconds: number;
  /** The benchmark process's CPU (generator and emulators) over the same span, per 1,000 persisted messages. */
  readonly benchCpuMsPer1k: number;
  /** Share of the whole machine's CPU busy during the load, 0–1. */
  readonly boxCpuBusy: number;
  /**
   * The whole machine's busy CPU over the same span as the worker CPU, per persisted message, ms, by
   * process: what binds the sustained rate on a co-located box. `other` is the rest of the machine
   * (kernel work not charged to a process, other services).
   */
  readonly boxCpuMsPerMessage: BoxCpuPerMessage;
  /** The rate at which that CPU would fill every core: cores × 1,000 ÷ boxCpuMsPerMessage.total, msgs/s. */
  readonly boxCeilingPerSecond: number;
  /** The same for everything but the workers (broker, MariaDB, ClickHouse, generator, emulators): the bound with workers that cost nothing. */
  readonly boxCeilingWithoutWorkersPerSecond: number;
  /** RSS per worker at the end of the step, MB. */
  readonly workerRssMb: number[];
  /** MySQL statements and InnoDB fsyncs per persisted message over the same span as the CPU; null when not read. */
  readonly sqlPerMessage: SqlCounters | null;
  /**
   * From the workers' counters over the same span as the CPU (start of the load until drained):
   * records per message, commits per second, GC share, latency segments. Null when a worker's
   * /metrics did not answer.
   */
  readonly breakdown: StepBreakdown | null;
}

export type BoxCpuPerMessage = Readonly<Record<'workers' | 'bench' | Service | 'other' | 'total', number>>;

const delay = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** sampleLag with a few retries: an overloaded broker sometimes cannot name a group coordinator at once. */
async function sample(put: PipelineUnderTest, attempts = 5): Promise<LagSample> {
  for (let i = 1; ; i++) {
    try {
      return await sampleLag(put.admin, put.applicationId, put.topicPrefix);
    } catch (error) {
      if (i >= attempts) throw error;
      put.say(`[bench] reading the groups' offsets failed (${String(error)}); retrying`);
      await delay(1000);
    }
  }
}

function recordMemory(put: PipelineUnderTest): number[] {
  return put.workerPids().map((pid) => {
    const m = processMemory(pid);
    if (!m) return 0;
    put.peakRssMb.set(pid, Math.max(put.peakRssMb.get(pid) ?? 0, m.peakRssMb));
    return m.rssMb;
  });
}

/** Waits until the groups' offsets stay unchanged for two intervals in a row with no lag left; returns seconds waited or null. */
export async function waitDrained(put: PipelineUnderTest, timeoutMs: number, settleMs = 0, everyMs = 1000): Promise<number | null> {
  const started = Date.now();
  let previous = '';
  let stable = 0;
  for (;;) {
    await delay(everyMs);
    const current = await sample(put);
    stable = current.snapshot === previous ? stable + 1 : 0;
    // Offsets that stand still during a rebalance are not a drained pipeline: also want no lag beyond
    // one transaction marker per partition (unless they stood still for 10 readings).
    const lag = Object.values(current.byStage).reduce((a, b) => a + b, 0);
    const caughtUp = lag <= current.partitions || stable >= 10;
    if (stable >= 2 && caughtUp && Date.now() - started >= settleMs) return round1((Date.now() - started) / 1000);
    previous = current.snapshot;
    if (Date.now() - started > timeoutMs) return null;
  }
}

export async function runStep(put: PipelineUnderTest, label: string, events: readonly TimedRecord[], criteria: StepCriteria = {}): Promise<StepResult> {
  const persistedMessages = events.filter((e) => e.topic === 'persisted').length;
  const firstAt = criteria.window?.startMs ?? events.find((e) => e.topic === 'persisted')?.at ?? Date.now();
  const lastAt = events.length > 0 ? events[events.length - 1]!.at : firstAt;
  const seconds = criteria.window?.seconds ?? Math.max(1, (lastAt - firstAt) / 1000);
  const offeredRate = Math.round(persistedMessages / seconds);
  const inputRate = events.length / seconds;
  const every = criteria.sampleEveryMs ?? 2000;

  const before = await sample(put);
  const pids = put.workerPids();
  const eventPathPids = put.eventPathPids?.() ?? null;
  const metrics0 = put.metricsPorts ? await scrapeWorkers(put.metricsPorts()) : null;
  const cpu0 = processesCpuMs(pids);
  const wakeups0 = processesWakeups(pids);
  const eventPathCpu0 = eventPathPids && processesCpuMs(eventPathPids);
  const cpuStarted = Date.now();
  const bench0 = process.cpuUsage();
  const box0 = boxCpu();
  const services0 = serviceCpuMs();
  const sql0 = put.mysqlUrl ? await sqlCounters(put.mysqlUrl) : undefined;
  const samples: LagSample[] = [];
  let sent = 0;
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      await delay(every);
      if (!sampling) break;
      let s: LagSample;
      try {
        s = await sampleLag(put.admin, put.applicationId, put.topicPrefix);
      } catch (error) {
        put.say(`[${label}] lag sample skipped: ${String(error)}`);
        continue;
      }
      samples.push(s);
      recordMemory(put);
      const lags = Object.entries(s.byStage)
        .map(([k, v]) => `${k} ${v}`)
        .join(', ');
      put.say(
        `[${label}] ${round1((s.at - firstAt) / 1000)} s  sent ${sent}/${events.length}  consumed ${s.persistedCommitted - before.persistedCommitted}/${persistedMessages}  lag: ${lags}`,
      );
    }
  })();
  await put.traffic.play(events, (n) => (sent = n));
  const loadSeconds = Math.max(0.001, (Date.now() - firstAt) / 1000);
  sampling = false;
  await sampler;
  const end = await sample(put);
  const box1 = boxCpu();
  samples.push(end);
  const consumedDuringLoad = end.persistedCommitted - before.persistedCommitted;
  const inputLagAtEnd = Math.max(0, persistedMessages - consumedDuringLoad);

  const drainSeconds = await waitDrained(put, criteria.drainTimeoutMs ?? 60_000, criteria.settleMs ?? 0);
  const cpu1 = processesCpuMs(pids);
  const eventPathCpu1 = eventPathPids && processesCpuMs(eventPathPids);
  const cpuSeconds = (Date.now() - cpuStarted) / 1000;
  const wakeups1 = processesWakeups(pids);
  const metrics1 = metrics0 && put.metricsPorts ? await scrapeWorkers(put.metricsPorts()) : null;
  const bench1 = process.cpuUsage(bench0);
  const services1 = serviceCpuMs();
  const boxDrained = boxCpu();
  const sql1 = sql0 && put.mysqlUrl ? await sqlCounters(put.mysqlUrl) : undefined;
  const workerRssMb = recordMemory(put);

  const half = samples.filter((s) => s.at >= firstAt + (seconds * 1000) / 2);
  const pathLagSlope = Math.round(slope(half.map((s) => [(s.at - firstAt) / 1000, s.pathLag] as const)));
  const maxPathLag = Math.max(0, ...samples.map((s) => s.pathLag));
  const generatorRate = Math.round(persistedMessages / Math.max(seconds, loadSeconds));
  const maxInputLag = (criteria.maxInputLagSeconds ?? 2) * offeredRate;
  const maxSlope = (criteria.maxLagSlopeShare ?? 0.05) * inputRate;
  const reasons: string[] = [];
  if (inputLagAtEnd > maxInputLag) reasons.push(`input lag ${inputLagAtEnd} > ${Math.round(maxInputLag)} (${criteria.maxInputLagSeconds ?? 2} s of load)`);
  if (pathLagSlope > maxSlope) reasons.push(`path lag rising ${pathLagSlope}/s > ${Math.round(maxSlope)}/s`);
  if (drainSeconds === null) reasons.push('did not drain');
  if (generatorRate < 0.9 * offeredRate) reasons.push(`generator reached only ${generatorRate}/s`);
  const per1k = (ms: number) => (persistedMessages > 0 ? round1((ms / persistedMessages) * 1000) : 0);
  const perMessage = (ms: number) => (persistedMessages > 0 ? Math.round((ms / persistedMessages) * 1000) / 1000 : 0);
  const ceiling = (msPerMessage: number) => (msPerMessage > 0 ? Math.round((cpus().length * 1000) / msPerMessage) : 0);
  const boxMs = boxBusyMs(boxDrained) - boxBusyMs(box0);
  const charged: Record<string, number> = { workers: cpu1 - cpu0, bench: (bench1.user + bench1.system) / 1000 };
  for (const service of SERVICES) charged[service] = services1[service] - services0[service];
  const chargedMs = Object.values(charged).reduce((a, b) => a + b, 0);
  const boxCpuMsPerMessage = Object.fromEntries([
    ...Object.entries(charged).map(([k, ms]) => [k, perMessage(ms)]),
    ['other', perMessage(Math.max(0, boxMs - chargedMs))],
    ['total', perMessage(Math.max(boxMs, chargedMs))],
  ]) as BoxCpuPerMessage;
  return {
    label,
    offeredRate,
    seconds: round1(seconds),
    persistedMessages,
    inputRecords: events.length,
    generatorRate,
    consumedRate: Math.round(consumedDuringLoad / Math.max(seconds, loadSeconds)),
    inputLagAtEnd,
    lagAtEnd: end.byStage,
    maxPathLag,
    pathLagSlope,
    drainSeconds,
    sustained: reasons.length === 0,
    verdict:
      reasons.length === 0 ? `kept up: input lag ${inputLagAtEnd} at end, path lag slope ${pathLagSlope}/s, drained in ${drainSeconds} s` : reasons.join('; '),
    workerCpuMsPer1k: per1k(cpu1 - cpu0),
    workerCpuMsPerMessage: perMessage(cpu1 - cpu0),
    eventPathWorkerCpuMsPerMessage: eventPathCpu0 === null || eventPathCpu1 === null ? null : perMessage(eventPathCpu1 - eventPathCpu0),
    workerWakeupsPerSecond: Math.round((wakeups1 - wakeups0) / Math.max(cpuSeconds, 0.001)),
    workerCpuMs: Math.round(cpu1 - cpu0),
    cpuSeconds: round1(cpuSeconds),
    benchCpuMsPer1k: per1k((bench1.user + bench1.system) / 1000),
    boxCpuBusy: boxBusyShare(box0, box1),
    boxCpuMsPerMessage,
    boxCeilingPerSecond: ceiling(boxCpuMsPerMessage.total),
    boxCeilingWithoutWorkersPerSecond: ceiling(boxCpuMsPerMessage.total - boxCpuMsPerMessage.workers),
    workerRssMb,
    sqlPerMessage:
      sql0 && sql1
        ? (Object.fromEntries(Object.entries(sql1).map(([k, v]) => [k, perMessage(v - sql0[k as keyof SqlCounters])])) as unknown as SqlCounters)
        : null,
    breakdown:
      metrics0 && metrics1
        ? stepBreakdown(delta(metrics0, metrics1), {
            applicationId: put.applicationId,
            topicPrefix: put.topicPrefix,
            persistedMessages,
            seconds: cpuSeconds,
            workerCpuMs: cpu1 - cpu0,
          })
        : null,
  };
}
