/**
 * The benchmark's result document (written as JSON) and its readable table: every target of
 * docs/design.md, "Targets", beside the figure measured in the same run, with `met`, `MISSED` or
 * `not measured`.
 */
import type { CeilingResult, ClientCpu } from './ceilings.ts';
import { aboveIdle, clientFloorMsPerMessage, marginalWorkerCpu, type AtRate } from './worker-cpu.ts';
import type { LatencyFigures, StormFigures } from './analysis.ts';
import type { StepResult } from './steps.ts';
import type { MemoryBenchResult } from './memory-bench.ts';
import type { ShardBenchResult } from './shards-bench.ts';
import type { CampaignBenchResult } from './campaign-expansion.ts';
import type { CampaignFigures } from './campaign-phase.ts';
import { formatByApp, formatSegments, type SegmentFigure } from './worker-metrics.ts';
import type { HopLatency } from './hop-latency.ts';

export interface BenchResult {
  readonly startedAt: string;
  readonly finishedAt: string;
  readonly command: string;
  readonly environment: {
    readonly cpus: number;
    readonly cpuModel: string;
    readonly node: string;
    readonly kafkajs: string;
    readonly brokers: string[];
    readonly coLocated: string;
    readonly gitSha: string | null;
    /** 1, 5 and 15 min load averages: other work on the machine skews every figure. */
    readonly loadAverageAtStart: number[];
    readonly loadAverageAtEnd: number[];
  };
  readonly config: {
    readonly quick: boolean;
    readonly instances: number;
    /** The stages off the event path ran in a niced worker process of their own (not with `--all-stages`). */
    readonly backgroundWorker: boolean;
    readonly partitions: number;
    readonly commitIntervalMs: number;
    readonly mergeWindowMs: number;
    readonly users: number;
    readonly stepSeconds: number;
    readonly rates: number[];
    readonly seed: number;
    readonly workerEnv: Record<string, string>;
  };
  readonly ceilings: CeilingResult | null;
  /** Fan-out throughput with MySQL on 1 and on 4 uid shards (bench/shards-bench.ts); null with --no-shards. */
  readonly shards?: ShardBenchResult | null;
  /** Campaign expansion throughput of one task (bench/campaign-expansion.ts); null with --expansion-uids 0. */
  readonly campaignExpansion?: CampaignBenchResult | null;
  readonly steps: StepResult[];
  /** Highest offered persisted-message rate a step sustained (min of offered and generated); 0 when none did. */
  readonly sustainedEventsPerSecond: number;
  /** The step the headline CPU figure comes from. */
  readonly sustainedStep: string | null;
  /** CPU the workers burn with no load, ms per second (all workers). */
  readonly idleWorkerCpuMsPerSecond: number;
  /** Their main threads' wake-ups with no load, per second (all workers). */
  readonly idleWorkerWakeupsPerSecond: number;
  /** Sustained rate ÷ the exactly-once identity chain's records/s (reference). */
  readonly pipelineToCeiling: number | null;
  /**
   * Sustained rate ÷ the raw kafkajs consume→produce records/s (the ratio of docs/design.md,
   * "Targets").
   */
  readonly pipelineToRawCeiling: number | null;
  /** The workers' figures at the sustained step; null when no step kept up. */
  readonly atSustainedRate: AtRate | null;
  readonly latency: (LatencyFigures & { readonly step: StepResult; readonly rate: number }) | null;
  /** Leading-push latency at a fixed 100 persisted msgs/s. */
  readonly latencyAt100: (LatencyFigures & { readonly step: StepResult; readonly rate: number }) | null;
  /** The same over the other vendors' pushes while one vendor answers late (the slow-vendor phase); null when skipped. */
  readonly slowVendorLatency?:
    (LatencyFigures & { readonly step: StepResult; readonly rate: number; readonly slowVendor: string; readonly slowMs: number }) | null;
  /** Merge-state memory and restore (only with --merge-windows; bench/memory-bench.ts). */
  readonly mergeState: MemoryBenchResult | null;
  readonly storm: (StormFigures & { readonly step: StepResult }) | null;
  /** IM latency alone and beside a campaign on the business lane, and the campaign's throughput (bench/campaign-phase.ts). */
  readonly campaign: CampaignFigures | null;
  readonly workers: Array<{ readonly pid: number; readonly peakRssMb: number; readonly rssMbAtEnd: number | null }>;
  readonly notes: string[];
}

