/**
 * `pushctl trace` at scale on the real stack: 400 users, each with a
 * scripted history (test/cli/commands/trace-history.ts: offline push, online + ACK, quiet hours, mute with
 * and without an @mention, merge burst, dead token, quota re-route, two devices), run through the
 * whole pipeline (workers, Kafka, registry, MariaDB sharded by uid over four databases
 * (PUSH_MYSQL_SHARDS), ClickHouse, vendor emulators). For every user
 * the trace must reproduce that history exactly: the outcome and the reason of every message on
 * every device, and the facts that say why (heartbeat age, hold window, quiet hours in the user's
 * zone, mention override, private mode, the channel chosen and why), against the timeline the
 * scenario builds on its own. Every user is traced through the library `pushctl trace` prints
 * (pipeline/trace.ts); one user of each history also through the pushctl process, whose `--json`
 * must print the same lines.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startEnvironment, type Environment } from '../../../demo/environment.ts';
import { trafficProducer, type TrafficProducer } from '../../../demo/traffic.ts';
import { sleep, waitDrained } from '../../../chaos/drain.ts';
import { recordings } from '../../../chaos/verify.ts';
import { readEndpoints } from '../../../common/endpoints.ts';
import { connectionFromEndpoints, createClickhouseClient, sqlString } from '../../../sinks/clickhouse/client.ts';
import { trace, type TraceLine } from '../../../pipeline/trace.ts';
import { shardOf } from '../../../sinks/mysql/shards.ts';
import { shardDatabases, type ShardDatabases } from '../../sinks/mysql/shard-stack.ts';
import { eachConcurrently } from '../../support/concurrency.ts';
import { deleteRunTopics } from '../../support/run-topics.ts';
import { pushctl } from '../pushctl-process.ts';
import {
  buildHistories,
  decisionKey,
  factProblems,
  HISTORIES,
  QUIET_ZONE,
  workerSettings,
  type ExpectedLine,
  type HistoryScenario,
  type UserExpectation,
} from './trace-history.ts';

const USERS = 400;
const SHARDS = 4;
const DECISION_STAGES = new Set(['online-filter', 'merge', 'policy', 'fan-out']);

/** What is wrong with a user's trace; empty when it reproduces the history exactly. */
function problemsOf(lines: readonly TraceLine[], want: UserExpectation): string[] {
  const decisions = lines.filter((l) => DECISION_STAGES.has(l.stage));
  const got = new Map<string, TraceLine[]>();
  for (const l of decisions) got.set(decisionKey(l), [...(got.get(decisionKey(l)) ?? []), l]);
  // A burst is merged (its middle message has a merge line) or, after a stall, pushed apart: never a mix.
  const burstMerged = want.burst?.merged.some((e) => e.stage === 'merge' && got.has(decisionKey(e))) ?? false;
  const expected: ExpectedLine[] = [...want.always, ...(want.burst ? (burstMerged ? want.burst.merged : want.burst.apart) : [])];
  const problems: string[] = [];
  const wantKeys = expected.map(decisionKey).sort();
  const gotKeys = decisions.map(decisionKey).sort();
  if (JSON.stringify(wantKeys) !== JSON.stringify(gotKeys)) problems.push(`decisions:\n got ${gotKeys.join('\n     ')}\nwant ${wantKeys.join('\n     ')}`);
  for (const e of expected) {
    const line = got.get(decisionKey(e))?.[0];
    if (line) problems.push(...factProblems(line.facts, e.facts).map((p) => `${decisionKey(e)}: ${p}`));
  }
  const persisted = lines.filter((l) => l.stage === 'persisted').map((l) => l.msg_id);
  if (JSON.stringify([...persisted].sort()) !== JSON.stringify([...want.messages].sort())) problems.push(`persisted: ${persisted.join(',')}`);
  const invalidated = lines.filter((l) => l.stage === 'token').map((l) => `${l.device_id}|${l.vendor}`);
  if (JSON.stringify(invalidated.sort()) !== JSON.stringify([...want.invalidated].sort())) problems.push(`invalidated: ${invalidated.join(',')}`);
  return problems;
}

