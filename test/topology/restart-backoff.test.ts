import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { RestartBackoff } from '../../topology/restart-backoff.ts';
import { resolveStreamsAppOptions, type StreamsAppOptions } from '../../topology/runtime-options.ts';
import { ConfigError } from '../../common/errors.ts';
import { readWorkerConfig } from '../../pipeline/worker-config.ts';
import { countingTopology } from './fixtures.ts';

describe('restart backoff', () => {
  test('consecutive restarts wait initial × 2^(n−1), jittered within [½, 1] of that step, capped at the maximum', () => {
    let now = 0;
    const backoff = new RestartBackoff({ initialMs: 100, maxMs: 1000, resetMs: 60_000, clock: () => now });
    const steps = [100, 200, 400, 800, 1000, 1000];
    let previous = 0;
    for (const [i, step] of steps.entries()) {
      const delay = backoff.next();
      assert.ok(delay >= step / 2 && delay <= step, `restart ${i + 1}: ${delay} ms within [${step / 2}, ${step}]`);
      // A doubled step starts where the one before ended; the capped step (800 → 1000) may overlap it.
      if (i > 0 && step === 2 * steps[i - 1]!) assert.ok(delay >= previous, 'below the cap, never shorter than the delay before');
      assert.equal(backoff.consecutive, i + 1);
      assert.equal(backoff.delayMs, delay);
      previous = delay;
      now += delay + 500; // rejoined, ran half a second, failed again
      backoff.restartEnded();
    }
  });

  test('running resetMs after a restart ends the run: the next restart waits the initial delay again', () => {
    let now = 0;
    const backoff = new RestartBackoff({ initialMs: 100, maxMs: 10_000, resetMs: 5000, clock: () => now });
    for (let i = 0; i < 5; i++) {
      backoff.next();
      backoff.restartEnded();
      now += 1000;
    }
    assert.equal(backoff.consecutive, 5);
    assert.equal(backoff.settle(), false, 'one second of running is not enough');
    now += 4000;
    assert.equal(backoff.settle(), true);
    assert.equal(backoff.consecutive, 0);
    assert.equal(backoff.delayMs, 0);
    const delay = backoff.next();
    assert.ok(delay >= 50 && delay <= 100, `first restart of a new run: ${delay} ms`);
    assert.equal(backoff.consecutive, 1);
  });

  test('the reset is counted from the end of the restart, not its start (a long backoff is not time running)', () => {
    let now = 0;
    const backoff = new RestartBackoff({ initialMs: 4000, maxMs: 8000, resetMs: 5000, clock: () => now });
    backoff.next();
    now += 4000; // waiting and rejoining
    backoff.restartEnded();
    now += 2000; // 6 s after the restart began, 2 s of running
    backoff.next();
    assert.equal(backoff.consecutive, 2);
  });
});

describe('restart and record-size options', () => {
  const base: StreamsAppOptions = { applicationId: 'app', topology: countingTopology('in', 'out'), brokers: ['localhost:9092'], dlqTopic: 'dlq' };

  test('defaults', () => {
    const o = resolveStreamsAppOptions(base);
    assert.equal(o.maxRecordBytes, 1_048_588 - 128);
    assert.equal(o.restartBackoffInitialMs, 200);
    assert.equal(o.restartBackoffMaxMs, 30_000);
    assert.equal(o.restartBackoffResetMs, 60_000);
    assert.equal(o.fetchMinBytes, 1, 'a record ends a fetch at once');
    assert.equal(o.fetchMaxWaitMs, 500);
  });

  for (const [key, value, range] of [
    ['maxRecordBytes', 100, /\[1024, 104857600\]/],
    ['restartBackoffInitialMs', 0, /\[10, 60000\]/],
    ['restartBackoffMaxMs', 50, /\[200, 600000\]/],
    ['restartBackoffResetMs', Number.NaN, /\[1000, 3600000\]/],
    ['fetchMinBytes', 0, /\[1, 10485760\]/],
    ['fetchMaxWaitMs', 5, /\[10, 30000\]/],
  ] as const) {
    test(`${key} = ${value} is refused at start, naming the key and the range`, () => {
      assert.throws(
        () => resolveStreamsAppOptions({ ...base, [key]: value }),
        (error: unknown) => error instanceof ConfigError && error.key === key && range.test(error.message),
      );
    });
  }
});

describe('worker keys', () => {
  test('PUSH_MAX_RECORD_BYTES and PUSH_RESTART_BACKOFF_* reach the stages; a bad value names its key', () => {
    const env = {
      PUSH_STAGES: 'receipts',
      PUSH_APPS_CONFIG: '/etc/offline-push/apps.json',
      PUSH_MAX_RECORD_BYTES: '500000',
      PUSH_RESTART_BACKOFF_INITIAL_MS: '50',
      PUSH_RESTART_BACKOFF_MAX_MS: '5000',
      PUSH_RESTART_BACKOFF_RESET_MS: '10000',
    };
    const config = readWorkerConfig(env);
    assert.equal(config.maxRecordBytes, 500_000);
    assert.deepEqual(config.restartBackoff, { initialMs: 50, maxMs: 5000, resetMs: 10_000 });
    assert.deepEqual(readWorkerConfig({ PUSH_STAGES: 'clickhouse' }).restartBackoff, { initialMs: 200, maxMs: 30_000, resetMs: 60_000 });
    for (const [key, value] of [
      ['PUSH_MAX_RECORD_BYTES', '10'],
      ['PUSH_RESTART_BACKOFF_INITIAL_MS', 'soon'],
      ['PUSH_RESTART_BACKOFF_MAX_MS', '20'],
      ['PUSH_RESTART_BACKOFF_RESET_MS', '0'],
    ] as const) {
      assert.throws(
        () => readWorkerConfig({ ...env, [key]: value }),
        (error: unknown) => error instanceof ConfigError && error.key === key,
        key,
      );
    }
  });
});
