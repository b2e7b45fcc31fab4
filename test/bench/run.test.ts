/**
 * Smoke test of `npm run bench`: the quick run against the local stack writes a well-formed result
 * document. No figure is asserted against a target (timing assertions do not belong in tests); the
 * test checks what a user reading the JSON relies on: every section is present and consistent.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BenchResult } from '../../bench/report.ts';

const RUN = fileURLToPath(new URL('../../bench/run.ts', import.meta.url));

test('bench/run.ts --quick writes a well-formed result document and prints the targets table', { timeout: 150_000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'bench-'));
  const out = join(dir, 'result.json');
  try {
    const run = spawnSync(process.execPath, ['--import', 'tsx', RUN, '--quick', '--out', out], { encoding: 'utf8', timeout: 140_000 });
    assert.equal(run.status, 0, `bench exited with ${run.status}: ${run.stderr.slice(-2000)}`);
    assert.match(run.stdout, /DESIGN §7 target/);
    assert.match(run.stdout, /sustained end-to-end ingest/);

    const result = JSON.parse(readFileSync(out, 'utf8')) as BenchResult;
    assert.equal(result.config.quick, true);
    assert.ok(result.ceilings, 'ceilings measured');
    assert.ok(result.ceilings.rawConsumeProduce.recordsPerSecond > 0);
    assert.equal(result.ceilings.exactlyOnceChain.hops, 4);
    assert.ok(result.ceilings.exactlyOnceChain.recordsPerSecond > 0);

    assert.ok(result.steps.length >= 1, 'at least one load step');
    for (const step of result.steps) {
      assert.ok(step.persistedMessages > 0, `step ${step.label} produced messages`);
      assert.equal(typeof step.sustained, 'boolean');
      assert.ok(step.workerCpuMsPer1k > 0, `step ${step.label} measured worker CPU`);
    }
    const kept = result.steps.filter((s) => s.sustained);
    assert.equal(result.sustainedStep !== null, kept.length > 0);
    assert.ok(result.sustainedEventsPerSecond >= 0);

    assert.ok(result.latency, 'latency phase ran');
    assert.ok(result.latency.samples > 0, 'leading pushes to offline devices were joined at the emulators');
    assert.ok(result.latency.p50Ms !== null && result.latency.p99Ms !== null && result.latency.p50Ms <= result.latency.p99Ms);

    assert.ok(result.storm, 'storm phase ran');
    assert.ok(result.storm.triggers > 0 && result.storm.submissions > 0);
    assert.equal(result.storm.pairs, result.storm.pairsFinalLatest + result.storm.pairsFinalStale + result.storm.pairsWithoutPush);

    assert.ok(result.workers.length >= 1 && result.workers.every((w) => w.peakRssMb > 0), 'worker RSS read from /proc');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
