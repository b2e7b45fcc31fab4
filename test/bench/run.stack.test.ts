/**
 * Smoke test of `npm run bench`: the quick run against the local stack writes a well-formed result
 * document. No figure is asserted against a target (timing assertions do not belong in tests); the
 * test checks what a user reading the JSON relies on: every section is present and consistent.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BenchResult } from '../../bench/report.ts';
import type { LatencySegments } from '../../bench/worker-metrics.ts';

const RUN = fileURLToPath(new URL('../../bench/run.ts', import.meta.url));

const isNumber = (x: unknown): x is number => typeof x === 'number' && Number.isFinite(x);

/** How long the bench may print nothing before it counts as stuck (its phases report every few seconds). */
const SILENT_MS = 180_000;

/**
 * Runs bench/run.ts to its end. Its length grows with how busy the machine is, so it is stopped
 * only when it has printed nothing for SILENT_MS, not after a fixed time.
 */
function runBench(args: readonly string[]): Promise<{ status: number | null; stdout: string; stderr: string; stuck: boolean }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', RUN, ...args]);
    let stdout = '';
    let stderr = '';
    let stuck = false;
    let silence: NodeJS.Timeout | undefined;
    const heard = () => {
      clearTimeout(silence);
      silence = setTimeout(() => {
        stuck = true;
        child.kill('SIGTERM');
      }, SILENT_MS);
    };
    child.stdout.on('data', (chunk: Buffer) => ((stdout += chunk.toString()), heard()));
    child.stderr.on('data', (chunk: Buffer) => ((stderr += chunk.toString()), heard()));
    heard();
    child.on('close', (status) => {
      clearTimeout(silence);
      resolve({ status, stdout, stderr, stuck });
    });
  });
}

/** Every figure of a segment is a number (quantiles null only without samples). */
function assertSegments(segments: LatencySegments, where: string): void {
  for (const name of [
    'persistedToDecided',
    'decidedToReceived',
    'decisionsCommit',
    'persistedToReceived',
    'claim',
    'vendorCall',
    'persistedToAccepted',
  ] as const) {
    const s = segments[name];
    assert.ok(s && isNumber(s.samples), `${where}: segment ${name} present`);
    for (const q of [s.p50Ms, s.p99Ms]) assert.ok(s.samples === 0 ? q === null : isNumber(q), `${where}: segment ${name} quantiles`);
  }
}

/** Each bar of a chart of the HTML report: its series, category and value, by chart title. */
function chartBars(html: string): Map<string, Array<{ series: string; category: string; value: number }>> {
  const unescape = (t: string) => t.replace(/&#(\d+);/g, (_, c: string) => String.fromCharCode(Number(c)));
  const charts = new Map<string, Array<{ series: string; category: string; value: number }>>();
  for (const figure of html.matchAll(/<figure data-chart="([^"]*)">([\s\S]*?)<\/figure>/g)) {
    const bars = [...figure[2]!.matchAll(/<rect [^>]*data-series="([^"]*)" data-category="([^"]*)" data-value="([^"]*)"/g)];
    charts.set(
      unescape(figure[1]!),
      bars.map((b) => ({ series: unescape(b[1]!), category: unescape(b[2]!), value: Number(b[3]) })),
    );
  }
  return charts;
}

