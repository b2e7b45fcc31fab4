/**
 * The campaigns stage as operators run it: `pushctl run --stages campaigns` (pipeline/apps/index.ts
 * wiring, PUSH_* keys) expands a campaign posted to the entry, writes its progress to MySQL, and
 * GET /v1/campaigns/{id} reports it done.
 */
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import type { PushRequestRecord } from '../../../processors/campaigns/records.ts';
import { uniqueName } from '../../support/stack.ts';
import { call, readAll, startEntryStack, type EntryStack } from '../../entry/support.ts';

let stack: EntryStack;
let worker: ChildProcess | undefined;

before(async () => {
  stack = await startEntryStack();
});

after(async () => {
  if (worker && worker.exitCode === null) {
    const exited = new Promise((resolve) => worker!.once('exit', resolve));
    worker.kill('SIGTERM');
    await exited;
  }
  await stack?.cleanup();
});

test('pushctl run --stages campaigns expands a campaign posted to the entry, once per uid', async () => {
  const { key } = await stack.keys.create('stage-sender');
  const uids = Array.from({ length: 2_000 }, (_, i) => `stage-u-${i}`);
  const posted = await call(stack, 'POST', '/v1/campaigns', key, { app_id: 'im.demo', title: 'Sale', body: 'Today only', uids });
  assert.equal(posted.status, 202);
  const id = posted.body.campaign_id as string;

  worker = spawn(process.execPath, ['--import', 'tsx', 'cli/pushctl.ts', 'run', '--stages', 'campaigns'], {
    env: {
      ...process.env,
      PUSH_TOPIC_PREFIX: stack.topics.prefix,
      PUSH_PARTITIONS: '4', // as test/entry/support.ts created the topics
      PUSH_APPLICATION_ID: uniqueName('stage-test'),
      PUSH_MYSQL_URL: stack.mysqlUrl,
      PUSH_CLICKHOUSE_DATABASE: stack.clickhouseDatabase,
      PUSH_METRICS_PORT: '0',
      PUSH_LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const deadline = Date.now() + 120_000;
  let report: Record<string, unknown> = {};
  while (report.state !== 'done' && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(worker.exitCode, null, 'the worker keeps running');
    const got = await call(stack, 'GET', `/v1/campaigns/${id}`, key);
    if (got.status === 200) report = got.body;
  }
  assert.deepEqual([report.state, report.total, report.expanded], ['done', 2_000, 2_000]);
  const requests = (await readAll<PushRequestRecord>(stack, 'requests')).filter((r) => r.value.campaign_id === id);
  assert.deepEqual(requests.map((r) => r.key).sort(), [...uids].sort());
});