/**
 * The Kafka part's latency floor (bench/hop-latency.ts) beside the pipeline's own "persisted → fan-out
 * received" at 100 msgs/s: the segment cannot be faster than the floor, so a p99 target on the whole
 * path below the floor's p99 plus a claim and a vendor call is out of reach on this box.
 */
function hopLatencyRow(floor: HopLatency, pipeline: SegmentFigure | undefined): Row {
  const ms = (x: number | null) => (x === null ? 'n/a' : `${x} ms`);
  const beside = pipeline ? `; the pipeline's persisted → fan-out received at 100 msgs/s: p50 ${ms(pipeline.p50Ms)}, p99 ${ms(pipeline.p99Ms)}` : '';
  return {
    what: 'floor: producer → 1 exactly-once hop → read_committed, 100/s',
    target: '(reference)',
    milestone: '',
    measured: `p50 ${ms(floor.p50Ms)}, p99 ${ms(floor.p99Ms)}, p99.9 ${ms(floor.p999Ms)} (n=${floor.records}, before the pipeline starts)${beside}`,
    verdict: '',
  };
}

function clientFloorRow(cpu: ClientCpu, at: AtRate | null): Row {
  const floor = clientFloorMsPerMessage(cpu, at);
  const perRecord = `produce ${cpu.produceUsPerRecord} µs, consume ${cpu.consumeUsPerRecord} µs, exactly-once hop ${cpu.exactlyOnceHopUsPerRecord} µs per record`;
  return {
    what: 'client floor: kafkajs CPU per persisted msg',
    target: '(reference)',
    milestone: '',
    measured:
      floor === null || !at
        ? `n/a (${perRecord})`
        : `${floor} ms = ${at.recordsProducedPerMessage} produced × produce + ${at.recordsFetchedPerMessage} fetched × consume (${perRecord})`,
    verdict: '',
  };
}

/**
 * `met`: the target (docs/design.md, "Targets") is met; `milestone`: only the next milestone is;
 * `MISSED`: not even that.
 */
type Verdict = 'met' | 'milestone' | 'MISSED' | 'not measured';

interface Row {
  readonly what: string;
  readonly target: string;
  /** The next milestone (docs/design.md, "Targets"); the target again where they agree. */
  readonly milestone: string;
  readonly measured: string;
  readonly verdict: Verdict | '';
}

const verdict = (ok: boolean | null): Verdict => (ok === null ? 'not measured' : ok ? 'met' : 'MISSED');
/** Against a long-term target and a milestone: met, milestone (only), MISSED. */
const verdict2 = (target: boolean | null, milestone: boolean | null): Verdict =>
  target === null || milestone === null ? 'not measured' : target ? 'met' : milestone ? 'milestone' : 'MISSED';
const pct = (share: number | null | undefined) => (share === null || share === undefined ? 'n/a' : `${Math.round(share * 1000) / 10} %`);
const ms = (x: number | null | undefined) => (x === null || x === undefined ? 'n/a' : `${Math.round(x)} ms`);

/**
 * The 1M-window targets. Below 1M windows a figure already over the target is a miss (memory and
 * restore time only grow with windows); one under it says nothing about 1M: `not measured`.
 */
function mergeStateRows(m: MemoryBenchResult | null): Row[] {
  if (!m) {
    return [
      {
        what: 'worker RSS at 1M open merge windows',
        target: '≤ 512 MB',
        milestone: 'same',
        measured: 'not measured (run with --merge-windows 1000000)',
        verdict: 'not measured',
      },
      {
        what: 'restore after restart, 1M windows',
        target: '≤ 10 s',
        milestone: 'same',
        measured: 'not measured (run with --merge-windows 1000000)',
        verdict: 'not measured',
      },
    ];
  }
  const full = m.windows >= 1_000_000;
  const judge = (value: number | undefined, limit: number): Verdict =>
    value === undefined ? 'not measured' : value > limit ? 'MISSED' : full ? 'met' : 'not measured';
  const at = `${m.windows.toLocaleString('en-US')} open windows`;
  const restoreS = m.restoreMs === undefined ? undefined : Math.round(m.restoreMs / 100) / 10;
  // A restore that replayed fewer records than the fill wrote restored only part of the windows.
  const partial = m.restoredRecords !== undefined && m.changelogRecords !== undefined && m.restoredRecords < m.changelogRecords;
  const replayed = `${m.restoredRecords ?? '?'} of ${m.changelogRecords ?? '?'} changelog records${partial ? ': a partial restore' : ''}`;
  return [
    {
      what: 'worker RSS at 1M open merge windows',
      target: '≤ 512 MB',
      milestone: 'same',
      measured: `${m.rssMb} MB RSS, ${m.heapMb} MB heap after GC at ${at} (baseline ${m.baselineRssMb} MB)`,
      verdict: judge(m.rssMb, 512),
    },
    {
      what: 'restore after restart, 1M windows',
      target: '≤ 10 s',
      milestone: 'same',
      measured: restoreS === undefined ? 'not measured' : `${restoreS} s at ${at} (${replayed}; RSS after ${m.restoredRssMb ?? '?'} MB)`,
      verdict: partial ? 'not measured' : judge(restoreS, 10),
    },
  ];
}

