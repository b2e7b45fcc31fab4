/**
 * The fault-injection run (docs/design.md, "Reliability and security", `npm run chaos`): the
 * scripted scenario of chaos/scenario.ts through N worker processes while the run SIGKILLs workers
 * at random points, cuts MySQL and ClickHouse off, optionally restarts the Kafka broker, scripts
 * vendor 429 / 5xx / GOAWAY / expired-auth / slow-answer storms on the emulators, and produces
 * malformed inputs. The verdict: lost, duplicated (and whether duplicates shared a collapse id),
 * DLQ counts by reason, whether the arrival rate stayed exact, whether any hot retry loop happened,
 * whether any worker crashed.
 */
import { random } from '../demo/workload.ts';
import type { Fault } from '../emulators/index.ts';
import type { Vendor } from '../processors/fan-out/vendor-port.ts';
import { startRun, type PipelineRun, type RunVerdict } from './harness.ts';
import { sleep } from './drain.ts';
import { errorMessage } from '../common/errors.ts';
import { malformedProducer, stopWorker, type MalformedKind } from './faults.ts';
import { restartKafka } from '../stack/kafka.ts';
import {
  brokerLoss,
  checkReplication,
  clusterRecovered,
  reassignment,
  type BrokerLossFigures,
  type ClusterFigures,
  type ReassignmentFigures,
} from './cluster-faults.ts';
import { checkStorms, type StormCheck, type StormWindow } from './retries.ts';
import { recordings } from './verify.ts';
import { inputKey, pushKey } from './scenario.ts';
import { checkTakeovers, taskRowsOf, type Kill, type TakeoverCheck } from './takeover.ts';

export interface ChaosOptions {
  /** Worker processes. Default 2. */
  readonly instances?: number;
  readonly users: number;
  readonly messagesPerUser?: number;
  /** How long traffic (and the faults) run, ms. */
  readonly durationMs: number;
  /** SIGKILLs of a random worker at random points (each restarted 1–4 s later). */
  readonly kills: number;
  /** Malformed inputs produced in ten bursts over the run. */
  readonly malformed: number;
  /** MySQL cut off (through the run's forwarder) for this long; 0 = never. */
  readonly mysqlOutageMs: number;
  /** ClickHouse cut off (through the run's forwarder) for this long; 0 = never. */
  readonly clickhouseOutageMs: number;
  /** Restart the stack's Kafka broker once (never in the shared test suite). Default false. */
  readonly brokerRestart?: boolean;
  /**
   * 3: the run is on the 3-broker cluster (the caller points PUSH_KAFKA_BROKERS at it, see chaos/run.ts)
   * and its broker faults are chaos/cluster-faults.ts': a broker SIGKILLed at 25 % of the run and
   * started again `brokerDownMs` later, then every partition reassigned at 60 %. Default 1.
   */
  readonly brokers?: 1 | 3;
  /** How long the killed broker stays down, ms. Default 20 000. */
  readonly brokerDownMs?: number;
  /** Vendor storms. Default true. */
  readonly storms?: boolean;
  readonly seed?: number;
  /** How long to wait for ClickHouse to match the emulators after the drain, ms. Default 180 000. */
  readonly arrivalWaitMs?: number;
  readonly verbose?: boolean;
  /** Called once the environment runs, with a function that stops its workers and emulators (for signal handlers). */
  readonly onStarted?: (stop: () => Promise<void>) => void;
}

export interface FaultEvent {
  /** ms after traffic started. */
  readonly atMs: number;
  readonly kind: string;
  readonly detail: string;
}

