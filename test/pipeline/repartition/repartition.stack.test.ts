/**
 * Growing the pipeline from 2 to 4 partitions while traffic flows (docs/operations.md "Growing
 * partitions", pushctl repartition): the producers switch to the new generation halfway through the
 * timeline, the old generation's decisions (with the fan-out fused, the default) or its decisions and
 * fan-out (PUSH_FAN_OUT_FUSED=false) drain and stop (in that order), the cut-over
 * copies their state, and the new generation's workers take over. Every expected push must reach
 * its vendor exactly once with its (uid, conv) collapse id (chaos/scenario.ts computes them from the
 * scenario alone), and every merge window and presence entry the old generation left in its
 * changelogs (read here with a plain consumer and the stores' own serdes: the independent model)
 * must sit in the new changelog, unchanged, in the partition of its uid under 4 partitions.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { uniqueName } from '../../support/stack.ts';
import { deleteRunTopics } from '../../support/run-topics.ts';
import { startEmulators, type StartedEmulators } from '../../../emulators/index.ts';
import { startWorker, type RunningWorker } from '../../../pipeline/worker.ts';
import { trafficProducer, type TrafficProducer } from '../../../demo/traffic.ts';
import { buildScenario } from '../../../chaos/scenario.ts';
import { recordings, verifyPushes } from '../../../chaos/verify.ts';
import { readChangelog, uidPartition, type ChangelogEntry } from '../../../chaos/repartition-model.ts';
import { chaosAdmin, sleep } from '../../../chaos/drain.ts';
import { groupStatus } from '../../../pipeline/group-status.ts';
import { createLogger } from '../../../common/log.ts';
import { changelogTopicName } from '../../../topology/changelog.ts';
import { convWindowsStoreSerde, decodeConvWindows } from '../../../processors/merge/window-codec.ts';
import { presenceStoreSerde } from '../../../processors/online-filter/presence.ts';
import { prepareGeneration } from '../../../pipeline/repartition/generation.ts';
import { cutover, NotDrainedError } from '../../../pipeline/repartition/cutover.ts';

const FROM_PARTITIONS = 2;
const TO_PARTITIONS = 4;
/** Long enough that the bursts of the last seconds before the cut-over still have their windows open at it. */
const MERGE_WINDOW_MS = 10_000; // the longest PUSH_MERGE_WINDOW_MS allows

/** Waits until the group has processed every record of `topics` it reads. */
async function waitCaughtUp(group: string, topics: readonly string[], timeoutMs = 60_000): Promise<void> {
  const admin = chaosAdmin();
  await admin.connect();
  try {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const status = await groupStatus(admin, group);
      const behind = status.topics.filter((t) => topics.includes(t.topic)).reduce((n, t) => n + t.lag, 0);
      if (status.topics.length > 0 && behind === 0) return;
      if (Date.now() > deadline) throw new Error(`${group} still ${behind} records behind on ${topics.join(', ')}`);
      await sleep(300);
    }
  } finally {
    await admin.disconnect();
  }
}

async function waitReady(worker: RunningWorker, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!worker.ready()) {
    if (Date.now() > deadline) throw new Error('worker not ready');
    await sleep(200);
  }
}

