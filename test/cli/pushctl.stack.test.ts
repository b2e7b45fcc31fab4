import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import mysql from 'mysql2/promise';
import { startEnvironment, type Environment } from '../../demo/environment.ts';
import { trafficProducer, watchOutcomes, type OutcomeWatcher, type TrafficProducer } from '../../demo/traffic.ts';
import { stackEndpoints } from '../support/stack.ts';

/**
 * The operator's commands against a real run: a worker on the local stack, the vendor emulators,
 * and pushctl invoked as a process, the way ops would.
 */
const run = promisify(execFile);
const pushctl = (args: string[], env: Record<string, string> = {}) =>
  run(process.execPath, ['--import', 'tsx', 'cli/pushctl.ts', ...args], { env: { ...process.env, ...env }, timeout: 120_000 }).then(
    (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
    (e: { code?: number; stdout?: string; stderr?: string }) => ({ code: e.code ?? 1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' }),
  );

let env: Environment;
let traffic: TrafficProducer;
let watcher: OutcomeWatcher;
const USERS = 12;

async function until(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 90_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 300));
  }
}

before(async () => {
  // Parking of retryable failures off (max age 0): the replay test needs pushes that gave up on a 503 storm.
  env = await startEnvironment({ instances: 1, partitions: 2, verbose: false, workerEnv: { PUSH_FANOUT_RETRY_MAX_AGE_MS: '0' } });
  await env.waitReady();
  traffic = await trafficProducer(env.topicPrefix);
  watcher = await watchOutcomes(env.topicPrefix, `${env.applicationId}-test-watcher`);
});

after(async () => {
  await watcher?.close();
  await traffic?.close();
  await env?.close();
});

const uid = (i: number) => `${env.run}-u${i}`;
const fcmToken = (i: number) => env.emulators.token('fcm', `${env.run}-d${i}`);

test('pushctl lists its commands and rejects unknown ones', async () => {
  const help = await pushctl(['--help']);
  assert.equal(help.code, 0);
  for (const command of ['stack', 'topics', 'migrate', 'run', 'status', 'tokens', 'replay', 'arrival', 'demo'])
    assert.match(help.stdout, new RegExp(`pushctl ${command}`));
  const unknown = await pushctl(['frobnicate']);
  assert.equal(unknown.code, 2);
  assert.match(unknown.stderr, /unknown command 'frobnicate'/);
});

test('failed pushes are replayed once the vendor recovers, each reaching the device once', async () => {
  // FCM answers 503 to everything until the fault is cleared: the fan-out retries, then gives up.
  env.emulators.fcm.script({ kind: 'server-error' }, { times: 1_000_000 });
  const now = Date.now();
  await traffic.send(
    'tokens',
    Array.from({ length: USERS }, (_, i) => ({
      key: uid(i),
      value: {
        uid: uid(i),
        device_id: `${uid(i)}-d0`,
        platform: 'android',
        vendor: 'fcm',
        app_id: env.appId,
        token: fcmToken(i),
        reported_at: now,
        state: 'VALID',
        source: 'CLIENT',
        reason: null,
        manufacturer: 'samsung',
      },
    })),
  );
  await new Promise((r) => setTimeout(r, 2000));
  await traffic.send(
    'persisted',
    Array.from({ length: USERS }, (_, i) => ({
      key: uid(i),
      value: {
        msg_id: `m${i}`,
        conv_id: `c${i}`,
        conv_type: 'SINGLE',
        seq: 1,
        sender_uid: 'sender',
        uid: uid(i),
        unread_cnt: 3,
        title: 'Alice',
        summary: 'hello',
        sensitive: false,
        mention: 'NONE',
        persisted_at: Date.now(),
        app_id: env.appId,
      },
    })),
  );
  await until('every push to fail', () => (watcher.counts.get('FAILED') ?? 0) >= USERS);
  assert.equal(env.emulators.fcm.accepted().length, 0, 'nothing was accepted while FCM failed');
  env.emulators.fcm.clearFaults();

  const dry = await pushctl(['replay', '--since', '10m', '--vendor', 'fcm', '--app', env.appId, '--dry-run'], { PUSH_TOPIC_PREFIX: env.topicPrefix });
  assert.equal(dry.code, 0, dry.stderr);
  // Fused (the default), push.dispatch holds no dispatch records: the failed tasks are rebuilt from their rows.
  assert.match(dry.stdout, new RegExp(`0 dispatch record\\(s\\) found, ${USERS} rebuilt from im_push_task, ${USERS} with a valid token left`));
  assert.equal(env.emulators.fcm.accepted().length, 0, 'a dry run submits nothing');

  const replay = await pushctl(['replay', '--since', '10m', '--vendor', 'fcm', '--app', env.appId], { PUSH_TOPIC_PREFIX: env.topicPrefix });
  assert.equal(replay.code, 0, replay.stderr);
  assert.match(replay.stdout, new RegExp(`replayed ${USERS} task\\(s\\)`));
  await until('every replayed push to be accepted', () => env.emulators.fcm.accepted().length >= USERS);
  await new Promise((r) => setTimeout(r, 2000));
  const tokens = env.emulators.fcm
    .accepted()
    .map((p) => p.token)
    .sort();
  assert.deepEqual(tokens, Array.from({ length: USERS }, (_, i) => fcmToken(i)).sort(), 'each device got exactly one push');

  const again = await pushctl(['replay', '--since', '10m', '--vendor', 'fcm', '--app', env.appId], { PUSH_TOPIC_PREFIX: env.topicPrefix });
  assert.match(again.stdout, /^0 failed task\(s\) in range/m, `a replayed task is no longer failed: ${again.stdout}`);
});

