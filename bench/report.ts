/**
 * The benchmark's result document (written as JSON) and its readable table: every DESIGN §7 target
 * beside the figure measured in the same run, with `met`, `MISSED` or `not measured`.
 */
import type { CeilingResult } from './ceilings.ts';
import type { LatencyFigures, StormFigures } from './analysis.ts';
import type { StepResult } from './steps.ts';
import type { MemoryBenchResult } from './memory-bench.ts';

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
  readonly steps: StepResult[];
  /** Highest offered persisted-message rate a step sustained (min of offered and generated); 0 when none did. */
  readonly sustainedEventsPerSecond: number;
  /** The step the headline CPU figure comes from. */
  readonly sustainedStep: string | null;
  /** CPU the workers burn with no load, ms per second (all workers). */
  readonly idleWorkerCpuMsPerSecond: number;
  readonly pipelineToCeiling: number | null;
  readonly latency: (LatencyFigures & { readonly step: StepResult; readonly rate: number }) | null;
  /** Merge-state memory and restore (only with --merge-windows; bench/memory-bench.ts). */
  readonly mergeState: MemoryBenchResult | null;
  readonly storm: (StormFigures & { readonly step: StepResult }) | null;
  readonly workers: Array<{ readonly pid: number; readonly peakRssMb: number; readonly rssMbAtEnd: number | null }>;
  readonly notes: string[];
}

type Verdict = 'met' | 'MISSED' | 'not measured';

interface Row {
  readonly what: string;
  readonly target: string;
  readonly measured: string;
  readonly verdict: Verdict | '';
}

const verdict = (ok: boolean | null): Verdict => (ok === null ? 'not measured' : ok ? 'met' : 'MISSED');
const ms = (x: number | null | undefined) => (x === null || x === undefined ? 'n/a' : `${Math.round(x)} ms`);

/** Worker CPU per 1,000 persisted messages beyond what the idle workers burn over the same span. */
export function aboveIdle(step: StepResult, idleMsPerSecond: number): number | 'n/a' {
  const above = step.workerCpuMs - idleMsPerSecond * step.cpuSeconds;
  if (step.persistedMessages === 0 || above <= 0) return 'n/a';
  return Math.round((above / step.persistedMessages) * 1000 * 10) / 10;
}

/**
 * The 1M-window targets. Below 1M windows a figure already over the target is a miss (memory and
 * restore time only grow with windows); one under it says nothing about 1M: `not measured`.
 */
function mergeStateRows(m: MemoryBenchResult | null): Row[] {
  if (!m) {
    return [
      { what: 'worker RSS at 1M open merge windows', target: '≤ 512 MB', measured: 'not measured (run with --merge-windows 1000000)', verdict: 'not measured' },
      { what: 'restore after restart, 1M windows', target: '≤ 10 s', measured: 'not measured (run with --merge-windows 1000000)', verdict: 'not measured' },
    ];
  }
  const full = m.windows >= 1_000_000;
  const judge = (value: number | undefined, limit: number): Verdict => (value === undefined ? 'not measured' : value > limit ? 'MISSED' : full ? 'met' : 'not measured');
  const at = `${m.windows.toLocaleString('en-US')} open windows`;
  const restoreS = m.restoreMs === undefined ? undefined : Math.round(m.restoreMs / 100) / 10;
  return [
    { what: 'worker RSS at 1M open merge windows', target: '≤ 512 MB', measured: `${m.rssMb} MB RSS, ${m.heapMb} MB heap after GC at ${at} (baseline ${m.baselineRssMb} MB)`, verdict: judge(m.rssMb, 512) },
    {
      what: 'restore after restart, 1M windows', target: '≤ 10 s',
      measured: restoreS === undefined ? 'not measured' : `${restoreS} s at ${at} (${m.restoredRecords ?? '?'} records; RSS after ${m.restoredRssMb ?? '?'} MB)`,
      verdict: judge(restoreS, 10),
    },
  ];
}