/** The words must say the recorded why, as a support engineer would read it to the user. */
function checkWords(l: TraceLine): void {
  const f = l.facts;
  if (l.reason === 'online_ack')
    assert.match(
      l.words,
      f.ack === 'before'
        ? /had acknowledged the message before/
        : /acknowledged the message 100 ms later \(its last heartbeat was \d+ ms before; a push waits up to 5000 ms/,
    );
  if (l.reason === 'dnd') assert.ok(l.words.includes(`quiet hours (${f.qh!.replace('-', ' to ')} in ${QUIET_ZONE}; it was ${f.local} there)`), l.words);
  if (l.reason === 'mute') assert.match(l.words, /muted this conversation$/);
  if (l.outcome === 'merged')
    assert.match(
      l.words,
      /merged into the notification for seq 3 of this conversation \(the messages of a conversation within 3000 ms of a burst's first push/,
    );
  if (l.outcome !== 'accepted') return;
  assert.match(
    l.words,
    f.hb ? new RegExp(`the device was offline \\(no live connection to the IM server\\), its last heartbeat was ${f.hb} ms before`) : /the device was offline/,
  );
  if (f.why === 'quota') assert.match(l.words, /sent through FCM because Xiaomi had used up today's quota \(re-routed\)/);
  if (f.ch === 'hms' && l.vendor === 'fcm') assert.match(l.words, /sent through FCM, the device's next channel after Huawei \(HMS\) failed/);
  if (f.why === 'only') assert.match(l.words, /the device's only push token/);
  if (f.over) assert.match(l.words, /the @mention \(DIRECT\) overrode the user's mute/);
  if (f.private) assert.match(l.words, /private mode, so only the generic text was shown/);
}

/** Waits until ClickHouse holds at least `min` outcome events of the app and the count stops moving. */
async function waitEvents(appId: string, min: number, timeoutMs: number): Promise<number> {
  const client = createClickhouseClient(connectionFromEndpoints(readEndpoints()));
  const deadline = Date.now() + timeoutMs;
  let last = -1;
  try {
    for (;;) {
      const rs = await client.query({
        query: `SELECT uniqExact(event_id) AS n FROM push_events WHERE app_id = ${sqlString(appId)} AND source = 'outcome'`,
        format: 'JSONEachRow',
      });
      const n = Number((await rs.json<{ n: string | number }>())[0]?.n ?? 0);
      if ((n >= min && n === last) || Date.now() > deadline) return n;
      last = n;
      await sleep(2000);
    }
  } finally {
    await client.close();
  }
}

test(
  `pushctl trace reproduces the scripted history of each of ${USERS} users: every message, device, outcome, reason and why`,
  { timeout: 900_000 },
  async (t) => {
    let env: Environment | undefined;
    let traffic: TrafficProducer | undefined;
    let shards: ShardDatabases | undefined;
    const saved = { url: process.env.PUSH_MYSQL_URL, shards: process.env.PUSH_MYSQL_SHARDS };
    try {
      // Four uid shards (docs/data.md, "Shards"): the workers write to them, trace (here and in pushctl) reads the user's.
      shards = await shardDatabases('trace_shards', SHARDS);
      const mysqlEnv = { PUSH_MYSQL_URL: shards.urls[0]!, PUSH_MYSQL_SHARDS: shards.urls.join(',') };
      Object.assign(process.env, mysqlEnv);
      env = await startEnvironment({ instances: 1, partitions: 4, workerEnv: { ...workerSettings(), ...mysqlEnv }, verbose: false });
      const e = env;
      const setupAt = Date.now();
      const build = (startMs: number): HistoryScenario =>
        buildHistories({ users: USERS, uidPrefix: `${e.run}-t`, appId: e.appId, setupAt, startMs, durationMs: 20_000, tokenFor: e.emulators.token });
      const setup = build(setupAt);
      for (const dead of setup.deadTokens) e.emulators[dead.vendor].deadTokens.add(dead.token);
      await e.waitReady();
      traffic = await trafficProducer(e.topicPrefix);
      await traffic.send('tokens', setup.setup.tokens);
      await traffic.send('settings', setup.setup.settings);
      await traffic.send('presence', setup.setup.presence);
      await waitDrained(e.applicationId, () => true, { intervalMs: 1000, timeoutMs: 180_000 });

      const scenario = build(Date.now() + 1000);
      await traffic.play(scenario.timeline);
      let seen = -1;
      let stableSince = Date.now();
      await waitDrained(
        e.applicationId,
        () => {
          const n = recordings(e.emulators, e.appId).length;
          if (n !== seen) [seen, stableSince] = [n, Date.now()];
          return Date.now() - stableSince > 5000;
        },
        { timeoutMs: 300_000 },
      );
      const minimum = [...scenario.expected.values()].reduce(
        (n, x) => n + x.always.length + Math.min(x.burst?.merged.length ?? 0, x.burst?.apart.length ?? 0),
        0,
      );
      const events = await waitEvents(e.appId, minimum, 120_000);
      t.diagnostic(
        `${scenario.timeline.filter((r) => r.topic === 'persisted').length} messages, ${recordings(e.emulators, e.appId).length} vendor requests, ${events} outcome events in ClickHouse`,
      );

      const failures: string[] = [];
      const traced = new Map<string, TraceLine[]>();
      let burstsMerged = 0;
      // Eight users at a time: each trace is a few MySQL and ClickHouse queries, and a retry waits 2 s.
      await eachConcurrently(scenario.users, 8, async (user) => {
        const want = scenario.expected.get(user.uid)!;
        let problems: string[] = [];
        for (let attempt = 0; attempt < 4; attempt++) {
          const lines = await trace({ uid: user.uid, since: '1h' });
          problems = problemsOf(lines, want);
          traced.set(user.uid, lines);
          if (problems.length === 0) break;
          await sleep(2000);
        }
        if (problems.length > 0) failures.push(`${user.uid} (${user.history}):\n${problems.join('\n')}`);
        else if (want.burst && traced.get(user.uid)!.some((l) => l.outcome === 'merged')) burstsMerged++;
      });
      assert.deepEqual(failures.slice(0, 5), [], `${failures.length} of ${USERS} users' traces differ from their history`);
      // Stalls may split a burst, but most must have merged, or the merge lines were never checked.
      const bursts = scenario.users.filter((u) => u.history === 'burst').length;
      assert.ok(burstsMerged >= bursts / 2, `${burstsMerged} of ${bursts} bursts merged`);
      for (const lines of traced.values()) for (const l of lines) checkWords(l);

      // The users' task and token rows are spread over the four shards, each on the shard of its uid.
      for (let shard = 0; shard < SHARDS; shard++) {
        const uids = new Set<string>();
        for (const table of ['im_push_task', 'im_push_token']) {
          const [rows] = await shards.pools.shard(shard).query(`SELECT DISTINCT uid FROM ${table}`);
          for (const r of rows as Array<{ uid: string }>) uids.add(r.uid);
        }
        const mine = scenario.users.filter((u) => shardOf(u.uid, SHARDS) === shard).map((u) => u.uid);
        assert.ok(mine.length > 0, `shard ${shard} holds users`);
        assert.deepEqual([...uids].sort(), [...mine].sort(), `shard ${shard}: exactly its users' rows`);
      }

      // The command line prints the same lines, one JSON object each.
      for (const history of HISTORIES) {
        const user = scenario.users.find((u) => u.history === history)!;
        const out = await pushctl(['trace', user.uid, '--since', '1h', '--json'], mysqlEnv);
        assert.equal(out.code, 0, out.stderr);
        const printed = out.stdout
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l) as TraceLine);
        assert.deepEqual(problemsOf(printed, scenario.expected.get(user.uid)!), [], `${user.uid} (${history}) through pushctl`);
        assert.deepEqual(printed, await trace({ uid: user.uid, since: '1h' }), `${user.uid} (${history}): pushctl --json prints the library's lines`);
        if (history === 'quota' || history === 'online' || history === 'dnd')
          t.diagnostic(`${history} (shard ${shardOf(user.uid, SHARDS)}):\n${(await pushctl(['trace', user.uid, '--since', '1h'], mysqlEnv)).stdout}`);
      }
    } finally {
      await traffic?.close().catch(() => undefined);
      await env?.close();
      if (env) await deleteRunTopics(env.topicPrefix).catch(() => undefined);
      await shards?.drop();
      for (const [key, value] of [
        ['PUSH_MYSQL_URL', saved.url],
        ['PUSH_MYSQL_SHARDS', saved.shards],
      ] as const) {
        if (value === undefined) delete process.env[key];
        else process.env[key] = value;
      }
    }
  },
);
