/**
 * The whole pipeline end to end on the real stack: a scripted workload of a few hundred users
 * (offline, private mode, online and ACKing, quiet hours, muted, dead first token, no token, merge
 * bursts) through worker processes and all six vendor emulators, checked against an expectation the
 * test computes from the scenario alone (chaos/scenario.ts), never from the pipeline's code. Run with
 * the fan-out fused behind the decisions (PUSH_FAN_OUT_FUSED, the default) and as its own application.
 */
import { describe, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { kafkaClient } from '../../common/kafka-client.ts';
import { startRun, type PipelineRun, type RunVerdict } from '../../chaos/harness.ts';
import { readEndpoints } from '../../common/endpoints.ts';
import { topicName } from '../../pipeline/topics.ts';

/** Records on the run's push.dispatch, all partitions. */
async function dispatchRecords(run: PipelineRun): Promise<number> {
  const admin = kafkaClient(readEndpoints(), { clientId: 'end-to-end-test' }).admin();
  await admin.connect();
  try {
    const offsets = await admin.fetchTopicOffsets(topicName('dispatch', run.env.topicPrefix));
    return offsets.reduce((n, p) => n + Number(p.high) - Number(p.low), 0);
  } finally {
    await admin.disconnect();
  }
}

describe('the pipeline end to end', () => {
  test(
    'every expected push reaches the right vendor exactly once, every input ends in one class, arrival is exact; no push.dispatch record (fused)',
    { timeout: 240_000 },
    (t) => endToEnd(t, {}, (dispatches) => assert.equal(dispatches, 0, 'push.dispatch records')),
  );

  test('the same with the fan-out as its own application (PUSH_FAN_OUT_FUSED=false), fed through push.dispatch', { timeout: 240_000 }, (t) =>
    endToEnd(t, { PUSH_FAN_OUT_FUSED: 'false' }, (dispatches) =>
      assert.ok(dispatches > 0, 'the decisions handed the pushes to the fan-out through push.dispatch'),
    ),
  );
});

async function endToEnd(t: TestContext, workerEnv: Record<string, string>, checkDispatches: (records: number) => void): Promise<void> {
  let run: PipelineRun | undefined;
  let verdict: RunVerdict;
  let dispatches: number;
  try {
    run = await startRun({ instances: 1, partitions: 4, users: 300, messagesPerUser: 2, burstEvery: 10, durationMs: 12_000, workerEnv });
    await run.play();
    await run.drain(120_000);
    verdict = await run.verdict(45_000);
    dispatches = await dispatchRecords(run);
  } finally {
    await run?.close();
  }
  checkDispatches(dispatches);
  const { pushes, outcomes, arrival } = verdict;
  for (const exit of run.startupExits) t.diagnostic(`worker ${exit.worker} exited with ${exit.code} while starting and was restarted`);
  const scenario = run.scenario;

  // The scenario covers every vendor and every outcome class it claims to.
  for (const vendor of ['apns', 'fcm', 'hms', 'xiaomi', 'oppo', 'vivo']) assert.ok(pushes.byVendor[vendor]!.expected > 0, `no ${vendor} push in the scenario`);
  const classes = new Set(scenario.expectedClasses.values());
  for (const c of ['ACCEPTED', 'MERGED|ACCEPTED', 'SUPPRESSED/online_ack', 'SUPPRESSED/dnd', 'SUPPRESSED/mute', 'DROPPED/no_token'])
    assert.ok(classes.has(c), `scenario lacks ${c}`);

  // Pushes: each expected one exactly once, on the right vendor and token, nothing else.
  assert.deepEqual(pushes.lost, [], 'expected pushes that never reached their vendor (vendor|token|conv|seq)');
  assert.deepEqual(pushes.viaOtherChannel, [], "pushes that went out on another token than the device's first valid one");
  assert.equal(pushes.duplicates, 0, 'pushes that reached their vendor more than once');
  assert.deepEqual(pushes.unexpected, [], 'pushes that reached a vendor although the scenario suppresses them');
  assert.deepEqual(pushes.wrongCollapseId, [], 'pushes whose collapse id is not derived from (uid, conv_id)');
  assert.deepEqual(pushes.summaryLeaks, [], 'private-mode pushes that carried the message summary');
  assert.deepEqual(pushes.summaryMissing, [], 'ordinary pushes without their summary');
  assert.equal(pushes.delivered, scenario.expectedPushes.length);
  assert.equal(pushes.optionalDelivered, 0, "a burst's middle message was pushed although nothing stalled its merge window");

  // Outcomes: every (message, device) in exactly one class, the one the scenario says.
  assert.deepEqual(outcomes.missing, [], 'inputs without any outcome');
  assert.deepEqual(outcomes.conflicting, [], 'inputs with more than one outcome class');
  assert.deepEqual(outcomes.mismatched, [], 'inputs in another class than expected');
  assert.equal(outcomes.asExpected, outcomes.inputs);
  assert.equal(outcomes.byClass.MERGED, scenario.optionalPushes.length, "every burst's middle message merged");
  assert.equal(outcomes.foreign, 0, 'outcomes about inputs nobody sent');

  // Arrival rate per vendor from ClickHouse equals the emulators' own ground truth.
  assert.ok(arrival.exact, `ClickHouse vs emulators: ${JSON.stringify(arrival.byVendor)}`);
  const dead = scenario.deadTokens.length;
  assert.ok(dead > 0);
  const submitted = Object.values(arrival.byVendor).reduce((n, v) => n + v.emulators.submitted, 0);
  const arrived = Object.values(arrival.byVendor).reduce((n, v) => n + v.emulators.arrived, 0);
  assert.equal(arrived, scenario.expectedPushes.length, 'arrived pairs = expected pushes');
  assert.ok(submitted > arrived, 'dead first tokens were submitted and refused before the fallback');
}