export function tableRows(r: BenchResult): Row[] {
  const sustainedStep = r.steps.find((s) => s.label === r.sustainedStep);
  const maxPeak = r.workers.length > 0 ? Math.max(...r.workers.map((w) => w.peakRssMb)) : null;
  const rows: Row[] = [
    {
      what: 'sustained end-to-end ingest, exactly-once',
      target: '≥ 10,000 persisted msgs/s',
      measured: `${r.sustainedEventsPerSecond.toLocaleString('en-US')} msgs/s${r.sustainedStep ? ` (step ${r.sustainedStep})` : ' (no step kept up)'}`,
      verdict: verdict(r.steps.length === 0 ? null : r.sustainedEventsPerSecond >= 10_000),
    },
    {
      what: 'pipeline ÷ ceiling (EOS identity chain)',
      target: '≥ 0.6',
      measured: r.pipelineToCeiling === null ? 'n/a' : `${r.pipelineToCeiling} (${r.sustainedEventsPerSecond} ÷ ${r.ceilings?.exactlyOnceChain.recordsPerSecond} records/s, ${r.ceilings?.exactlyOnceChain.hops} hops)`,
      verdict: verdict(r.pipelineToCeiling === null ? null : r.pipelineToCeiling >= 0.6),
    },
    {
      what: 'latency persist → vendor, offline, leading, ½ max load',
      target: 'p99 ≤ 300 ms',
      measured: r.latency
        ? `p50 ${ms(r.latency.p50Ms)}, p99 ${ms(r.latency.p99Ms)}, p99.9 ${ms(r.latency.p999Ms)} (n=${r.latency.samples}, ${r.latency.rate} msgs/s)`
        : 'n/a',
      verdict: verdict(r.latency && r.latency.p99Ms !== null ? r.latency.p99Ms <= 300 : null),
    },
    {
      what: 'group storm: vendor submissions ÷ triggers',
      target: '≤ 0.30',
      measured: r.storm ? `${r.storm.submissionsPerTrigger} (${r.storm.submissions}/${r.storm.triggers}; per device-trigger ${r.storm.submissionsPerDeviceTrigger})` : 'n/a',
      verdict: verdict(r.storm ? r.storm.submissionsPerTrigger <= 0.3 : null),
    },
    {
      what: 'group storm: final unread count never lost',
      target: '0 stale or missing',
      measured: r.storm ? `${r.storm.pairsFinalLatest}/${r.storm.pairs} (device, conv) end on latest seq; stale ${r.storm.pairsFinalStale}, no push ${r.storm.pairsWithoutPush}` : 'n/a',
      verdict: verdict(r.storm ? r.storm.pairsFinalStale === 0 && r.storm.pairsWithoutPush === 0 : null),
    },
    {
      what: 'worker CPU per 1,000 persisted msgs',
      target: '(reported)',
      measured: sustainedStep
        ? `${sustainedStep.workerCpuMsPer1k} ms gross, ${aboveIdle(sustainedStep, r.idleWorkerCpuMsPerSecond)} ms above idle (step ${sustainedStep.label}; idle workers burn ${r.idleWorkerCpuMsPerSecond} ms/s)`
        : 'n/a',
      verdict: '',
    },
    {
      what: 'worker RSS (peak over the run)',
      target: '(≤ 512 MB at 1M open windows)',
      measured: maxPeak === null ? 'n/a' : `${maxPeak} MB max over ${r.workers.length} worker(s) at this run's load`,
      verdict: '',
    },
    ...mergeStateRows(r.mergeState),
  ];
  if (r.ceilings) {
    rows.push({ what: 'ceiling: raw kafkajs consume→produce', target: '(reference)', measured: `${r.ceilings.rawConsumeProduce.recordsPerSecond.toLocaleString('en-US')} records/s`, verdict: '' });
    rows.push({ what: `ceiling: ${r.ceilings.exactlyOnceChain.hops} exactly-once identity hops`, target: '(reference)', measured: `${r.ceilings.exactlyOnceChain.recordsPerSecond.toLocaleString('en-US')} records/s`, verdict: '' });
  }
  return rows;
}

function pad(cells: string[], widths: number[]): string {
  return cells.map((c, i) => c.padEnd(widths[i]!)).join('  ').trimEnd();
}

export function formatTable(r: BenchResult): string {
  const rows = tableRows(r);
  const header = ['what', 'DESIGN §7 target', 'measured', 'verdict'];
  const cells = rows.map((row) => [row.what, row.target, row.measured, row.verdict]);
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i]!.length)));
  const lines = [pad(header, widths), widths.map((w) => '-'.repeat(w)).join('  '), ...cells.map((c) => pad(c, widths))];
  const steps = r.steps.map(
    (s) =>
      `  ${s.label.padEnd(14)} offered ${String(s.offeredRate).padStart(6)}/s  generated ${String(s.generatorRate).padStart(6)}/s  consumed ${String(s.consumedRate).padStart(6)}/s  ` +
      `input lag ${String(s.inputLagAtEnd).padStart(6)}  slope ${String(s.pathLagSlope).padStart(6)}/s  drain ${s.drainSeconds ?? '—'} s  cpu ${s.workerCpuMsPer1k} ms/1k (${aboveIdle(s, r.idleWorkerCpuMsPerSecond)} above idle)  box ${Math.round(s.boxCpuBusy * 100)}%  ${s.sustained ? 'kept up' : `NOT: ${s.verdict}`}`,
  );
  return [
    ...lines,
    '',
    'load steps (open loop, persisted messages/s):',
    ...steps,
    '',
    `machine: ${r.environment.cpus} × ${r.environment.cpuModel}; node ${r.environment.node}; kafkajs ${r.environment.kafkajs}; broker ${r.environment.brokers.join(',')} (${r.environment.coLocated})`,
    `load average at start ${r.environment.loadAverageAtStart.join(' ')}, at end ${r.environment.loadAverageAtEnd.join(' ')} (other work on the machine skews every figure)`,
    ...r.notes.map((n) => `note: ${n}`),
  ].join('\n');
}
