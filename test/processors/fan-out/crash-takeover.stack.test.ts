/**
 * A takeover after a crash writes exactly one ending per task (docs/design.md,
 * "At most one visible notification" and "Nothing is lost; every ending is counted"). Two fan-out
 * workers share the dispatches; one is SIGKILLed while dispatches of every outcome class are in
 * flight — accepted (FCM), dead token (APNs Unregistered), throttled (HMS 429 on every call) and
 * failed (FCM PERMISSION_DENIED). The killed worker commits rarely, so many of its tasks are final
 * in im_push_task while their outcomes were never committed: the survivor re-dispatches them and
 * must re-emit exactly the recorded outcomes, with their event ids, and nothing else. Checked in
 * push.outcomes and in ClickHouse (through the real ClickHouse sink).
 */
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { createLogger } from '../../../common/log.ts';
import { buildClickhouseSinkTopology } from '../../../pipeline/apps/clickhouse.ts';
import { registryValueSerdes } from '../../../pipeline/serdes.ts';
import type { PushDispatch, PushOutcome } from '../../../processors/model/records.ts';
import { PushEventWriter } from '../../../sinks/clickhouse/writer.ts';
import { StreamsApp } from '../../../topology/runtime.ts';
import { createTestDatabase, type TestDatabase } from '../../sinks/clickhouse/support.ts';
import { startEmulators, type StartedEmulators } from '../../../emulators/index.ts';
import { stackEndpoints, uniqueName } from '../../support/stack.ts';
import { followOutcomes, kafka, produceDispatches, registry, spawnFanOutWorker, type FanOutWorker } from './stack-helpers.ts';
import { dispatch, taskTable } from './support.ts';
import { createTopicsWithLeaders } from '../../../topology/create-topics.ts';

const PER_CLASS = 40;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

type OutcomeClass = 'accepted' | 'dead-token' | 'throttled' | 'failed';
/** The outcomes each class ends with, in order (status/reason), with PUSH_FANOUT_MAX_THROTTLED=2. */
const EXPECTED: Record<OutcomeClass, string[]> = {
  accepted: ['ACCEPTED/'],
  'dead-token': ['DEAD_TOKEN/dead_token'],
  throttled: ['THROTTLED/rate_limited', 'THROTTLED/rate_limited', 'FAILED/rate_limited'],
  failed: ['FAILED/permanent'],
};

let em: StartedEmulators;
let db: Awaited<ReturnType<typeof taskTable>>;
let ch: TestDatabase;
let prefix: string;
let follower: Awaited<ReturnType<typeof followOutcomes>>;
const workers: FanOutWorker[] = [];
let sink: StreamsApp | undefined;
let writer: PushEventWriter | undefined;

before(async () => {
  em = await startEmulators();
  db = await taskTable();
  ch = await createTestDatabase('ch_takeover');
  prefix = `${uniqueName('takeover')}.`;
  const admin = kafka.admin();
  await admin.connect();
  await createTopicsWithLeaders(
    admin,
    ['push.dispatch', 'im.presence', 'push.outcomes', 'push.receipts', 'push.tokens', 'push.dlq'].map((t) => ({
      topic: prefix + t,
      numPartitions: 4,
      replicationFactor: 1,
    })),
  );
  await admin.disconnect();
  follower = await followOutcomes(prefix);
});
after(async () => {
  for (const w of workers) if (w.child.exitCode === null) w.child.kill('SIGKILL');
  await sink?.close().catch(() => undefined);
  await writer?.close().catch(() => undefined);
  await follower?.stop();
  await em?.close();
  await db?.close();
  await ch?.drop();
});

