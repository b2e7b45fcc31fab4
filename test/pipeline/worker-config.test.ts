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
});