export interface ChaosReport {
  readonly run: string;
  readonly startedAt: string;
  readonly options: Omit<ChaosOptions, 'verbose' | 'onStarted'>;
  readonly wallSeconds: number;
  readonly inputs: { messages: number; timelineRecords: number; malformed: Record<MalformedKind, number> };
  readonly faults: FaultEvent[];
  readonly verdict: RunVerdict;
  /** Expected pushes not delivered whose input ended FAILED (bounded retries exhausted: accounted, replayable). */
  readonly failedNotLost: number;
  /** DLQ records whose source is the persisted-message topic, distinct inputs. */
  readonly malformedInDlq: number;
  readonly storms: StormCheck[];
  /** What the takeovers after the SIGKILLs sent again, and what had no recorded answer at the kills (chaos/takeover.ts). */
  readonly takeovers: TakeoverCheck;
  /** Worker exits the run did not cause. */
  readonly crashes: Array<{ worker: number; code: number | null; signal: string | null; atMs: number }>;
  /** On the cluster: the broker loss and reassignment figures and the replication check. */
  readonly cluster?: ClusterFigures;
  readonly summary: {
    readonly nothingLost: boolean;
    readonly noVisibleDuplicate: boolean;
    readonly everyInputOneClass: boolean;
    readonly arrivalExact: boolean;
    readonly noHotRetryLoop: boolean;
    readonly malformedAllInDlq: boolean;
    /** The takeovers re-sent no push whose answer was recorded: re-sends ≤ calls without a recorded answer at the kills. */
    readonly takeoverResendsBounded: boolean;
    /** No worker exited on its own and no stage stalled with partitions left behind. */
    readonly noCrash: boolean;
    /** On the cluster: every run topic replicated as configured, and every recovery milestone reached (chaos/cluster-faults.ts). */
    readonly clusterRecovered?: boolean;
  };
}

// Storm times are fractions of the run; none overlaps the MySQL outage (0.35 to 0.35 + its length),
// during which the fan-out cannot claim tasks and sends nothing.
const STORMS: ReadonlyArray<{ at: number; vendor: Vendor; fault: Fault | 'slow'; times?: number; forMs: number; retryAfterMs?: number }> = [
  { at: 0.1, vendor: 'apns', fault: { kind: 'rate-limit', retryAfterS: 1 }, times: 20, forMs: 6000, retryAfterMs: 1000 },
  { at: 0.2, vendor: 'fcm', fault: { kind: 'server-error', retryAfterS: 1 }, times: 20, forMs: 6000, retryAfterMs: 1000 },
  { at: 0.3, vendor: 'apns', fault: { kind: 'goaway' }, times: 10, forMs: 4000 },
  { at: 0.6, vendor: 'hms', fault: { kind: 'rate-limit', retryAfterS: 2 }, times: 10, forMs: 6000, retryAfterMs: 2000 },
  { at: 0.65, vendor: 'vivo', fault: { kind: 'expired-auth' }, times: 2, forMs: 6000, retryAfterMs: 0 },
  { at: 0.7, vendor: 'xiaomi', fault: 'slow', forMs: 5000 },
  { at: 0.75, vendor: 'oppo', fault: { kind: 'server-error' }, times: 10, forMs: 4000 },
];

