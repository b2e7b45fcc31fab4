/**
 * A takeover re-sends only the vendor calls that had no answer at the kill (docs/design.md,
 * "Takeover"). One worker runs the decisions with the fan-out fused (the default) and is
 * SIGKILLed mid-burst; a new worker takes its partitions over. Three kinds of pushes are in the
 * burst: iPhones with one APNs token (accepted, their rows final before the kill), iPhones whose
 * APNs token is dead and whose FCM token follows (APNs answered before the kill, the FCM call still
 * unanswered at it), and Android phones with one FCM token (unanswered at the kill). APNs answers
 * after 1 s, so the commits checkpoint the second kind while their APNs call runs; FCM answers after
 * 30 s, so no FCM answer can be on its way back at the kill. Counted from the emulators' recordings
 * (each request, its answer, when, and which process sent it): the calls the new worker makes again
 * must all be calls the killed one had no answer for, and each task still ends exactly once.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import mysql from 'mysql2/promise';
import { startEnvironment, type Environment } from '../../../demo/environment.ts';
import { trafficProducer, type TrafficProducer } from '../../../demo/traffic.ts';
import { clientTokenReport, type SyntheticDevice } from '../../../demo/workload.ts';
import { collectOutcomes, type Collector } from '../../../chaos/collect.ts';
import { sleep, waitDrained } from '../../../chaos/drain.ts';
import { messageOf, recordings } from '../../../chaos/verify.ts';
import { stopWorker } from '../../../chaos/faults.ts';
import type { ReceivedPush } from '../../../emulators/index.ts';
import type { Vendor } from '../../../processors/fan-out/vendor-port.ts';
import { taskId } from '../../../processors/model/ids.ts';
import type { MessagePersisted, PushOutcome } from '../../../processors/model/records.ts';
import { deleteRunTopics } from '../../support/run-topics.ts';
import { stackEndpoints } from '../../support/stack.ts';

const PER_KIND = 15;
const APNS_LATENCY_MS = 1_000;
/** Longer than the burst takes to reach FCM and the kill to follow, however busy the machine. */
const FCM_LATENCY_MS = 30_000;
const STAGES = ['decisions'] as const;

type Kind = 'apns' | 'apns-dead-then-fcm' | 'fcm';
const CHANNELS: Record<Kind, Pick<SyntheticDevice, 'platform' | 'manufacturer'> & { vendors: Vendor[] }> = {
  apns: { platform: 'ios', manufacturer: 'apple', vendors: ['apns'] },
  'apns-dead-then-fcm': { platform: 'ios', manufacturer: 'apple', vendors: ['apns', 'fcm'] },
  fcm: { platform: 'android', manufacturer: 'samsung', vendors: ['fcm'] },
};
/** The outcomes each kind ends with (status/vendor), in order. */
const EXPECTED: Record<Kind, string[]> = {
  apns: ['ACCEPTED/apns'],
  'apns-dead-then-fcm': ['DEAD_TOKEN/apns', 'ACCEPTED/fcm'],
  fcm: ['ACCEPTED/fcm'],
};

const pushKey = (r: ReceivedPush) => `${r.vendor}|${r.token}|${messageOf(r)?.convId}|${messageOf(r)?.seq}`;
const pidOf = (r: ReceivedPush) => /\(pid (\d+)\)/.exec(r.client ?? '')?.[1];

async function until(what: string, check: () => boolean | Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(200);
  }
}

async function metricSum(port: number, name: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  return text
    .split('\n')
    .filter((line) => line.startsWith(`${name}{`) || line.startsWith(`${name} `))
    .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(' ') + 1)), 0);
}

