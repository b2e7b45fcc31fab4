/**
 * `npm run chaos -- --repartition 12`: the runbook of docs/operations.md "Growing partitions" under
 * the chaos workload. The old generation (the environment's prefix, `--from` partitions, default 6)
 * runs every stage in three worker processes (decisions/business/campaigns, the fan-outs,
 * receipts/ClickHouse) and a receipt receiver; halfway through the timeline the producers and the
 * receiver switch to the new generation (`--repartition` partitions), the old workers are stopped
 * in pipeline order once drained, `pushctl repartition cutover` runs, and the new generation's
 * workers take over. Verdicts: every expected push once (no duplicate with another collapse id),
 * every input in one outcome class (both generations' push.outcomes), arrival exact (ClickHouse vs
 * the emulators), no stalled partition, and every merge window and presence entry of the old
 * changelogs (read with a plain consumer and the stores' serdes) in the new changelogs at their
 * uid's partition. Writes .stack/chaos/repartition-<run>.json.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startEnvironment } from '../demo/environment.ts';
import { freePort } from '../demo/ports.ts';
import { trafficProducer, type TrafficProducer } from '../demo/traffic.ts';
import { readEndpoints } from '../common/endpoints.ts';
import { ensureDir, stackPath } from '../stack/paths.ts';
import { queryArrival } from '../sinks/clickhouse/arrival-query.ts';
import { connectionFromEndpoints, createClickhouseClient } from '../sinks/clickhouse/client.ts';
import { changelogTopicName } from '../topology/changelog.ts';
import { convWindowsStoreSerde, decodeConvWindows } from '../processors/merge/window-codec.ts';
import { prepareGeneration, type Generation } from '../pipeline/repartition/generation.ts';
import { cutover } from '../pipeline/repartition/cutover.ts';
import { buildScenario } from './scenario.ts';
import { collectOutcomes, type Collector } from './collect.ts';
import { emulatorArrival, recordings, verifyOutcomes, verifyPushes } from './verify.ts';
import { chaosAdmin, sleep } from './drain.ts';
import { lagging, startForwarder, startProcess, stop, waitCaughtUp, waitReady, type Proc } from './repartition-processes.ts';
import type { PushOutcome } from '../processors/model/records.ts';
import { readChangelog, uidPartition } from './repartition-model.ts';

export interface RepartitionRunOptions {
  readonly from: number;
  readonly to: number;
  readonly users: number;
  readonly messagesPerUser: number;
  readonly durationMs: number;
  /** Leave the run's topics on the broker (to inspect them); default false. */
  readonly keepTopics?: boolean;
}

/** The worker processes of a generation, in the order the runbook stops them. */
const GROUPS = [
  { name: 'decide', stages: ['campaigns', 'decisions', 'business'] },
  { name: 'fan-out', stages: ['fan-out', 'fan-out-business'] },
  { name: 'account', stages: ['receipts', 'clickhouse'] },
] as const;
const ALL_STAGES = GROUPS.flatMap((g) => [...g.stages]);

const say = (line: string) => console.log(`[repartition] ${line}`);

/** Every entry of `store`'s changelog in `from`, present unchanged in `to`'s at its uid's partition: the keys that are not. */
async function carried(
  from: Generation,
  to: Generation,
  store: string,
  partitions: number,
  stoppedAt: number,
): Promise<{ entries: number; open: number; missing: string[] }> {
  const old = await readChangelog(changelogTopicName(`${from.applicationId}-decisions`, store));
  const copied = new Map((await readChangelog(changelogTopicName(`${to.applicationId}-decisions`, store))).map((e) => [e.key, e]));
  const missing = old
    .filter((e) => {
      const c = copied.get(e.key);
      return !c || c.partition !== uidPartition((JSON.parse(e.key) as string[])[0]!, partitions) || !c.value.equals(e.value);
    })
    .map((e) => e.key);
  // Open when the old decisions stopped: windows the new generation must close.
  const open =
    store === 'merge-windows'
      ? old.filter((e) => [...decodeConvWindows(convWindowsStoreSerde.deserialize(e.value)).values()].some((w) => w.open && w.until > stoppedAt)).length
      : 0;
  return { entries: old.length, open, missing };
}