export function tableRows(r: BenchResult): Row[] {
  const sustainedStep = r.steps.find((s) => s.label === r.sustainedStep);
  const maxPeak = r.workers.length > 0 ? Math.max(...r.workers.map((w) => w.peakRssMb)) : null;
  const at = r.atSustainedRate;
  const b = sustainedStep?.breakdown ?? null;
  const atStep = sustainedStep ? ` (step ${sustainedStep.label})` : '';
  const further = marginalWorkerCpu(r.steps);
  const marginal = further.length > 0 ? `; each further message ${further.map((m) => `${m.msPerMessage} ms (${m.from}→${m.to}/s)`).join(', ')}` : '';
  const latencyRow = (what: string, l: BenchResult['latency'], target: string, milestone: string, limit: number): Row => ({
    what,
    target,
    milestone,
    measured: l ? `p50 ${ms(l.p50Ms)}, p99 ${ms(l.p99Ms)}, p99.9 ${ms(l.p999Ms)} (n=${l.samples}, ${l.rate} msgs/s)` : 'n/a',
    verdict: verdict(l && l.p99Ms !== null ? l.p99Ms <= limit : null),
  });
  const produced = b
    ? Object.entries(b.producedPerMessageByApp)
        .map(([app, v]) => `${app} ${v.output}+${v.changelog}`)
        .join(', ')
    : '';
  const rows: Row[] = [
    {
      what: 'sustained end-to-end ingest, exactly-once',
      target: '≥ 10,000 persisted msgs/s',
      milestone: '≥ 3,000',
      measured: `${r.sustainedEventsPerSecond.toLocaleString('en-US')} msgs/s${r.sustainedStep ? ` (step ${r.sustainedStep})` : ' (no step kept up)'}`,
      verdict: r.steps.length === 0 ? 'not measured' : verdict2(r.sustainedEventsPerSecond >= 10_000, r.sustainedEventsPerSecond >= 3_000),
    },
    {
      what: 'pipeline ÷ raw kafkajs consume→produce ceiling',
      target: '≥ 0.15',
      milestone: '≥ 0.05',
      measured:
        r.pipelineToRawCeiling === null
          ? 'n/a'
          : `${r.pipelineToRawCeiling} (${r.sustainedEventsPerSecond} ÷ ${r.ceilings?.rawConsumeProduce.recordsPerSecond} records/s)`,
      verdict: r.pipelineToRawCeiling === null ? 'not measured' : verdict2(r.pipelineToRawCeiling >= 0.15, r.pipelineToRawCeiling >= 0.05),
    },
    {
      what: 'Kafka records produced per persisted msg',
      target: '≤ 4 (incl. changelogs)',
      milestone: '≤ 5',
      measured: b
        ? `${b.recordsProducedPerMessage} = output ${b.outputRecordsPerMessage} + changelog ${b.changelogRecordsPerMessage}${atStep}; by group (output+changelog): ${produced}`
        : 'n/a',
      verdict: b ? verdict2(b.recordsProducedPerMessage <= 4, b.recordsProducedPerMessage <= 5) : 'not measured',
    },
    {
      what: 'Kafka records fetched per persisted msg',
      target: '(reported)',
      milestone: '',
      measured: b ? `${b.recordsFetchedPerMessage} (processed ${b.recordsProcessedPerMessage})${atStep}` : 'n/a',
      verdict: '',
    },
    {
      what: 'commits (transactions) per second',
      target: '(reported)',
      milestone: '',
      measured: b ? `${b.commitsPerSecond}/s: ${formatByApp(b.commitsPerSecondByApp)}${atStep}` : 'n/a',
      verdict: '',
    },
    latencyRow('latency persist → vendor, offline, leading, ½ max load', r.latency, 'p99 ≤ 300 ms', 'p99 ≤ 300 ms', 300),
    latencyRow('latency persist → vendor, offline, leading, 100 msgs/s', r.latencyAt100, '(none)', 'p99 ≤ 150 ms', 150),
    latencyRow(
      `the same to the other vendors while ${r.slowVendorLatency?.slowVendor ?? 'one vendor'} answers ${r.slowVendorLatency?.slowMs ?? '…'} ms late`,
      r.slowVendorLatency ?? null,
      '(none)',
      'p99 ≤ 150 ms',
      150,
    ),
    {
      what: 'group storm: vendor submissions ÷ triggers',
      target: '≤ 0.30',
      milestone: 'same',
      measured: r.storm
        ? `${r.storm.submissionsPerTrigger} (${r.storm.submissions}/${r.storm.triggers}; per device-trigger ${r.storm.submissionsPerDeviceTrigger})`
        : 'n/a',
      verdict: verdict(r.storm ? r.storm.submissionsPerTrigger <= 0.3 : null),
    },
    {
      what: 'group storm: final unread count never lost',
      target: '0 stale or missing',
      milestone: 'same',
      measured: r.storm
        ? `${r.storm.pairsFinalLatest}/${r.storm.pairs} (device, conv) end on latest seq; stale ${r.storm.pairsFinalStale}, no push ${r.storm.pairsWithoutPush}`
        : 'n/a',
      verdict: verdict(r.storm ? r.storm.pairsFinalStale === 0 && r.storm.pairsWithoutPush === 0 : null),
    },
    ...campaignRows(r.campaign),
    {
      what: 'worker CPU per persisted msg, sustained rate',
      target: '(none)',
      milestone: '≤ 0.3 ms',
      measured: at
        ? `${at.workerCpuMsPerMessage} ms gross${at.eventPathWorkerCpuMsPerMessage === null ? '' : ` (event path ${at.eventPathWorkerCpuMsPerMessage})`}, ${at.workerCpuMsPerMessageAboveIdle ?? 'n/a'} ms above idle (step ${at.step}; idle workers burn ${r.idleWorkerCpuMsPerSecond} ms/s, ${r.idleWorkerWakeupsPerSecond} wake-ups/s)${marginal}`
        : 'n/a',
      verdict: verdict(at ? at.workerCpuMsPerMessage <= 0.3 : null),
    },
    {
      what: 'GC share of worker CPU, sustained rate',
      target: '(reported)',
      milestone: '',
      measured: b
        ? `${pct(b.gcShareOfWorkerCpu)}: ${b.gcSeconds} s of GC pauses in ${Math.round(sustainedStep!.workerCpuMs) / 1000} s of worker CPU${atStep}`
        : 'n/a',
      verdict: '',
    },
    {
      what: 'machine CPU per persisted msg, sustained rate',
      target: '(reported: what binds)',
      milestone: '',
      measured: sustainedStep?.boxCpuMsPerMessage ? `${describeBoxCpu(sustainedStep)}${atStep}` : 'n/a',
      verdict: '',
    },
    {
      what: 'MySQL statements per persisted msg',
      target: '(reported)',
      milestone: '',
      measured: sustainedStep?.sqlPerMessage ? `${describeSql(sustainedStep)}${atStep}` : 'n/a',
      verdict: '',
    },
    {
      what: 'worker RSS (peak over the run)',
      target: '(≤ 512 MB at 1M open windows)',
      milestone: '',
      measured: maxPeak === null ? 'n/a' : `${maxPeak} MB max over ${r.workers.length} worker(s) at this run's load`,
      verdict: '',
    },
    ...mergeStateRows(r.mergeState),
  ];
  if (r.ceilings) {
    rows.push({
      what: 'ceiling: raw kafkajs consume→produce',
      target: '(reference)',
      milestone: '',
      measured: `${r.ceilings.rawConsumeProduce.recordsPerSecond.toLocaleString('en-US')} records/s`,
      verdict: '',
    });
    rows.push({
      what: `ceiling: ${r.ceilings.exactlyOnceChain.hops} exactly-once identity hops`,
      target: '(reference)',
      milestone: '',
      measured: `${r.ceilings.exactlyOnceChain.recordsPerSecond.toLocaleString('en-US')} records/s; pipeline ÷ chain ${r.pipelineToCeiling ?? 'n/a'}`,
      verdict: '',
    });
    rows.push(clientFloorRow(r.ceilings.cpu, at));
    rows.push(hopLatencyRow(r.ceilings.hopLatency, r.latencyAt100?.step.breakdown?.segments.persistedToReceived));
  }
  if (r.shards) {
    rows.push({
      what: 'fan-out throughput, MySQL shards 1 vs 4',
      target: '(reported)',
      milestone: '',
      measured:
        r.shards.figures.map((f) => `${f.shards} shard${f.shards === 1 ? '' : 's'}: ${f.dispatchesPerSecond.toLocaleString('en-US')}/s`).join(' | ') +
        ` (dispatches/s, mean of ${r.shards.figures[0]?.runs.length ?? 0} runs of ${r.shards.dispatches})`,
      verdict: '',
    });
  }
  if (r.campaignExpansion) {
    const c = r.campaignExpansion;
    rows.push({
      what: 'campaign expansion (one campaign, one task)',
      target: '(reported)',
      milestone: '',
      measured: `${c.requestsPerSecond.toLocaleString('en-US')} requests/s (${c.uids.toLocaleString('en-US')} uids in ${c.seconds} s), ${c.cpuMsPerThousand} ms CPU per 1 000`,
      verdict: '',
    });
  }
  return rows;
}

