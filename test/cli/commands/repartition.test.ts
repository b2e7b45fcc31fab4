/**
 * pushctl repartition refuses a mistaken call before it touches the cluster, naming the flag:
 * a missing new generation, a new generation that is the old one, a partition count out of range.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { repartitionCommand } from '../../../cli/commands/repartition.ts';
import { UsageError } from '../../../cli/args.ts';

const env = { PUSH_TOPIC_PREFIX: 'a.', PUSH_APPLICATION_ID: 'offline-push' };

const refused = async (args: string[], message: RegExp) => {
  const saved = { ...process.env };
  Object.assign(process.env, env);
  try {
    await assert.rejects(repartitionCommand(args), (error: unknown) => error instanceof UsageError && message.test(error.message));
  } finally {
    for (const key of Object.keys(env)) if (saved[key] === undefined) delete process.env[key];
    Object.assign(process.env, saved);
  }
};

test('the new generation must be named, and differ from the old one', async () => {
  await refused(['cutover', '--to', '12', '--to-prefix', 'b.'], /--to-app is required/);
  await refused(['prepare', '--to', '12', '--to-app', 'offline-push-g2'], /--to-prefix is required/);
  await refused(['prepare', '--to', '12', '--to-prefix', 'a.', '--to-app', 'offline-push-g2'], /--to-prefix must differ/);
  await refused(['prepare', '--to', '12', '--to-prefix', 'b.', '--to-app', 'offline-push'], /--to-app must differ/);
  await refused(['prepare', '--to', '12', '--to-prefix', 'b.', '--to-app', 'x', '--from-app', 'x'], /--to-app must differ/);
});

test('the partition count and the quiet period are checked', async () => {
  const g2 = ['--to-prefix', 'b.', '--to-app', 'offline-push-g2'];
  await refused(['prepare', ...g2], /--to is required/);
  await refused(['prepare', '--to', '0', ...g2], /--to must be a whole number of partitions from 1 to 256/);
  await refused(['prepare', '--to', '6.5', ...g2], /--to must be/);
  await refused(['cutover', '--to', '12', '--quiet-ms', 'soon', ...g2], /--quiet-ms must be/);
  await refused(['--to', '12', ...g2], /an action is required/);
});