export async function runChaos(options: ChaosOptions): Promise<ChaosReport> {
  const started = Date.now();
  const say = (line: string) => options.verbose && console.log(line);
  const instances = options.instances ?? 2;
  const rnd = random(options.seed ?? 7);
  const run: PipelineRun = await startRun({
    instances,
    partitions: 6,
    users: options.users,
    durationMs: options.durationMs,
    forwardStores: true,
    verbose: options.verbose === true,
    ...(options.messagesPerUser === undefined ? {} : { messagesPerUser: options.messagesPerUser }),
    ...(options.seed === undefined ? {} : { seed: options.seed }),
  });
  const { env } = run;
  let closing = false;
  options.onStarted?.(async () => {
    closing = true;
    await run.close();
  });
  const faults: FaultEvent[] = [];
  const crashes: ChaosReport['crashes'] = [];
  const kills: Kill[] = [];
  const storms: StormWindow[] = [];
  const malformed = Object.fromEntries(['garbage', 'unknown-schema-id', 'wrong-record', 'truncated', 'bad-values'].map((k) => [k, 0])) as Record<
    MalformedKind,
    number
  >;
  let t0 = Date.now();
  const note = (kind: string, detail: string) => {
    faults.push({ atMs: Date.now() - t0, kind, detail });
    say(`[chaos] +${((Date.now() - t0) / 1000).toFixed(1)} s ${kind}: ${detail}`);
  };
  // Exits the run did not cause are crashes: counted, and the worker restarted.
  const stopping = new Set<number>();
  const watch = (index: number) => {
    const worker = env.workers.find((w) => w.index === index)!;
    worker.process.once('exit', (code, signal) => {
      if (closing || stopping.has(index)) return;
      crashes.push({ worker: index, code, signal, atMs: Date.now() - t0 });
      note('crash', `worker ${index} exited (code ${code}, signal ${signal}); restarting it`);
      // Not awaited (an exit listener); a restart that fails is noted, and the crash is counted already.
      void env.startWorker(index).then(
        () => watch(index),
        (error: unknown) => note('restart-failed', `worker ${index} did not start again: ${errorMessage(error)}`),
      );
    });
  };
  for (const w of env.workers) watch(w.index);
  for (const exit of run.startupExits) crashes.push({ worker: exit.worker, code: exit.code, signal: null, atMs: -1 });

  const at = (fraction: number) => sleep(Math.max(0, t0 + fraction * options.durationMs - Date.now()));
  const actions: Array<Promise<void>> = [];
  try {
    const bad = await malformedProducer(env.topicPrefix, env.appId);
    t0 = Date.now();
    const playing = run.play();

    // SIGKILL of a random worker at random points; each comes back 1–4 s later.
    const killTimes = Array.from({ length: options.kills }, () => 0.05 + rnd() * 0.85).sort((a, b) => a - b);
    actions.push(
      (async () => {
        for (const fraction of killTimes) {
          await at(fraction);
          const worker = env.workers[Math.floor(rnd() * env.workers.length)]!;
          const index = worker.index;
          stopping.add(index);
          const killedAtMs = Date.now();
          await stopWorker(env, index, 'SIGKILL');
          note('sigkill', `worker ${index}`);
          // What its tasks' rows kept when it died: the answers a takeover must not ask for again.
          kills.push({ pid: worker.process.pid!, atMs: killedAtMs, rows: await taskRowsOf(env.run) });
          await sleep(1000 + rnd() * 3000);
          await env.startWorker(index);
          stopping.delete(index);
          watch(index);
          note('restart', `worker ${index}`);
        }
      })(),
    );

    if (options.storms !== false) {
      for (const storm of STORMS) {
        actions.push(
          (async () => {
            await at(storm.at);
            const emulator = env.emulators[storm.vendor];
            const fromMs = Date.now();
            if (storm.fault === 'slow') emulator.latencyMs = 800;
            else emulator.script(storm.fault, { times: storm.times ?? Infinity });
            const label = storm.fault === 'slow' ? 'slow answers (800 ms)' : `${storm.fault.kind}${storm.times ? ` ×${storm.times}` : ''}`;
            note('vendor-storm', `${storm.vendor} ${label}`);
            await sleep(storm.forMs);
            if (storm.fault === 'slow') emulator.latencyMs = 0;
            else emulator.clearFaults();
            storms.push({
              vendor: storm.vendor,
              fault: label,
              fromMs,
              toMs: Date.now(),
              ...(storm.retryAfterMs === undefined ? {} : { retryAfterMs: storm.retryAfterMs }),
            });
            note('vendor-storm-end', storm.vendor);
          })(),
        );
      }
    }

    const outage = (fraction: number, name: 'mysql' | 'clickhouse', ms: number) =>
      (async () => {
        if (ms <= 0) return;
        await at(fraction);
        await run.stores![name].cut();
        note(`${name}-down`, `connections cut for ${ms / 1000} s`);
        await sleep(ms);
        await run.stores![name].restore();
        note(`${name}-up`, 'reachable again');
      })();
    actions.push(outage(0.35, 'mysql', options.mysqlOutageMs));
    actions.push(outage(0.45, 'clickhouse', options.clickhouseOutageMs));

    const cluster: { brokerLoss?: BrokerLossFigures; reassignment?: ReassignmentFigures; errors: string[] } = { errors: [] };
    if (options.brokers === 3) {
      actions.push(
        (async () => {
          try {
            await at(0.25);
            cluster.brokerLoss = await brokerLoss(env.topicPrefix, env.applicationId, options.brokerDownMs ?? 20_000, note);
            await at(0.6);
            cluster.reassignment = await reassignment(env.topicPrefix, env.applicationId, note);
          } catch (error) {
            cluster.errors.push(errorMessage(error));
            note('cluster-fault-failed', errorMessage(error));
          }
        })(),
      );
    } else if (options.brokerRestart) {
      actions.push(
        (async () => {
          await at(0.8);
          note('broker-down', 'SIGTERM to the stack broker');
          const { downMs } = await restartKafka();
          note('broker-up', `back after ${(downMs / 1000).toFixed(1)} s`);
        })(),
      );
    }

    actions.push(
      (async () => {
        for (let burst = 0; burst < 10; burst++) {
          await at(0.05 + burst * 0.09);
          const counts = await bad.send(Math.floor(options.malformed / 10) + (burst < options.malformed % 10 ? 1 : 0));
          for (const [k, n] of Object.entries(counts)) malformed[k as MalformedKind] += n;
        }
        note('malformed', `${Object.values(malformed).reduce((a, b) => a + b, 0)} malformed inputs sent`);
        await bad.close();
      })(),
    );

    const sent = await playing;
    note('traffic-done', `${sent} timeline records sent`);
    await Promise.all(actions);
    say('[chaos] all faults over; waiting for the pipeline to drain ...');
    await run.drain(600_000);
    const verdict = await run.verdict(options.arrivalWaitMs ?? 180_000);
    const clusterFigures: ClusterFigures | undefined =
      options.brokers === 3 ? { ...cluster, replication: await checkReplication(env.topicPrefix, env.applicationId) } : undefined;
    const received = recordings(env.emulators, env.appId);
    const stormChecks = checkStorms(received, storms, new Set(run.scenario.deadTokens.map((d) => d.token)));
    const takeovers = checkTakeovers(received, kills, run.scenario);
    const persistedTopic = `${env.topicPrefix}im.message.persisted`;
    const malformedInDlq = new Set(run.deadLetters.records.filter((d) => d.sourceTopic === persistedTopic).map((d) => d.source)).size;
    const malformedTotal = Object.values(malformed).reduce((a, b) => a + b, 0);
    const lost = new Set(verdict.pushes.lost);
    const failedInputs = new Set(verdict.outcomes.mismatched.filter((m) => m.got === 'FAILED').map((m) => m.key));
    const failedNotLost = run.scenario.expectedPushes.filter(
      (p) => failedInputs.has(inputKey(p.uid, p.convId, p.seq, p.deviceId)) && lost.has(pushKey(p.vendor, p.token, p.convId, p.seq)),
    ).length;
    return {
      run: env.run,
      startedAt: new Date(started).toISOString(),
      options: { ...options, verbose: undefined, onStarted: undefined } as ChaosReport['options'],
      wallSeconds: Math.round((Date.now() - started) / 1000),
      inputs: { messages: run.scenario.messages, timelineRecords: run.scenario.timeline.length, malformed },
      faults,
      verdict,
      failedNotLost,
      malformedInDlq,
      storms: stormChecks,
      takeovers,
      crashes,
      ...(clusterFigures ? { cluster: clusterFigures } : {}),
      summary: {
        // A push that failed after bounded retries is accounted (FAILED, replayable), not lost.
        nothingLost: verdict.pushes.lost.length === failedNotLost && verdict.outcomes.missing.length === 0,
        noVisibleDuplicate: verdict.pushes.duplicates === verdict.pushes.duplicatesSharingCollapseId,
        everyInputOneClass: verdict.outcomes.conflicting.length === 0 && verdict.outcomes.missing.length === 0,
        arrivalExact: verdict.arrival.exact,
        noHotRetryLoop: stormChecks.every((s) => s.tooEarly === 0),
        malformedAllInDlq: malformedInDlq === malformedTotal,
        takeoverResendsBounded: takeovers.resentAlthoughRecorded === 0 && takeovers.resent <= takeovers.withoutRecordedAnswer,
        noCrash: crashes.length === 0 && verdict.stuckPartitions.length === 0,
        ...(clusterFigures ? { clusterRecovered: clusterRecovered(clusterFigures) } : {}),
      },
    };
  } finally {
    closing = true;
    await Promise.allSettled(actions);
    await run.stores?.mysql.restore();
    await run.stores?.clickhouse.restore();
    await run.close();
  }
}