/**
 * The machine's CPU per persisted message by process, and the rate at which it would fill every core.
 * Steps from result files written before it was measured have none.
 */
export function describeBoxCpu(s: StepResult): string {
  const c = s.boxCpuMsPerMessage;
  if (!c) return 'machine CPU not measured';
  return (
    `machine CPU ${c.total} ms/msg (workers ${c.workers}, broker ${c.broker}, MariaDB ${c.mariadb}, ClickHouse ${c.clickhouse}, ` +
    `registry ${c.registry}, bench: generator and emulators ${c.bench}, rest of the machine ${c.other}) → every core busy at ≈ ${s.boxCeilingPerSecond} msgs/s, ` +
    `at ≈ ${s.boxCeilingWithoutWorkersPerSecond} msgs/s without the workers' share`
  );
}

/** MySQL statements per persisted message of a step (server-wide counters). */
export function describeSql(s: StepResult): string {
  const q = s.sqlPerMessage;
  if (!q) return 'MySQL statements not measured';
  return `MySQL statements/msg ${q.statements} (insert ${q.inserts}, update ${q.updates}, delete ${q.deletes}, select ${q.selects}), InnoDB fsyncs/msg ${q.fsyncs}`;
}

/** One line of a step's worker breakdown (progress log and the steps list). */
export function describeStep(s: StepResult): string {
  const b = s.breakdown;
  const eventPath = s.eventPathWorkerCpuMsPerMessage;
  const cpu = `worker CPU ${s.workerCpuMsPerMessage} ms/msg${eventPath === null ? '' : ` (event path ${eventPath}, off it ${Math.round((s.workerCpuMsPerMessage - eventPath) * 1000) / 1000})`}`;
  if (!b) return `${cpu}; no worker metrics`;
  const commits = formatByApp(b.commitsPerSecondByApp);
  const requests = formatByApp(b.kafkaRequestsPerMessageByApi ?? {});
  const requestsByApp = formatByApp(b.kafkaRequestsPerMessageByApp ?? {});
  const topics = Object.entries(b.producedPerMessageByTopic ?? {})
    .filter(([, n]) => n >= 0.01)
    .map(([topic, n]) => `${topic} ${n}`)
    .join(', ');
  // Per second as well as per message: a fetch or a commit costs about the same whatever it carries.
  const perSecond = (perMessage: number) => Math.round(perMessage * s.consumedRate);
  const requestsPerSecond = Object.entries(b.kafkaRequestsPerMessageByApi ?? {})
    .map(([api, n]) => `${api} ${perSecond(n)}`)
    .join(', ');
  return `records/msg produced ${b.recordsProducedPerMessage} (output ${b.outputRecordsPerMessage}, changelog ${b.changelogRecordsPerMessage}; by topic: ${topics}), fetched ${b.recordsFetchedPerMessage}; Kafka requests/msg ${b.kafkaRequestsPerMessage} (${requests}; by application ${requestsByApp}); Kafka requests/s ${perSecond(b.kafkaRequestsPerMessage)} (${requestsPerSecond}); commits/s ${b.commitsPerSecond} (${commits}); ${cpu}, GC ${pct(b.gcShareOfWorkerCpu)}`;
}