test(
  'SIGKILL mid-burst with the fan-out fused: the new owner re-sends only calls without an answer at the kill; every task ends exactly once',
  { timeout: 420_000 },
  async (t) => {
    let env: Environment | undefined;
    let traffic: TrafficProducer | undefined;
    let outcomes: Collector<PushOutcome> | undefined;
    const db = mysql.createPool({ uri: stackEndpoints().mysqlUrl, connectionLimit: 2 });
    try {
      env = await startEnvironment({ instances: 1, partitions: 2, workerEnv: { PUSH_STAGES: STAGES.join(',') }, verbose: false });
      const e = env;
      const devices = (Object.keys(CHANNELS) as Kind[]).flatMap((kind) =>
        Array.from({ length: PER_KIND }, (_, i): SyntheticDevice & { kind: Kind } => {
          const uid = `${e.run}-${kind}-${i}`;
          const deviceId = `${uid}-d`;
          const { platform, manufacturer, vendors } = CHANNELS[kind];
          return {
            kind,
            uid,
            deviceId,
            platform,
            manufacturer,
            tokens: vendors.map((vendor) => ({ vendor, token: e.emulators.token(vendor, `${i}-${kind}`) })),
          };
        }),
      );
      for (const d of devices) if (d.kind === 'apns-dead-then-fcm') e.emulators.apns.deadTokens.add(d.tokens[0]!.token);
      const taskOf = new Map(devices.map((d) => [taskId(d.uid, `c-${d.uid}`, 1, d.deviceId), d]));

      await e.waitReady();
      traffic = await trafficProducer(e.topicPrefix);
      outcomes = await collectOutcomes(e.topicPrefix, `${e.applicationId}-test-outcomes`);
      await traffic.send(
        'tokens',
        devices.flatMap((d) => d.tokens.map((tk) => clientTokenReport(d, tk, e.appId, Date.now()))),
      );
      await waitDrained(e.applicationId, () => true, { intervalMs: 500, timeoutMs: 120_000, stages: STAGES });

      // The burst: one message per user.
      e.emulators.apns.latencyMs = APNS_LATENCY_MS;
      e.emulators.fcm.latencyMs = FCM_LATENCY_MS;
      const now = Date.now();
      await traffic.send(
        'persisted',
        devices.map((d, i): { key: string; value: MessagePersisted } => ({
          key: d.uid,
          value: {
            msg_id: `m-${d.uid}`,
            conv_id: `c-${d.uid}`,
            conv_type: 'SINGLE',
            seq: 1,
            sender_uid: `s-${i}`,
            uid: d.uid,
            unread_cnt: 1,
            title: `From s-${i}`,
            summary: `message ${i}`,
            sensitive: false,
            mention: 'NONE',
            persisted_at: now,
            app_id: e.appId,
          },
        })),
      );

      // The kill comes once the work before it is done: the single-APNs tasks are final in MySQL, and
      // every FCM call has been made (so every APNs answer before it was taken in).
      const ids = (kind: Kind) => [...taskOf].filter(([, d]) => d.kind === kind).map(([id]) => id);
      const finalRows = async (kind: Kind) =>
        Number(((await db.query('SELECT COUNT(*) AS n FROM im_push_task WHERE status <> 0 AND task_id IN (?)', [ids(kind)]))[0] as Array<{ n: number }>)[0]!.n);
      const fcmCallsExpected = 2 * PER_KIND;
      await until('the single-APNs pushes to be final in MySQL', async () => (await finalRows('apns')) === PER_KIND, 120_000);
      await until('every FCM call to be made', () => e.emulators.fcm.sendRequests >= fcmCallsExpected, 120_000);
      const victim = e.workers[0]!.process.pid!;
      const killedAt = Date.now();
      await stopWorker(e, 0, 'SIGKILL');
      const inFlight = { apns: e.emulators.apns.sendRequests - e.emulators.apns.received.length, fcm: e.emulators.fcm.sendRequests };
      assert.equal(
        recordings(e.emulators, e.appId).filter((r) => r.vendor === 'fcm' && r.at <= killedAt).length,
        0,
        'no FCM answer came before the kill (the test relies on it)',
      );

      // The takeover: a new worker; the vendors answer at once from now on.
      e.emulators.apns.latencyMs = 0;
      e.emulators.fcm.latencyMs = 0;
      const successor = await e.startWorker(0);
      await e.waitReady();
      const mine = () => outcomes!.records.filter((o) => taskOf.has(o.task_id));
      const ended = () => {
        const seen = new Map<string, number>();
        for (const o of mine()) seen.set(o.task_id, (seen.get(o.task_id) ?? 0) + 1);
        return [...taskOf].every(([id, d]) => (seen.get(id) ?? 0) >= EXPECTED[d.kind].length);
      };
      await until('every task to end', ended, 180_000);
      // The killed worker's FCM calls are answered (to no one) after their latency: then every call is recorded.
      const killedCalls = () => recordings(e.emulators, e.appId).filter((r) => pidOf(r) === String(victim));
      await until('the killed worker’s calls to be answered', () => killedCalls().filter((r) => r.vendor === 'fcm').length >= inFlight.fcm, 120_000);
      await waitDrained(e.applicationId, () => outcomes!.quietForMs() > 2000, { intervalMs: 500, timeoutMs: 120_000, stages: STAGES });

      const calls = recordings(e.emulators, e.appId);
      const answeredAtKill = killedCalls().filter((r) => r.at <= killedAt);
      const noAnswerAtKill = killedCalls().filter((r) => r.at > killedAt);
      const killedKeys = new Set(killedCalls().map(pushKey));
      const answeredKeys = new Set(answeredAtKill.map(pushKey));
      const resent = calls.filter((r) => pidOf(r) !== String(victim) && killedKeys.has(pushKey(r)));
      const resentAnswered = resent.filter((r) => answeredKeys.has(pushKey(r)));
      const resentMetric = await metricSum(successor.metricsPort, 'push_fanout_takeover_resends_total');
      t.diagnostic(
        `${devices.length} pushes; at the kill the killed worker's calls had ${answeredAtKill.length} answers and ${noAnswerAtKill.length} calls without one ` +
          `(requests in flight: ${JSON.stringify(inFlight)}); after the takeover ${resent.length} calls were made again ` +
          `(${resentAnswered.length} of them answered before the kill: ${[...new Set(resentAnswered.map((r) => r.vendor))].join(', ') || 'none'}); ` +
          `push_fanout_takeover_resends_total ${resentMetric}`,
      );
      assert.ok(noAnswerAtKill.length > 0, 'the kill left calls without an answer');
      assert.deepEqual(resentAnswered.map(pushKey), [], 'calls answered before the kill that were made again');
      assert.ok(resent.length <= noAnswerAtKill.length, `${resent.length} re-sent > ${noAnswerAtKill.length} without an answer at the kill`);
      assert.equal(resentMetric, resent.length, 'the new worker counts each re-send in push_fanout_takeover_resends_total');

      // Exactly-once accounting: each task its kind's outcomes, each event once, one final outcome.
      const records = mine();
      const eventIds = records.map((o) => o.event_id);
      assert.equal(new Set(eventIds).size, eventIds.length, 'an event id twice on push.outcomes');
      for (const [id, d] of taskOf) {
        const own = records.filter((o) => o.task_id === id);
        assert.deepEqual(
          own.map((o) => `${o.status}/${o.vendor ?? ''}`),
          EXPECTED[d.kind],
          `${d.kind} ${d.uid}`,
        );
      }
    } finally {
      await outcomes?.close().catch(() => undefined);
      await traffic?.close().catch(() => undefined);
      await env?.close();
      if (env) await deleteRunTopics(env.topicPrefix).catch(() => undefined);
      await db.end();
    }
  },
);