async function repartitionDuringLoad(t: TestContext, fused: boolean): Promise<void> {
  const run = uniqueName(fused ? 'rp' : 'rpa');
  const g1 = { prefix: `${run}.g1.`, applicationId: `${run}-g1` };
  const g2 = { prefix: `${run}.g2.`, applicationId: `${run}-g2` };
  const appId = `app-${run}`;
  const dir = mkdtempSync(join(tmpdir(), 'repartition-'));
  const logger = createLogger({ service: 'repartition-test' });
  const workers: RunningWorker[] = [];
  const producers: TrafficProducer[] = [];
  let emulators: StartedEmulators | undefined;
  try {
    emulators = await startEmulators({ apps: [appId] });
    const appsConfig = join(dir, 'apps.json');
    writeFileSync(appsConfig, JSON.stringify(emulators.rawAppsConfig), { mode: 0o600 });
    const envOf = (g: typeof g1, partitions: number, stages: string) => ({
      ...process.env,
      PUSH_APPS_CONFIG: appsConfig,
      PUSH_METRICS_PORT: '0',
      PUSH_MERGE_WINDOW_MS: String(MERGE_WINDOW_MS),
      // Quotas far above the run's pushes: the ledgers fill without throttling anything.
      PUSH_VENDOR_QUOTAS: ['apns', 'fcm', 'hms', 'xiaomi', 'oppo', 'vivo'].map((v) => `${v}:*=1000000`).join(','),
      PUSH_TOPIC_PREFIX: g.prefix,
      PUSH_APPLICATION_ID: g.applicationId,
      PUSH_PARTITIONS: String(partitions),
      PUSH_STAGES: stages,
      // Fused, the decisions' stores keep the fan-out's parked and checkpointed dispatches too (their
      // placement: test/pipeline/repartition/store-keys.test.ts); apart, the fan-out drains what the decisions wrote.
      PUSH_FAN_OUT_FUSED: String(fused),
    });
    const start = async (g: typeof g1, partitions: number, stage: string) => {
      const worker = await startWorker(envOf(g, partitions, stage), logger.child({ generation: g.applicationId, stage }));
      workers.push(worker);
      return worker;
    };
    const stop = async (worker: RunningWorker) => {
      workers.splice(workers.indexOf(worker), 1);
      await worker.close();
    };
    // The stages of a generation: the decisions, then (apart) the fan-out.
    const startGeneration = async (g: typeof g1, partitions: number) => {
      const started = [await start(g, partitions, 'decisions'), ...(fused ? [] : [await start(g, partitions, 'fan-out')])];
      await Promise.all(started.map((w) => waitReady(w)));
      return started;
    };
    const [decisions1, fanOut1] = await startGeneration(g1, FROM_PARTITIONS);
    await prepareGeneration(g2, TO_PARTITIONS);
    const traffic1 = await trafficProducer(g1.prefix);
    const traffic2 = await trafficProducer(g2.prefix);
    producers.push(traffic1, traffic2);

    const scenario = buildScenario({
      users: 60,
      messagesPerUser: 1,
      burstEvery: 1,
      durationMs: 16_000,
      startMs: Date.now() + 4000,
      appId,
      tokenFor: emulators.token,
      uidPrefix: `${run}-u`,
    });
    for (const dead of scenario.deadTokens) emulators[dead.vendor].deadTokens.add(dead.token);
    await traffic1.send('tokens', scenario.setup.tokens);
    await traffic1.send('settings', scenario.setup.settings);
    await traffic1.send('presence', scenario.setup.presence);

    // Producers switch to the new generation halfway through the timeline; it waits there for its workers.
    const cut = scenario.timeline[Math.floor(scenario.timeline.length / 2)]!.at;
    await traffic1.play(scenario.timeline.filter((r) => r.at < cut));
    const secondHalf = traffic2.play(scenario.timeline.filter((r) => r.at >= cut));
    secondHalf.catch(() => undefined); // awaited below; a failure before then must not surface as this one

    // While the old workers run, the cut-over refuses and names them.
    await assert.rejects(
      cutover({ from: g1, to: g2, partitions: TO_PARTITIONS, quietMs: 200 }),
      (error: unknown) =>
        error instanceof NotDrainedError &&
        [`${g1.applicationId}-decisions has 1 member`, ...(fused ? [] : [`${g1.applicationId}-fan-out has 1 member`])].every((m) => error.message.includes(m)),
    );

    // The runbook's order: the decisions drain their inputs and stop, then (apart) the fan-out drains what they wrote.
    await waitCaughtUp(`${g1.applicationId}-decisions`, [`${g1.prefix}im.message.persisted`, `${g1.prefix}im.presence`]);
    await stop(decisions1!);
    if (fanOut1) {
      await waitCaughtUp(`${g1.applicationId}-fan-out`, [`${g1.prefix}push.dispatch`, `${g1.prefix}im.presence`]);
      await stop(fanOut1);
    }
    const stoppedAt = Date.now();

    // The independent model: what the old generation's changelogs hold, read before the copy.
    const windowsTopic = (g: typeof g1) => changelogTopicName(`${g.applicationId}-decisions`, 'merge-windows');
    const presenceTopic = (g: typeof g1) => changelogTopicName(`${g.applicationId}-decisions`, 'online-filter-presence');
    const ledgerTopic = (g: typeof g1) => changelogTopicName(`${g.applicationId}-decisions`, 'policy-quota-ledger');
    const byKey = (entries: ChangelogEntry[]) => new Map(entries.map((e) => [e.key, e]));
    const windows = byKey(await readChangelog(windowsTopic(g1)));
    const presence = byKey(await readChangelog(presenceTopic(g1)));
    const used = new Map<string, number>();
    for (const e of await readChangelog(ledgerTopic(g1))) used.set(e.key, (used.get(e.key) ?? 0) + Number(e.value.toString()));
    const open = [...windows].filter(([, w]) =>
      [...decodeConvWindows(convWindowsStoreSerde.deserialize(w.value)).values()].some((d) => d.open && d.until > stoppedAt),
    );
    for (const [, p] of presence) presenceStoreSerde.deserialize(p.value); // every entry decodes
    t.diagnostic(
      `old generation at the cut-over: ${windows.size} merge-window keys (${open.length} open), ${presence.size} presence entries, quota used ${JSON.stringify(Object.fromEntries(used))}`,
    );
    assert.ok(open.length > 0, 'the cut-over must find open merge windows, or the test shows nothing about them');
    assert.ok(presence.size > 0 && used.size > 0);

    const copyStarted = Date.now();
    const result = await cutover({ from: g1, to: g2, partitions: TO_PARTITIONS, quietMs: 1500 });
    t.diagnostic(`cut-over (drain check with 1.5 s quiet, state and tables copied) took ${Date.now() - copyStarted} ms`);
    for (const c of result.state) t.diagnostic(`${c.from}: ${c.read} read, ${c.written} written, ${c.dropped} dropped`);

    const uidOf = (key: string) => (JSON.parse(key) as string[])[0]!;
    for (const [topic, model] of [
      [windowsTopic(g2), windows],
      [presenceTopic(g2), presence],
    ] as const) {
      const copied = byKey(await readChangelog(topic));
      for (const [key, entry] of model) {
        const found = copied.get(key);
        assert.ok(found, `${topic}: ${key} missing after the cut-over`);
        assert.equal(found.partition, uidPartition(uidOf(key), TO_PARTITIONS), `${topic}: ${key} not in its uid's partition`);
        assert.deepEqual(found.value, entry.value, `${topic}: ${key} changed`);
      }
      assert.equal(copied.size, model.size, `${topic}: entries nobody had`);
    }
    // The ledger's share is daily / partitions: every new partition starts with its share of what the old ones used.
    const ledger = await readChangelog(ledgerTopic(g2));
    for (const [key, total] of used)
      for (let p = 0; p < TO_PARTITIONS; p++) {
        const entry = ledger.find((e) => e.key === key && e.partition === p);
        assert.equal(Number(entry?.value.toString()), Math.ceil(total / TO_PARTITIONS), `${key} in partition ${p}`);
      }

    // The new generation takes over: it restores the copied state and processes what waited for it.
    await startGeneration(g2, TO_PARTITIONS);
    const tookOverAt = Date.now();
    await secondHalf;
    const lastAt = scenario.timeline.at(-1)!.at;
    // Drained: the last merge window closed, the vendors quiet for 3 s, and both groups caught up.
    let seen = -1;
    let stableSince = Date.now();
    const deadline = Date.now() + 90_000;
    for (;;) {
      const n = recordings(emulators, appId).length;
      if (n !== seen) [seen, stableSince] = [n, Date.now()];
      // Windows the waiting records open in the new generation close a merge window after it took over.
      if (Date.now() > Math.max(lastAt, tookOverAt) + MERGE_WINDOW_MS + 2000 && Date.now() - stableSince > 3000) break;
      assert.ok(Date.now() < deadline, 'the vendors kept receiving pushes for 90 s');
      await sleep(500);
    }
    await waitCaughtUp(`${g2.applicationId}-decisions`, [`${g2.prefix}im.message.persisted`, `${g2.prefix}im.presence`], 30_000);
    if (!fused) await waitCaughtUp(`${g2.applicationId}-fan-out`, [`${g2.prefix}push.dispatch`, `${g2.prefix}im.presence`], 30_000);

    // Once the new generation has run, copying the old state again would overwrite its own: refused.
    await assert.rejects(cutover({ from: g1, to: g2, partitions: TO_PARTITIONS, quietMs: 200 }), /has already run/);

    const pushes = verifyPushes(scenario, recordings(emulators, appId));
    t.diagnostic(`expected ${pushes.expected}, delivered ${pushes.delivered}, duplicates ${pushes.duplicates}, optional ${pushes.optionalDelivered}`);
    assert.deepEqual(pushes.lost, [], 'expected pushes that never reached their vendor');
    assert.equal(pushes.duplicates, 0, 'pushes that reached their vendor more than once');
    assert.deepEqual(pushes.unexpected, [], 'pushes that should not have gone out');
    assert.deepEqual(pushes.wrongCollapseId, []);
    assert.equal(pushes.delivered, scenario.expectedPushes.length);
  } finally {
    for (const w of workers.reverse()) await w.close().catch(() => undefined);
    for (const p of producers) await p.close().catch(() => undefined);
    await emulators?.close();
    rmSync(dir, { recursive: true, force: true });
    await deleteRunTopics(run);
  }
}

test(
  'repartition 2 → 4 during load, fan-out fused: every push once, open merge windows and presence carried to their new partitions',
  { timeout: 180_000 },
  (t) => repartitionDuringLoad(t, true),
);

test('repartition 2 → 4 during load, fan-out apart: the same, draining the decisions, then the fan-out', { timeout: 180_000 }, (t) =>
  repartitionDuringLoad(t, false),
);
