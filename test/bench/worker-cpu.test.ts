/**
 * bench/worker-cpu.ts marginalWorkerCpu: what one more persisted message costs the workers between the
 * steps that kept up, as docs/design.md, "Targets", reads it off a full bench.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { marginalWorkerCpu } from '../../bench/worker-cpu.ts';
import type { StepResult } from '../../bench/steps.ts';

const step = (offeredRate: number, persistedMessages: number, workerCpuMs: number, sustained = true) =>
  ({ label: `${offeredRate}/s`, offeredRate, persistedMessages, workerCpuMs, sustained }) as StepResult;

test('each further message costs the CPU difference of consecutive kept-up steps over their message difference, in rate order', () => {
  // The steps as a full bench runs them: up the rates, one that fell behind, then the half-way step.
  // The first carries the setup and the warm-up: it is left out.
  const steps = [
    step(250, 5_000, 17_530),
    step(500, 10_000, 16_478),
    step(1000, 20_000, 18_570),
    step(2000, 40_000, 29_690, false),
    step(1500, 30_000, 22_449),
  ];
  assert.deepEqual(marginalWorkerCpu(steps), [
    { from: 500, to: 1000, msPerMessage: 0.21 },
    { from: 1000, to: 1500, msPerMessage: 0.39 },
  ]);
});

test('fewer than two kept-up steps after the first give no figure', () => {
  assert.deepEqual(marginalWorkerCpu([step(300, 4_500, 13_920), step(600, 9_000, 12_567)]), []);
  assert.deepEqual(marginalWorkerCpu([step(500, 10_000, 16_478), step(1000, 20_000, 18_570), step(2000, 40_000, 29_690, false)]), []);
  assert.deepEqual(marginalWorkerCpu([]), []);
});