export async function runRepartition(o: RepartitionRunOptions): Promise<Record<string, unknown>> {
  const startedAtMs = Date.now();
  const env = await startEnvironment({ instances: 0, partitions: o.from, verbose: true });
  const g1: Generation = { prefix: env.topicPrefix, applicationId: env.applicationId };
  const g2: Generation = { prefix: `${env.run}.g2.`, applicationId: `${env.applicationId}-g2` };
  const procs: Proc[] = [];
  const producers: TrafficProducer[] = [];
  const collectors: Array<Collector<PushOutcome>> = [];
  const start = async (g: Generation, partitions: number, name: string, command: 'run' | 'receiver', extra: Record<string, string> = {}) => {
    // The longest merge window: the bursts of the last seconds before the old decisions stop still have theirs open then.
    const p = await startProcess(env, g, partitions, name, command, { PUSH_MERGE_WINDOW_MS: '10000', ...extra });
    procs.push(p);
    return p;
  };
  const receiverPort = async (g: Generation, partitions: number, name: string) => {
    const port = await freePort();
    await start(g, partitions, name, 'receiver', { PUSH_RECEIPTS_PORT: String(port), PUSH_RECEIPTS_METRICS_PORT: String(await freePort()) });
    return port;
  };
  try {
    const port1 = await receiverPort(g1, o.from, 'g1-receiver');
    const forwarder = await startForwarder(env.receiptPort, port1);
    const workers1 = [];
    for (const group of GROUPS) workers1.push(await start(g1, o.from, `g1-${group.name}`, 'run', { PUSH_STAGES: group.stages.join(',') }));
    for (const w of workers1) await waitReady(w);
    await prepareGeneration(g2, o.to);
    const traffic1 = await trafficProducer(g1.prefix);
    const traffic2 = await trafficProducer(g2.prefix);
    producers.push(traffic1, traffic2);
    for (const g of [g1, g2]) collectors.push(await collectOutcomes(g.prefix, `${g.applicationId}-verdict-outcomes`));

    const startMs = Date.now() + 15_000;
    const scenario = buildScenario({
      users: o.users,
      messagesPerUser: o.messagesPerUser,
      durationMs: o.durationMs,
      startMs,
      appId: env.appId,
      tokenFor: env.emulators.token,
      uidPrefix: `${env.run}-u`,
    });
    for (const dead of scenario.deadTokens) env.emulators[dead.vendor].deadTokens.add(dead.token);
    await traffic1.send('tokens', scenario.setup.tokens);
    await traffic1.send('settings', scenario.setup.settings);
    await traffic1.send('presence', scenario.setup.presence);
    await waitCaughtUp(g1, ['decisions']);
    const cut = startMs + o.durationMs / 2;
    say(`${scenario.users.length} users, ${scenario.messages} messages over ${o.durationMs / 1000} s; producers switch at half time`);
    await traffic1.play(scenario.timeline.filter((r) => r.at < cut));

    // Step 2: the receiver and the producers move to the new generation.
    const switchedAt = Date.now();
    const port2 = await receiverPort(g2, o.to, 'g2-receiver');
    await sleep(3000); // the new receiver listening
    forwarder.retarget(port2);
    const secondHalf = traffic2.play(scenario.timeline.filter((r) => r.at >= cut));
    secondHalf.catch(() => undefined);

    // Step 3: the old generation stops in pipeline order, each group once its inputs are processed.
    const stopped: Record<string, number> = {};
    for (const [i, group] of GROUPS.entries()) {
      await waitCaughtUp(g1, group.stages);
      await stop(workers1[i]!);
      stopped[group.name] = Date.now() - switchedAt;
      say(`old ${group.name} stopped ${stopped[group.name]} ms after the switch`);
    }
    await stop(procs.find((p) => p.name === 'g1-receiver')!);
    const cutoverStarted = Date.now();
    const result = await cutover({ from: g1, to: g2, partitions: o.to, quietMs: 5000 });
    const cutoverMs = Date.now() - cutoverStarted;
    const copied = result.state.reduce((n, c) => n + c.written, 0);
    say(
      `cut-over in ${cutoverMs} ms (5 s of it the quiet period): ${copied} changelog records written, tables ${JSON.stringify(result.tables.map((t) => t.written))}`,
    );
    const decideStoppedAt = switchedAt + stopped.decide!;
    const windows = await carried(g1, g2, 'merge-windows', o.to, decideStoppedAt);
    const presence = await carried(g1, g2, 'online-filter-presence', o.to, decideStoppedAt);

    // Step 4: the new generation.
    const workers2 = [];
    for (const group of GROUPS) workers2.push(await start(g2, o.to, `g2-${group.name}`, 'run', { PUSH_STAGES: group.stages.join(',') }));
    for (const w of workers2) await waitReady(w);
    const resumedMs = Date.now() - switchedAt;
    say(`new generation ready ${resumedMs} ms after the switch`);
    await secondHalf;

    // Drained: the new groups caught up and the vendors and outcomes quiet.
    const lastAt = scenario.timeline.at(-1)!.at;
    let seen = -1;
    let stableSince = Date.now();
    const deadline = Date.now() + 300_000;
    for (;;) {
      const n = recordings(env.emulators, env.appId).length;
      if (n !== seen) [seen, stableSince] = [n, Date.now()];
      // Windows the backlog opened in the new generation close a merge window after it took over.
      if (Date.now() > Math.max(lastAt, switchedAt + resumedMs) + 12_000 && Date.now() - stableSince > 5000 && collectors[1]!.quietForMs() > 5000) break;
      if (Date.now() > deadline) break;
      await sleep(1000);
    }
    await waitCaughtUp(g2, ALL_STAGES, 120_000).catch((error: unknown) => say(String(error)));
    const stuck = await lagging(g2, ALL_STAGES);

    const received = recordings(env.emulators, env.appId);
    const truth = emulatorArrival(received);
    const clickhouse = createClickhouseClient(connectionFromEndpoints(readEndpoints()));
    let exact = false;
    let byVendor: Record<string, unknown> = {};
    try {
      const arrivalDeadline = Date.now() + 60_000;
      for (;;) {
        const rows = await queryArrival(clickhouse, 'vendor', Math.floor(startedAtMs / 1000) - 60, env.appId).catch(() => []);
        const vendors = [...new Set([...Object.keys(truth), ...rows.map((r) => r.key)])].sort();
        byVendor = Object.fromEntries(
          vendors.map((v) => {
            const row = rows.find((r) => r.key === v);
            return [v, { clickhouse: { submitted: row?.submitted ?? 0, arrived: row?.arrived ?? 0 }, emulators: truth[v] ?? { submitted: 0, arrived: 0 } }];
          }),
        );
        exact = vendors.every((v) => {
          const r = byVendor[v] as { clickhouse: { submitted: number; arrived: number }; emulators: { submitted: number; arrived: number } };
          return r.clickhouse.submitted === r.emulators.submitted && r.clickhouse.arrived === r.emulators.arrived;
        });
        if (exact || Date.now() > arrivalDeadline) break;
        await sleep(2000);
      }
    } finally {
      await clickhouse.close();
    }
    const pushes = verifyPushes(scenario, received);
    const outcomes = verifyOutcomes(scenario, [...collectors[0]!.records, ...collectors[1]!.records]);
    const summary = {
      nothingLost: pushes.lost.length === 0 && outcomes.missing.length === 0,
      noDuplicateWithAnotherCollapseId: pushes.duplicates === pushes.duplicatesSharingCollapseId && pushes.wrongCollapseId.length === 0,
      outcomesAsExpected: outcomes.conflicting.length === 0 && outcomes.mismatched.length === 0,
      arrivalExact: exact,
      noStalledPartition: stuck.length === 0,
      mergeWindowsCarried: windows.missing.length === 0 && windows.open > 0,
      presenceCarried: presence.missing.length === 0 && presence.entries > 0,
    };
    const report = {
      run: env.run,
      from: o.from,
      to: o.to,
      users: scenario.users.length,
      messages: scenario.messages,
      durationMs: o.durationMs,
      figures: { stoppedAfterSwitchMs: stopped, cutoverMs, copiedChangelogRecords: copied, newGenerationReadyAfterSwitchMs: resumedMs },
      state: result.state.map((c) => ({ from: c.from, read: c.read, written: c.written, dropped: c.dropped })),
      tables: result.tables,
      mergeWindows: { entries: windows.entries, openAtCutover: windows.open, missing: windows.missing.slice(0, 10) },
      presence: { entries: presence.entries, missing: presence.missing.slice(0, 10) },
      pushes: {
        expected: pushes.expected,
        delivered: pushes.delivered,
        duplicates: pushes.duplicates,
        sharingCollapseId: pushes.duplicatesSharingCollapseId,
        optionalDelivered: pushes.optionalDelivered,
        lost: pushes.lost.slice(0, 20),
        unexpected: pushes.unexpected.slice(0, 20),
      },
      outcomes: {
        inputs: outcomes.inputs,
        missing: outcomes.missing.slice(0, 20),
        conflicting: outcomes.conflicting.slice(0, 20),
        mismatched: outcomes.mismatched.slice(0, 20),
      },
      arrival: byVendor,
      stuck,
      summary,
    };
    const file = join(ensureDir(stackPath('chaos')), `repartition-${env.run}.json`);
    writeFileSync(file, JSON.stringify(report, null, 2));
    say(`report: ${file}`);
    await forwarder.close();
    return report;
  } finally {
    for (const p of procs) await stop(p);
    for (const c of collectors) await c.close().catch(() => undefined);
    for (const p of producers) await p.close().catch(() => undefined);
    await env.close();
    if (!o.keepTopics) await deleteRunTopics([g1.prefix, g2.prefix, g1.applicationId]);
  }
}

/** The run's topics (both generations, changelogs included) are removed from the shared broker. */
async function deleteRunTopics(prefixes: readonly string[]): Promise<void> {
  const admin = chaosAdmin();
  await admin.connect();
  try {
    const topics = (await admin.listTopics()).filter((t) => prefixes.some((p) => t.startsWith(p)));
    if (topics.length > 0) await admin.deleteTopics({ topics });
  } finally {
    await admin.disconnect();
  }
}