function pad(cells: string[], widths: number[]): string {
  return cells
    .map((c, i) => c.padEnd(widths[i]!))
    .join('  ')
    .trimEnd();
}

export function formatTable(r: BenchResult): string {
  const rows = tableRows(r);
  const header = ['what', 'target (docs/design.md, "Targets")', 'next milestone', 'measured', 'verdict'];
  const cells = rows.map((row) => [row.what, row.target, row.milestone, row.measured, row.verdict]);
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i]!.length)));
  const lines = [pad(header, widths), widths.map((w) => '-'.repeat(w)).join('  '), ...cells.map((c) => pad(c, widths))];
  const steps = r.steps.flatMap((s) => [
    `  ${s.label.padEnd(14)} offered ${String(s.offeredRate).padStart(6)}/s  generated ${String(s.generatorRate).padStart(6)}/s  consumed ${String(s.consumedRate).padStart(6)}/s  ` +
      `input lag ${String(s.inputLagAtEnd).padStart(6)}  slope ${String(s.pathLagSlope).padStart(6)}/s  drain ${s.drainSeconds ?? '—'} s  cpu ${s.workerCpuMsPer1k} ms/1k (${aboveIdle(s, r.idleWorkerCpuMsPerSecond)} above idle)  wake-ups ${s.workerWakeupsPerSecond}/s  box ${Math.round(s.boxCpuBusy * 100)}%  ${s.sustained ? 'kept up' : `NOT: ${s.verdict}`}`,
    `  ${''.padEnd(14)} ${describeStep(s)}`,
    `  ${''.padEnd(14)} ${describeBoxCpu(s)}`,
    `  ${''.padEnd(14)} ${describeSql(s)}`,
  ]);
  const segments = [r.latency, r.latencyAt100].flatMap((l) =>
    l
      ? [
          `persist → vendor segments at ${l.rate} msgs/s (leading pushes; emulator-measured p50 ${ms(l.p50Ms)}, p99 ${ms(l.p99Ms)}):`,
          ...(l.step.breakdown ? formatSegments(l.step.breakdown.segments, '  ') : ['  (no worker metrics)']),
        ]
      : [],
  );
  return [
    ...lines,
    'verdict: met = the target (docs/design.md, "Targets") is met; milestone = only the next milestone is; MISSED = the milestone is not',
    '',
    'load steps (open loop, persisted messages/s):',
    ...steps,
    '',
    ...segments,
    '',
    `machine: ${r.environment.cpus} × ${r.environment.cpuModel}; node ${r.environment.node}; kafkajs ${r.environment.kafkajs}; broker ${r.environment.brokers.join(',')} (${r.environment.coLocated})`,
    `load average at start ${r.environment.loadAverageAtStart.join(' ')}, at end ${r.environment.loadAverageAtEnd.join(' ')} (other work on the machine skews every figure)`,
    ...r.notes.map((n) => `note: ${n}`),
  ].join('\n');
}