test('pushctl tokens shows fingerprints, never tokens, and invalidates through the pipeline', async () => {
  const shown = await pushctl(['tokens', 'show', uid(0)]);
  assert.equal(shown.code, 0, shown.stderr);
  assert.match(shown.stdout, new RegExp(`${uid(0)}-d0\\s+fcm`));
  assert.ok(!shown.stdout.includes(fcmToken(0)), 'the token itself is never printed');

  const invalidated = await pushctl(['tokens', 'invalidate', uid(0), '--vendor', 'fcm', '--reason', 'lost_device'], { PUSH_TOPIC_PREFIX: env.topicPrefix });
  assert.equal(invalidated.code, 0, invalidated.stderr);
  const db = await mysql.createConnection({ uri: stackEndpoints().mysqlUrl });
  try {
    await until('the token to be invalid in MySQL', async () => {
      const [rows] = await db.query('SELECT status, invalid_reason FROM im_push_token WHERE device_id = ? AND vendor = ?', [`${uid(0)}-d0`, 'fcm']);
      const row = (rows as Array<{ status: number; invalid_reason: string | null }>)[0];
      return row?.status === 0 && row.invalid_reason === 'lost_device';
    });
  } finally {
    await db.end();
  }
  // A message for that user now finds no valid token: dropped with a reason, never sent.
  const before = env.emulators.fcm.accepted().length;
  await traffic.send('persisted', [
    {
      key: uid(0),
      value: {
        msg_id: 'm-after',
        conv_id: 'c-after',
        conv_type: 'SINGLE',
        seq: 1,
        sender_uid: 'sender',
        uid: uid(0),
        unread_cnt: 4,
        title: 'Alice',
        summary: 'again',
        sensitive: false,
        mention: 'NONE',
        persisted_at: Date.now(),
        app_id: env.appId,
      },
    },
  ]);
  await until('the drop to be counted', () => (watcher.counts.get('DROPPED/no_token') ?? 0) >= 1);
  assert.equal(env.emulators.fcm.accepted().length, before);
});

test('pushctl status shows members, assignment and lag; arrival reads ClickHouse', async () => {
  const status = await pushctl(['status', '--app', `${env.applicationId}-decisions`]);
  assert.equal(status.code, 0, status.stderr);
  assert.match(status.stdout, /Stable, 1 member\(s\)/);
  assert.match(status.stdout, new RegExp(`${env.topicPrefix.replace('.', '\\.')}im\\.message\\.persisted\\[0,1\\]`));
  assert.match(status.stdout, /lag\s+\d+/);

  await until('ClickHouse to count the replayed pushes', async () => {
    const arrival = await pushctl(['arrival', '--since', '1h', '--by', 'app']);
    return new RegExp(`${env.appId}\\s+${USERS}\\s+${USERS}\\s+100\\.00%`).test(arrival.stdout);
  });
  const bad = await pushctl(['arrival', '--by', 'planet']);
  assert.equal(bad.code, 1);
  assert.match(bad.stderr, /--by: expected vendor \| app \| hour/);
});