/** The HTML report is self-contained and its charts hold the run's figures, bar for bar. */
function assertReport(stdout: string, path: string, result: BenchResult): void {
  assert.match(stdout, new RegExp(`report: +${path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
  const html = readFileSync(path, 'utf8');
  assert.doesNotMatch(html, /<script|src="http|href="http|@import/, 'nothing to fetch or run');
  const charts = chartBars(html);
  const bar = (chart: string, series: string, category: string) => charts.get(chart)?.find((b) => b.series === series && b.category === category)?.value;
  for (const step of result.steps) {
    assert.equal(bar('Offered and consumed load per step', 'offered', step.label), step.offeredRate);
    assert.equal(bar('Offered and consumed load per step', 'consumed', step.label), step.consumedRate);
    for (const p of ['workers', 'broker', 'mariadb', 'clickhouse', 'bench'] as const)
      assert.equal(bar('Machine CPU per persisted message, by process', p, step.label), step.boxCpuMsPerMessage[p], `${step.label} ${p}`);
    for (const [topic, n] of Object.entries(step.breakdown!.producedPerMessageByTopic))
      assert.equal(bar('Kafka records produced per persisted message, by topic', topic, step.label), n, `${step.label} ${topic}`);
  }
  const latency = 'Persist → vendor latency per phase (leading pushes)';
  assert.equal(bar(latency, 'p99', '100 msgs/s'), result.latencyAt100!.p99Ms);
  assert.equal(bar(latency, 'p50', `${result.latency!.rate} msgs/s`), result.latency!.p50Ms);
  if (result.campaign) assert.equal(bar('IM latency alone and beside a campaign', 'p99', 'IM beside the campaign'), result.campaign.imWithCampaign.p99Ms);
  else assert.equal(charts.has('IM latency alone and beside a campaign'), false, 'no campaign chart without the campaign phase');
}

test('bench/run.ts --quick writes a well-formed result document and prints the targets table', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'bench-'));
  const out = join(dir, 'result.json');
  try {
    const run = await runBench(['--quick', '--out', out]);
    assert.equal(
      run.status,
      0,
      `bench exited with ${run.status}${run.stuck ? ` after printing nothing for ${SILENT_MS / 1000} s` : ''}: ${run.stderr.slice(-2000)}`,
    );
    assert.match(run.stdout, /target \(docs\/design\.md, "Targets"\)/);
    assert.match(run.stdout, /sustained end-to-end ingest/);
    assert.match(run.stdout, /Kafka records produced per persisted msg/);
    assert.match(run.stdout, /persist → vendor segments at 100 msgs\/s/);

    const result = JSON.parse(readFileSync(out, 'utf8')) as BenchResult;
    assert.equal(result.config.quick, true);
    assert.ok(result.ceilings, 'ceilings measured');
    assert.ok(result.ceilings.rawConsumeProduce.recordsPerSecond > 0);
    assert.equal(result.ceilings.exactlyOnceChain.hops, 2, "the ceiling chain has the event path's depth: decisions, fan-out");
    assert.ok(result.ceilings.exactlyOnceChain.recordsPerSecond > 0);
    const cpu = result.ceilings.cpu;
    assert.ok(cpu.produceUsPerRecord > 0 && cpu.consumeUsPerRecord > 0 && cpu.exactlyOnceHopUsPerRecord > 0, `client CPU per record ${JSON.stringify(cpu)}`);
    assert.match(run.stdout, /client floor: kafkajs CPU per persisted msg/);
    const floor = result.ceilings.hopLatency;
    assert.ok(floor.records > 0 && isNumber(floor.p50Ms) && isNumber(floor.p99Ms) && floor.p50Ms <= floor.p99Ms, `latency floor ${JSON.stringify(floor)}`);
    assert.match(run.stdout, /floor: producer → 1 exactly-once hop → read_committed, 100\/s +\(reference\) +p50 \d+ ms/);

    assert.ok(result.steps.length >= 1, 'at least one load step');
    for (const step of result.steps) {
      assert.ok(step.persistedMessages > 0, `step ${step.label} produced messages`);
      assert.equal(typeof step.sustained, 'boolean');
      assert.ok(step.workerCpuMsPer1k > 0, `step ${step.label} measured worker CPU`);
      assert.ok(isNumber(step.workerCpuMsPerMessage) && step.workerCpuMsPerMessage > 0);
      // The stages off the event path run in a worker of their own (no --all-stages): both parts worked.
      const eventPath = step.eventPathWorkerCpuMsPerMessage;
      assert.ok(isNumber(eventPath) && eventPath > 0 && eventPath < step.workerCpuMsPerMessage, `step ${step.label}: event-path worker CPU ${eventPath}`);
      const box = step.boxCpuMsPerMessage;
      // Each co-located process that did work in the step is charged: the broker, MariaDB (claims,
      // results) and ClickHouse (outcomes) all serve every message.
      for (const key of ['workers', 'bench', 'broker', 'mariadb', 'clickhouse'] as const)
        assert.ok(box[key] > 0, `step ${step.label}: machine CPU of ${key} ${JSON.stringify(box)}`);
      assert.equal(box.workers, step.workerCpuMsPerMessage, 'the workers are charged what the step measured for them');
      assert.ok(box.total >= box.workers + box.broker + box.mariadb - 0.01, `the machine total holds its parts ${JSON.stringify(box)}`);
      assert.ok(step.boxCeilingPerSecond > 0);
      assert.match(run.stdout, /worker CPU [\d.]+ ms\/msg \(event path [\d.]+, off it [\d.]+\)/);
      assert.match(run.stdout, /machine CPU [\d.]+ ms\/msg \(workers [\d.]+, broker [\d.]+, MariaDB/);
      // Every push is claimed in MySQL: the step's statements and fsyncs are read from the server.
      const sql = step.sqlPerMessage;
      assert.ok(sql && sql.statements > 0 && sql.inserts > 0 && sql.fsyncs > 0, `step ${step.label}: MySQL per message ${JSON.stringify(sql)}`);
      assert.ok(sql.statements >= sql.inserts + sql.updates + sql.deletes + sql.selects - 0.01, 'statements hold their kinds');
      assert.match(run.stdout, /MySQL statements\/msg [\d.]+ \(insert [\d.]+, update [\d.]+, delete [\d.]+, select [\d.]+\), InnoDB fsyncs\/msg [\d.]+/);
      const b = step.breakdown;
      assert.ok(b, `step ${step.label} read the workers' /metrics`);
      for (const key of [
        'recordsProducedPerMessage',
        'outputRecordsPerMessage',
        'changelogRecordsPerMessage',
        'recordsFetchedPerMessage',
        'recordsProcessedPerMessage',
        'commitsPerSecond',
        'gcSeconds',
        'gcShareOfWorkerCpu',
      ] as const) {
        assert.ok(isNumber(b[key]), `step ${step.label}: ${key} is a number`);
      }
      assert.ok(b.recordsProducedPerMessage > 0 && b.recordsFetchedPerMessage > 0, 'the workers produced and fetched records');
      assert.ok(Object.keys(b.producedPerMessageByApp).includes('decisions') && Object.values(b.commitsPerSecondByApp).every(isNumber));
      assertSegments(b.segments, step.label);
    }
    const kept = result.steps.filter((s) => s.sustained);
    assert.equal(result.sustainedStep !== null, kept.length > 0);
    assert.ok(result.sustainedEventsPerSecond >= 0);
    if (result.sustainedStep !== null) {
      const at = result.atSustainedRate;
      assert.ok(at && at.step === result.sustainedStep);
      for (const key of ['workerCpuMsPerMessage', 'recordsProducedPerMessage', 'recordsFetchedPerMessage', 'commitsPerSecond', 'gcShareOfWorkerCpu'] as const)
        assert.ok(isNumber(at[key]), `atSustainedRate.${key} is a number`);
      assert.ok(isNumber(result.pipelineToRawCeiling));
    }

    assert.ok(result.latency, 'latency phase ran');
    assert.ok(result.latency.samples > 0, 'leading pushes to offline devices were joined at the emulators');
    assert.ok(result.latency.p50Ms !== null && result.latency.p99Ms !== null && result.latency.p50Ms <= result.latency.p99Ms);
    assert.ok(result.latencyAt100, 'the 100 msgs/s latency phase ran');
    assert.equal(result.latencyAt100.rate, 100);
    assert.ok(result.latencyAt100.samples > 0 && isNumber(result.latencyAt100.p99Ms));
    for (const l of [result.latency, result.latencyAt100]) {
      assert.ok(l.step.breakdown, `latency ${l.rate}/s read the workers' /metrics`);
      assertSegments(l.step.breakdown.segments, `latency ${l.rate}/s`);
      assert.ok(
        l.step.breakdown.segments.persistedToDecided.samples > 0 && l.step.breakdown.segments.claim.samples > 0,
        'the workers timed the leading pushes',
      );
    }

    assert.ok(result.storm, 'storm phase ran');
    assert.ok(result.storm.triggers > 0 && result.storm.submissions > 0);
    assert.equal(result.storm.pairs, result.storm.pairsFinalLatest + result.storm.pairsFinalStale + result.storm.pairsWithoutPush);

    assert.ok(result.workers.length >= 1 && result.workers.every((w) => w.peakRssMb > 0), 'worker RSS read from /proc');
    assertReport(run.stdout, out.replace(/\.json$/, '.html'), result);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
