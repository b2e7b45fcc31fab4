/** `pushctl config` lists the declarations (common/config-keys.ts), the way an operator runs it. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { configKeys } from '../../../common/config-keys.ts';
import { renderConfigTable } from '../../../common/config-table.ts';
import { pushctl as pushctlResult } from '../pushctl-process.ts';

const run = promisify(execFile);
const pushctl = (args: string[], env: Record<string, string> = {}) =>
  run(process.execPath, ['--import', 'tsx', 'cli/pushctl.ts', ...args], { env: { ...process.env, ...env }, timeout: 60_000 });

test('pushctl config names every key with its default and range, shows what is set and masks secrets', async () => {
  const { stdout } = await pushctl(['config'], { PUSH_MERGE_WINDOW_MS: '3000', PUSH_CLICKHOUSE_PASSWORD: 'hunter2-secret' });
  for (const key of configKeys()) assert.match(stdout, new RegExp(`^  ${key.key}  default `, 'm'), key.key);
  assert.match(stdout, /^ {2}PUSH_MERGE_WINDOW_MS {2}default 5 000; 1–10 000 {2}\(set: 3000\)$/m);
  assert.match(stdout, /PUSH_CLICKHOUSE_PASSWORD .*\(set: \*\*\*\)/);
  assert.doesNotMatch(stdout, /hunter2/);
});

test('pushctl config --markdown prints the README tables; pushctl --help points at it', async () => {
  assert.equal((await pushctl(['config', '--markdown'])).stdout.trim(), renderConfigTable());
  assert.match((await pushctl(['--help'])).stdout, /pushctl config/);
});

test('every PUSH_* key is checked before a command acts: PUSH_LOG_LEVEL=verbose is refused with the allowed values', async () => {
  const result = await pushctlResult(['status'], { PUSH_LOG_LEVEL: 'verbose' });
  assert.equal(result.code, 1);
  assert.match(result.stderr, /^pushctl: PUSH_LOG_LEVEL: expected one of debug \| info \| warn \| error, got "verbose"$/m);
  assert.equal(result.stdout, '', 'nothing ran');
});

test('all configuration errors are reported at once, each bad key with what it allows', async () => {
  const bad = {
    PUSH_LOG_LEVEL: 'verbose',
    PUSH_MERGE_WINDOW_MS: '20000',
    PUSH_STAGES: 'decisions,teleport',
    PUSH_QUOTA_TIME_ZONE: 'Mars/Base',
    PUSH_RESTART_BACKOFF_INITIAL_MS: '5000',
    PUSH_RESTART_BACKOFF_MAX_MS: '1000',
    PUSH_DECISION_TAPS: 'sometimes',
  };
  const result = await pushctlResult(['run'], bad);
  assert.equal(result.code, 1);
  assert.match(
    result.stderr,
    /^pushctl: PUSH_STAGES, PUSH_DECISION_TAPS, PUSH_LOG_LEVEL, PUSH_MERGE_WINDOW_MS, PUSH_QUOTA_TIME_ZONE, PUSH_RESTART_BACKOFF_MAX_MS: 6 configuration errors:$/m,
  );
  for (const line of [
    /^ {2}PUSH_LOG_LEVEL: expected one of debug \| info \| warn \| error, got "verbose"$/m,
    /^ {2}PUSH_MERGE_WINDOW_MS: must be within \[1, 10000\], got 20000$/m,
    /^ {2}PUSH_STAGES: unknown stage "teleport"; expected some of decisions, fan-out, receipts, clickhouse, campaigns, business, fan-out-business$/m,
    /^ {2}PUSH_QUOTA_TIME_ZONE: unknown IANA time zone "Mars\/Base"$/m,
    /^ {2}PUSH_RESTART_BACKOFF_MAX_MS: must be within \[5000, 600000\], got 1000$/m,
    /^ {2}PUSH_DECISION_TAPS: expected true or false, got "sometimes"$/m,
  ])
    assert.match(result.stderr, line);

  const config = await pushctlResult(['config'], { PUSH_LOG_LEVEL: 'verbose', PUSH_PARTITIONS: '0' });
  assert.equal(config.code, 1, 'pushctl config lists the keys, then reports the bad ones');
  assert.match(config.stdout, /PUSH_LOG_LEVEL .*\(set: verbose\)/);
  assert.match(config.stderr, /2 configuration errors:\n {2}PUSH_PARTITIONS: must be within \[1, 256\], got 0\n {2}PUSH_LOG_LEVEL: expected one of/);
});
