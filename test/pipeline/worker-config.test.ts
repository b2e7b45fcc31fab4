/** Which stages a worker runs (pipeline/worker-config.ts), with the fan-out as its own application or fused behind the decisions. */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigError } from '../../common/errors.ts';
import { STAGE_NAMES } from '../../common/config-keys.ts';
import { deployedStages, readWorkerConfig } from '../../pipeline/worker-config.ts';

const APPS = { PUSH_APPS_CONFIG: '/etc/offline-push/apps.json' };
const refusedFor = (key: string) => (error: unknown) => error instanceof ConfigError && error.key === key;

describe('worker stages', () => {
  const others = STAGE_NAMES.filter((s) => s !== 'fan-out');

  test('by default the IM fan-out runs fused behind the decisions: its own stage does not run, whether listed or by default', () => {
    assert.deepEqual(readWorkerConfig(APPS).stages, others);
    assert.deepEqual(readWorkerConfig({ ...APPS, PUSH_STAGES: 'decisions,fan-out' }).stages, ['decisions']);
    assert.deepEqual(deployedStages({}), others);
  });

  test('PUSH_FAN_OUT_FUSED=false: every stage runs, the fan-out among them', () => {
    const separate = { ...APPS, PUSH_FAN_OUT_FUSED: 'false' };
    assert.deepEqual(readWorkerConfig(separate).stages, [...STAGE_NAMES]);
    assert.deepEqual(deployedStages(separate), [...STAGE_NAMES]);
  });

  test('fused decisions send pushes, so they need the vendor apps file; unfused decisions do not', () => {
    assert.deepEqual(readWorkerConfig({ PUSH_STAGES: 'decisions', PUSH_FAN_OUT_FUSED: 'false' }).stages, ['decisions']);
    assert.throws(() => readWorkerConfig({ PUSH_STAGES: 'decisions' }), refusedFor('PUSH_APPS_CONFIG'));
    assert.throws(() => readWorkerConfig({ ...APPS, PUSH_FAN_OUT_FUSED: 'sometimes' }), refusedFor('PUSH_FAN_OUT_FUSED'));
  });

  test("commit intervals: fused, no push waits for the decisions' commit (500 ms, no caught-up shortcut); apart, the fan-out does (100 ms, 10 ms when caught up)", () => {
    const fused = readWorkerConfig(APPS);
    assert.deepEqual([fused.commitIntervalMs, fused.caughtUpCommitMs], [500, 500]);
    const separate = readWorkerConfig({ ...APPS, PUSH_FAN_OUT_FUSED: 'false' });
    assert.deepEqual([separate.commitIntervalMs, separate.caughtUpCommitMs], [100, 10]);
    const set = readWorkerConfig({ ...APPS, PUSH_COMMIT_INTERVAL_MS: '800', PUSH_CAUGHT_UP_COMMIT_MS: '20' });
    assert.deepEqual([set.commitIntervalMs, set.caughtUpCommitMs], [800, 20]);
    assert.equal(readWorkerConfig({ ...APPS, PUSH_PROCESSING_GUARANTEE: 'at_least_once' }).commitIntervalMs, 1000);
    assert.throws(() => readWorkerConfig({ ...APPS, PUSH_CAUGHT_UP_COMMIT_MS: '600' }), refusedFor('PUSH_CAUGHT_UP_COMMIT_MS'));
  });
});
