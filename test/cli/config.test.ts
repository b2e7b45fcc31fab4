/** `pushctl config` lists the declarations (common/config-keys.ts), the way an operator runs it. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { configKeys } from '../../common/config-keys.ts';
import { renderConfigTable } from '../../common/config-table.ts';

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
