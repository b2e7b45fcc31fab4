/**
 * `pushctl demo` as a newcomer runs it (small: 40 users over 4 s): its summary explains its terms,
 * reports the push tasks as MySQL has them, and ends with commands to try on that run, which work.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import mysql from 'mysql2/promise';
import { stackEndpoints } from '../../support/stack.ts';
import { pushctl } from '../pushctl-process.ts';

test('the demo summary explains its terms, reports failed tasks as MySQL has them and ends with next commands for that run', async () => {
  const demo = await pushctl(['demo', '--users', '40', '--messages', '200', '--seconds', '4', '--instances', '1'], {}, 300_000);
  assert.equal(demo.code, 0, demo.stderr + demo.stdout.slice(-2000));
  const out = demo.stdout;
  const run = /\[demo\] done in [\d.]+ s \(run (\S+)\)/.exec(out)?.[1];
  assert.ok(run, `the run is named:\n${out}`);
  const [prefix, applicationId, appId] = [`${run}.`, `offline-push-${run}`, `app-${run}`];

  // The terms: arrived vs delivered, why APNs and FCM stay unknown, merged vs accepted.
  assert.match(out, /^ {2}accepted +a vendor took the push .*; arrived = accepted or reported delivered$/m);
  assert.match(out, /APNs and FCM send no delivery receipts,\n\s+so their pushes stay "unknown"/);
  assert.match(out, /^ {2}merged +a message that needed no push of its own/m);
  assert.match(out, /^total\s+\d+/m, 'the arrival table has a total row');

  // Tasks as MySQL has them, the failed ones counted the same. A receipt may still move a task
  // from submitted to delivered after the summary was printed, so those two are compared as a sum.
  const db = await mysql.createConnection({ uri: stackEndpoints().mysqlUrl });
  let failed: number;
  let sent: number;
  try {
    const [rows] = await db.query('SELECT SUM(status = 3) AS failed, SUM(status IN (1, 2)) AS sent FROM im_push_task WHERE app_id = ?', [appId]);
    const row = (rows as Array<{ failed: string | null; sent: string | null }>)[0]!;
    failed = Number(row.failed ?? 0);
    sent = Number(row.sent ?? 0);
  } finally {
    await db.end();
  }
  const tasks = /^push tasks in MySQL \(im_push_task\): pending \d+, submitted (\d+), delivered (\d+), failed (\d+), merged \d+$/m.exec(out);
  assert.ok(tasks, `the summary counts the tasks:\n${out}`);
  assert.equal(Number(tasks[1]) + Number(tasks[2]), sent, 'submitted + delivered as MySQL has them');
  assert.equal(Number(tasks[3]), failed);
  assert.match(out, new RegExp(`^failed tasks +${failed}\\b`, 'm'));

  // The next commands, with the run's names filled in, as the last lines.
  const next = out.slice(out.indexOf('\nnext, on this run'));
  assert.match(
    next,
    new RegExp(
      `^next, on this run \\(topic prefix ${prefix.replace('.', '\\.')}, application id ${applicationId}, app ${appId}, user (${run}-u\\d+)\\):$`,
      'm',
    ),
  );
  const uid = new RegExp(`user (${run}-u\\d+)\\)`).exec(next)![1]!;
  for (const command of [
    `npx pushctl status --app ${applicationId}`,
    `npx pushctl tokens show ${uid}`,
    `PUSH_TOPIC_PREFIX=${prefix} npx pushctl replay --since 1h --app ${appId} --dry-run`,
    `npx pushctl topics describe --prefix ${prefix}`,
  ])
    assert.ok(next.includes(`\n  ${command}\n`), `next names ${command}`);

  // They work.
  const status = await pushctl(['status', '--app', applicationId]);
  assert.equal(status.code, 0, status.stderr);
  for (const stage of ['decisions', 'receipts', 'clickhouse']) assert.match(status.stdout, new RegExp(`^group ${applicationId}-${stage}: `, 'm'));
  const tokens = await pushctl(['tokens', 'show', uid]);
  assert.equal(tokens.code, 0, tokens.stderr);
  assert.match(tokens.stdout, new RegExp(`^device .*\\n${uid}-d\\d+ `));
  const replay = await pushctl(['replay', '--since', '1h', '--app', appId, '--dry-run'], { PUSH_TOPIC_PREFIX: prefix });
  assert.equal(replay.code, 0, replay.stderr);
  assert.match(replay.stdout, new RegExp(`^${failed} failed task\\(s\\) in range of ${appId}`, 'm'));
});