test(
  'SIGKILL of one of two workers with every outcome class in flight: each task keeps exactly its recorded outcomes, in push.outcomes and in ClickHouse',
  { timeout: 240_000 },
  async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'fanout-takeover-'));
    const appsFile = join(dir, 'apps.json');
    writeFileSync(appsFile, JSON.stringify(em.rawAppsConfig));
    chmodSync(appsFile, 0o600);
    const env = {
      FANOUT_APP_ID: uniqueName('fan-out'),
      FANOUT_TOPIC_PREFIX: prefix,
      FANOUT_APPS_CONFIG: appsFile,
      FANOUT_TASK_TABLE: db.table,
      PUSH_FANOUT_MAX_THROTTLED: '2',
      PUSH_FANOUT_MAX_IN_FLIGHT: '16',
    };

    em.fcm.latencyMs = 150;
    em.apns.latencyMs = 150;
    const classOf = new Map<string, OutcomeClass>();
    const make = (cls: OutcomeClass, i: number): PushDispatch => {
      const vendor = cls === 'dead-token' ? 'apns' : cls === 'throttled' ? 'hms' : 'fcm';
      const token = em.token(vendor, `${cls}-${i}`);
      if (cls === 'dead-token') em.apns.deadTokens.add(token);
      if (cls === 'throttled') em.hms.script({ kind: 'rate-limit', retryAfterS: 1 }, { token });
      if (cls === 'failed') em.fcm.script({ kind: 'code', code: 'PERMISSION_DENIED' }, { token });
      const d = dispatch({ uid: `${cls}-${i}`, device: 'phone', conv_id: `c-${i % 5}`, seq: i + 1, channels: [{ vendor, token }] });
      classOf.set(d.task_id, cls);
      return d;
    };
    const classes: OutcomeClass[] = ['accepted', 'dead-token', 'throttled', 'failed'];
    const batch = Array.from({ length: PER_CLASS }, (_, i) => classes.map((c) => make(c, i))).flat();
    const tasks = new Set(batch.map((d) => d.task_id));

    // The worker to be killed commits every 4 s; the survivor every 200 ms.
    const doomed = spawnFanOutWorker({ ...env, FANOUT_COMMIT_INTERVAL_MS: '4000' });
    workers.push(doomed);
    await doomed.started();
    const survivor = spawnFanOutWorker(env);
    workers.push(survivor);
    await survivor.started();
    await sleep(2000); // the group settles on two members
    await produceDispatches(prefix, batch);

    const finalRows = async () =>
      new Set(((await db.pool.query(`SELECT task_id FROM \`${db.table}\` WHERE status <> 0`))[0] as Array<{ task_id: string }>).map((r) => r.task_id));
    for (const deadline = Date.now() + 60_000; (await finalRows()).size < batch.length / 3 && Date.now() < deadline;) await sleep(20);
    doomed.child.kill('SIGKILL');
    await doomed.exited;
    const finalAtKill = await finalRows();
    await sleep(1000); // the survivor's own commits catch up; the killed worker commits nothing more
    const committedAtKill = new Set(follower.outcomes.map((o) => o.task_id));
    const redispatchedFinal = [...finalAtKill].filter((id) => !committedAtKill.has(id));
    t.diagnostic(
      `${finalAtKill.size} tasks final in MySQL at the kill, ${redispatchedFinal.length} of them without committed outcomes (re-dispatched final tasks), by class: ${JSON.stringify(countBy(redispatchedFinal.map((id) => classOf.get(id)!)))}`,
    );
    assert.ok(redispatchedFinal.length > 0, 'the kill left final tasks whose outcomes were not committed');

    const mine = () => follower.outcomes.filter((o) => tasks.has(o.task_id));
    const ended = () => {
      const byTask = group(mine());
      return batch.every((d) => (byTask.get(d.task_id)?.length ?? 0) >= EXPECTED[classOf.get(d.task_id)!].length);
    };
    await follower.until(ended, 120_000);
    await sleep(1500); // anything extra would show up by now
    survivor.child.kill('SIGTERM');
    assert.equal(await survivor.exited, 0, survivor.stderr());

    // push.outcomes: every event once, every task exactly its class's outcomes, no made-up duplicate.
    const outcomes = mine();
    const ids = outcomes.map((o) => o.event_id);
    assert.equal(new Set(ids).size, ids.length, 'no event id twice in push.outcomes');
    assert.deepEqual(
      outcomes.filter((o) => o.reason === 'duplicate').map((o) => `${classOf.get(o.task_id)} ${o.status}`),
      [],
      'no duplicate outcome',
    );
    const byTask = group(outcomes);
    for (const d of batch) {
      const cls = classOf.get(d.task_id)!;
      assert.deepEqual(
        byTask.get(d.task_id)!.map((o) => `${o.status}/${o.reason ?? ''}`),
        EXPECTED[cls],
        `${cls} ${d.uid}`,
      );
    }

    // ClickHouse, through the real sink: the same events per task, each once.
    writer = new PushEventWriter({ connection: ch.connection });
    sink = new StreamsApp({
      applicationId: uniqueName('ch-sink'),
      topology: buildClickhouseSinkTopology({ valueSerdes: registryValueSerdes(registry, prefix), topicPrefix: prefix, writer }),
      brokers: stackEndpoints().kafkaBrokers,
      processingGuarantee: 'at_least_once',
      commitIntervalMs: 500,
      autoOffsetReset: 'earliest',
      dlqTopic: `${prefix}push.dlq`,
      logger: createLogger({}, 'error'),
    });
    await sink.start();
    const stored = async () =>
      (await (await ch.client.query({ query: 'SELECT task_id, event_id, kind, reason FROM push_events', format: 'JSONEachRow' })).json()) as Array<{
        task_id: string;
        event_id: string;
        kind: string;
        reason: string | null;
      }>;
    let rows = await stored();
    for (const deadline = Date.now() + 60_000; new Set(rows.map((r) => r.event_id)).size < ids.length && Date.now() < deadline;) {
      await sleep(500);
      rows = await stored();
    }
    const chByTask = new Map<string, Set<string>>();
    for (const r of rows) chByTask.set(r.task_id, (chByTask.get(r.task_id) ?? new Set()).add(r.event_id));
    for (const d of batch) {
      assert.deepEqual(
        [...(chByTask.get(d.task_id) ?? [])].sort(),
        byTask
          .get(d.task_id)!
          .map((o) => o.event_id)
          .sort(),
        `ClickHouse events of ${classOf.get(d.task_id)} ${d.uid}`,
      );
    }
    assert.deepEqual(
      rows.filter((r) => r.reason === 'duplicate'),
      [],
      'ClickHouse counted no duplicate outcome',
    );
  },
);

function group(outcomes: PushOutcome[]): Map<string, PushOutcome[]> {
  const out = new Map<string, PushOutcome[]>();
  for (const o of outcomes) out.set(o.task_id, [...(out.get(o.task_id) ?? []), o]);
  return out;
}

function countBy(values: string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const v of values) out[v] = (out[v] ?? 0) + 1;
  return out;
}