/** The campaign phase's rows: IM p99 beside the campaign against IM alone, and the campaign's rates. */
function campaignRows(c: CampaignFigures | null): Row[] {
  const p99 = (l: LatencyFigures) => `${l.p99Ms ?? 'n/a'} ms (${l.samples})`;
  return [
    {
      what: `IM p99 beside a ${c?.users ?? 'n/a'}-user campaign vs alone, ${c?.imRate ?? 'n/a'} msgs/s`,
      target: '≤ +20 %',
      milestone: 'same',
      measured: c ? `${p99(c.imWithCampaign)} vs ${p99(c.imAlone)} / ${p99(c.imAloneAfter)} alone before / after: ${c.imP99IncreasePct ?? 'n/a'} %` : 'n/a',
      verdict: verdict(c && c.imP99IncreasePct !== null ? c.imP99IncreasePct <= 20 : null),
    },
    {
      what: 'campaign: send rate within its rate limit; every user once',
      target: `≤ ${c?.senderRatePerSecond ?? 'n/a'}/s, all reached`,
      milestone: 'same',
      measured: c
        ? `${c.sendPerSecond}/s (${c.besideSendPerSecond ?? 'n/a'}/s beside IM; ${c.reached}/${c.users} users in ${c.seconds} s, ${c.repeated} repeated); expanded from a uid file at ≤ ${c.expansionRatePerSecond}/s`
        : 'n/a',
      verdict: verdict(c ? c.withinRateLimit && c.reached === c.users : null),
    },
  ];
}
