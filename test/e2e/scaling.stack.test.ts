/**
 * Scaling the whole pipeline while traffic flows (docs/design.md, "Operations"): one worker
 * process, a 2nd and a 3rd added, then one stopped with SIGTERM and one with SIGKILL. Nothing may
 * be lost; a push may reach its vendor twice only inside the one window that docs/design.md,
 * "At most one visible notification", allows (crash between vendor acceptance and recording it),
 * and then with the same collapse id. `groupStatus` must show the partitions moving between the
 * members.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startRun, type PipelineRun, type RunVerdict } from '../../chaos/harness.ts';
import { assignmentOf, chaosAdmin, sleep } from '../../chaos/drain.ts';
import { stopWorker } from '../../chaos/faults.ts';
import { groupStatus, type GroupStatus } from '../../pipeline/group-status.ts';

const PARTITIONS = 6;

/**
 * Partitions each member holds (of `topic`, else of all). The decisions group runs one sub-topology
 * over four co-partitioned topics: a member holds a task's partition of every one of them.
 */
const partitionsOf = (s: GroupStatus, topic?: string) =>
  s.members.map((m) => Object.entries(m.assignment).reduce((n, [tp, ps]) => n + (topic === undefined || tp === topic ? ps.length : 0), 0));

/** `members` members, every one holding some partitions. */
const spreadOver = (s: GroupStatus, members: number) => s.members.length === members && partitionsOf(s).every((n) => n > 0);

test('workers added and removed mid-stream: nothing lost, duplicates only with the same collapse id, partitions move', { timeout: 300_000 }, async (t) => {
  let run: PipelineRun | undefined;
  let verdict: RunVerdict;
  const samples: GroupStatus[] = [];
  const admin = chaosAdmin();
  await admin.connect();
  try {
    run = await startRun({ instances: 1, partitions: PARTITIONS, users: 360, messagesPerUser: 3, burstEvery: 8, durationMs: 40_000 });
    const r = run;
    const group = `${r.env.applicationId}-decisions`;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const status = await groupStatus(admin, group).catch(() => undefined); // a failed sample is skipped; the next comes in a second
        if (status) samples.push(status);
        await sleep(1000);
      }
    })();
    const playing = r.play();
    // Each step waits for the membership the previous one leads to (with a bound): on a busy box a
    // rebalance can outlast any fixed pause, and a member stopped before it got partitions tests nothing.
    const reached = async (members: number) => {
      for (const deadline = Date.now() + 60_000; !samples.some((s) => spreadOver(s, members)) && Date.now() < deadline;) await sleep(500);
    };
    const steps = (async () => {
      await sleep(4000);
      await r.env.startWorker(1);
      await reached(2);
      await r.env.startWorker(2);
      await reached(3);
      await sleep(3000);
      await stopWorker(r.env, 1, 'SIGTERM');
      await sleep(6000);
      await stopWorker(r.env, 2, 'SIGKILL');
    })();
    await Promise.all([playing, steps]);
    await r.drain(150_000);
    // The SIGKILLed member stays in the group until its session times out, which outlasts the drain
    // when it was killed after the input ended (a busy box runs the steps past it): wait for the
    // group to settle on the survivor.
    for (const deadline = Date.now() + 60_000; !(samples.length > 0 && spreadOver(samples.at(-1)!, 1)) && Date.now() < deadline;) await sleep(500);
    sampling = false;
    await sampler;
    samples.push(await groupStatus(admin, group));
    verdict = await r.verdict(45_000);
  } finally {
    await admin.disconnect();
    await run?.close();
  }
  const { pushes, outcomes, arrival } = verdict;
  for (const exit of run.startupExits) t.diagnostic(`worker ${exit.worker} exited with ${exit.code} while starting and was restarted`);
  t.diagnostic(
    `expected pushes ${pushes.expected}, delivered ${pushes.delivered}, duplicates ${pushes.duplicates} (sharing the collapse id: ${pushes.duplicatesSharingCollapseId}), burst middles pushed after a stalled window ${pushes.optionalDelivered}`,
  );

  // Membership: 1 → 3 members, the work spread over all three, then back to one holding everything.
  const persisted = `${run.env.topicPrefix}im.message.persisted`;
  const spread = samples.find((s) => spreadOver(s, 3));
  assert.ok(spread, `never saw three members sharing the partitions: ${samples.map((s) => partitionsOf(s).join('+')).join(' ')}`);
  assert.equal(
    partitionsOf(spread, persisted).reduce((a, b) => a + b, 0),
    PARTITIONS,
  );
  const last = samples.at(-1)!;
  assert.equal(last.members.length, 1, 'one member left after SIGTERM and SIGKILL');
  assert.equal(partitionsOf(last, persisted)[0], PARTITIONS, 'the last member holds every partition');
  t.diagnostic(`partitions per member over time: ${samples.map((s) => partitionsOf(s).join('+')).join(' ')}`);
  const holders = new Map<string, Set<string>>();
  for (const s of samples)
    for (const [member, parts] of Object.entries(assignmentOf(s))) for (const p of parts) holders.set(p, (holders.get(p) ?? new Set()).add(member));
  assert.ok(
    [...holders.values()].some((members) => members.size >= 2),
    'no partition ever moved between members',
  );

  // Nothing lost; duplicates only under the same collapse id (the device replaces them).
  assert.deepEqual(pushes.lost, [], 'expected pushes that never reached their vendor');
  assert.equal(pushes.duplicatesSharingCollapseId, pushes.duplicates, 'a duplicate push carried another collapse id');
  assert.deepEqual(pushes.unexpected, [], 'pushes that should not have gone out');
  assert.deepEqual(pushes.wrongCollapseId, []);
  assert.deepEqual(outcomes.missing, [], 'inputs without an outcome');
  assert.deepEqual(outcomes.conflicting, [], 'inputs with more than one outcome class');
  assert.deepEqual(outcomes.mismatched, [], 'inputs in another class than expected');
  assert.ok(arrival.exact, `ClickHouse vs emulators: ${JSON.stringify(arrival.byVendor)}`);
});