test("a worker's /metrics counts its outcomes by status and reason, vendor answers and quota use; /readyz is ready", async () => {
  const port = env.workers[0]!.metricsPort;
  assert.equal((await fetch(`http://127.0.0.1:${port}/readyz`)).status, 200);
  const body = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const value = (pattern: RegExp) => Number(pattern.exec(body)?.[1] ?? NaN);
  assert.equal(value(/^push_outcomes_total\{reason="retries_exhausted",stage="fan-out",status="FAILED",vendor="fcm"\} (\d+)$/m), USERS);
  assert.equal(value(/^push_outcomes_total\{reason="",stage="fan-out",status="ACCEPTED",vendor="fcm"\} (\d+)$/m), USERS);
  assert.equal(value(/^push_outcomes_total\{reason="no_token",stage="online-filter",status="DROPPED",vendor=""\} (\d+)$/m), 1);
  assert.equal(value(new RegExp(`^push_quota_used_total\\{app="${env.appId}",vendor="fcm"\\} (\\d+)$`, 'm')), USERS);
  assert.equal(
    value(/^push_vendor_results_total\{app="[^"]+",code="UNAVAILABLE",kind="retryable",vendor="fcm"\} (\d+)$/m),
    USERS * 3,
    'every 503 answer counted: 3 calls per push before giving up',
  );
  assert.equal(value(/^push_vendor_results_total\{app="[^"]+",code="",kind="accepted",vendor="fcm"\} (\d+)$/m), USERS);
  assert.equal(value(/^push_vendor_latency_ms_count\{vendor="fcm"\} (\d+)$/m), USERS * 4, 'every vendor call timed');
  assert.equal(value(/^push_persist_to_accept_ms_count\{vendor="fcm"\} (\d+)$/m), USERS);
  // The fan-out runs fused in the decisions' application (PUSH_FAN_OUT_FUSED, the default).
  assert.match(body, /^push_stage_records_in_total\{app="[^"]+-decisions",node="fan-out"\} \d+$/m);
});

test('a worker with invalid configuration fails at start, naming the key and the allowed range', async () => {
  const cases: Array<[Record<string, string>, RegExp]> = [
    [{ PUSH_MERGE_WINDOW_MS: '20000' }, /PUSH_MERGE_WINDOW_MS: must be within \[1, 10000\], got 20000/],
    [{ PUSH_HOLD_WINDOW_MS: '2000' }, /PUSH_HOLD_WINDOW_MS: must be within \[5000, 30000\]/],
    [{ PUSH_STAGES: 'decisions,teleport' }, /PUSH_STAGES: unknown stage "teleport"/],
    [{ PUSH_PROCESSING_GUARANTEE: 'maybe_once' }, /PUSH_PROCESSING_GUARANTEE: expected one of exactly_once \| at_least_once/],
    [{ PUSH_BACKGROUND_COMMIT_INTERVAL_MS: '5' }, /PUSH_BACKGROUND_COMMIT_INTERVAL_MS: must be within \[10, 60000\], got 5/],
    [{ PUSH_DECISION_TAPS: 'sometimes' }, /PUSH_DECISION_TAPS/],
    [{ PUSH_APPS_CONFIG: '' }, /PUSH_APPS_CONFIG: the fan-out, receipts and receiver need the vendor apps JSON file/],
  ];
  for (const [bad, message] of cases) {
    const result = await pushctl(['run'], { ...env.workerEnv, PUSH_METRICS_PORT: '0', ...bad });
    assert.equal(result.code, 1, `exit code with ${JSON.stringify(bad)}`);
    assert.match(result.stderr, message);
  }
});

test("a run's worker that cannot start is reported with the end of its log, the reason included", async () => {
  const broken = await startEnvironment({ instances: 1, partitions: 1, verbose: false, workerEnv: { PUSH_MERGE_WINDOW_MS: '20000' } });
  try {
    await assert.rejects(broken.waitReady(60_000), (error: Error) => {
      assert.match(error.message, /^worker 0 exited with 1; its log ends:/);
      assert.match(error.message, /PUSH_MERGE_WINDOW_MS: must be within \[1, 10000\], got 20000/);
      return true;
    });
  } finally {
    await broken.close();
  }
});
