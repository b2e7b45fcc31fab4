/**
 * `pushctl status` as a newcomer runs it: with no options it shows every stage group the worker
 * starts (pipeline/worker.ts names them `<application id>-<stage>`), a stage that never ran is "not
 * running" rather than Kafka's "Dead", and a caught-up pipeline shows lag 0 although its topics are
 * written in transactions (whose commit markers take offsets).
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startEnvironment, type Environment } from '../../../demo/environment.ts';
import { trafficProducer, type TrafficProducer } from '../../../demo/traffic.ts';
import { STAGES } from '../../../pipeline/apps/index.ts';
import { deployedStages } from '../../../pipeline/worker-config.ts';
import { uniqueName } from '../../support/stack.ts';
import { pushctl } from '../pushctl-process.ts';

let env: Environment;
let traffic: TrafficProducer;

before(async () => {
  env = await startEnvironment({ instances: 1, partitions: 2, verbose: false });
  await env.waitReady();
  traffic = await trafficProducer(env.topicPrefix);
});

after(async () => {
  await traffic?.close();
  await env?.close();
});

test('pushctl status with no options shows every stage group; one that never ran is not running, not Dead', async () => {
  const app = uniqueName('never-run');
  const result = await pushctl(['status'], { PUSH_APPLICATION_ID: app });
  assert.equal(result.code, 0, result.stderr);
  for (const stage of STAGES) assert.match(result.stdout, new RegExp(`^group ${app}-${stage}: not running`, 'm'), stage);
  assert.doesNotMatch(result.stdout, /Dead/);
});

test('pushctl status shows the groups of a running pipeline, each caught up to lag 0 past its commit markers', async () => {
  const uid = `${env.run}-u0`;
  const now = Date.now();
  await traffic.send('tokens', [
    {
      key: uid,
      value: {
        uid,
        device_id: `${uid}-d0`,
        platform: 'android',
        vendor: 'fcm',
        app_id: env.appId,
        token: env.emulators.token('fcm', `${uid}-d0`),
        reported_at: now,
        state: 'VALID',
        source: 'CLIENT',
        reason: null,
        manufacturer: 'samsung',
      },
    },
  ]);
  await new Promise((r) => setTimeout(r, 2000));
  await traffic.send(
    'persisted',
    [1, 2, 3].map((seq) => ({
      key: uid,
      value: {
        msg_id: `m${seq}`,
        conv_id: `c${seq}`,
        conv_type: 'SINGLE',
        seq: 1,
        sender_uid: 'sender',
        uid,
        unread_cnt: seq,
        title: 'Alice',
        summary: 'hello',
        sensitive: false,
        mention: 'NONE',
        persisted_at: Date.now(),
        app_id: env.appId,
      },
    })),
  );
  await new Promise((r) => setTimeout(r, 2000));
  await until('the pushes to reach the vendor', () => env.emulators.fcm.accepted().length >= 3);

  let last = '';
  const outcomesCaughtUp = new RegExp(`^ {2}${env.topicPrefix.replace(/\./g, '\\.')}push\\.outcomes +lag +0 `, 'm');
  const deadline = Date.now() + 60_000;
  for (;;) {
    const result = await pushctl(['status'], { PUSH_APPLICATION_ID: env.applicationId });
    assert.equal(result.code, 0, result.stderr);
    last = result.stdout;
    const lags = [...last.matchAll(/ lag +(\d+) /g)].map((m) => Number(m[1]));
    // push.outcomes, which the decisions write in transactions, shows once a group reading it
    // (receipts, ClickHouse: 3 s commits) has committed past them.
    if (
      lags.length > 0 &&
      lags.every((l) => l === 0) &&
      outcomesCaughtUp.test(last) &&
      running.every((s) => new RegExp(`^group ${env.applicationId}-${s}: Stable, 1 member`, 'm').test(last))
    )
      break;
    if (Date.now() > deadline) assert.fail(`the pipeline did not show lag 0 in every group, push.outcomes included:\n${last}`);
    await new Promise((r) => setTimeout(r, 1000));
  }
  // The fan-out runs fused in the decisions (PUSH_FAN_OUT_FUSED, the default): its own stage never ran.
  assert.match(last, new RegExp(`^group ${env.applicationId}-fan-out: not running`, 'm'));
  assert.doesNotMatch(last, /Dead/);

  const one = await pushctl(['status', '--app', env.applicationId, '--stage', 'receipts']);
  assert.equal(one.code, 0, one.stderr);
  assert.match(one.stdout, new RegExp(`^group ${env.applicationId}-receipts: Stable`, 'm'));
  assert.doesNotMatch(one.stdout, /-decisions:/);
});

/** The stages a default worker runs. */
const running = deployedStages({});

async function until(what: string, check: () => boolean, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 300));
  }
}
