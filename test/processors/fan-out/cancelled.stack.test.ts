/**
 * The fan-out and a campaign cancelled while its pushes wait (processors/fan-out/cancelled.ts), on
 * the TopologyTestDriver with the FCM emulator and a MySQL task table: a push parked waiting out
 * the vendor's 503s is not submitted when it is due once its campaign is cancelled; it ends
 * SUPPRESSED campaign_cancelled, its task row failed with CAMPAIGN_CANCELLED, and a replay of its
 * dispatch re-emits that outcome without a call. A fresh dispatch of the campaign ends the same
 * way; another campaign's push goes out. And a push already handed to the vendor's submit path,
 * waiting there for the (vendor, app) gate, is left out of the call if its campaign is cancelled
 * meanwhile, while the other campaign's pushes in the same batch go out. A restarted lane sends
 * nothing before it has read the cancellations made before its start.
 * test/e2e/cancel-lane.stack.test.ts checks the whole lane.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parseAppsConfig } from '../../../sinks/vendors/apps-config.ts';
import { createVendorRegistry } from '../../../sinks/vendors/registry.ts';
import type { PushDispatch, PushOutcome } from '../../../processors/model/records.ts';
import { buildFanOutTopology } from '../../../pipeline/apps/fan-out.ts';
import { rawAvroValueSerdes } from '../../../pipeline/serdes.ts';
import { TOPICS } from '../../../pipeline/topics.ts';
import { MysqlPushTaskLedger } from '../../../sinks/mysql/tasks.ts';
import { TopologyTestDriver } from '../../../topology/test-driver.ts';
import { dispatch, fanOutDriver, taskRow, fanOutStack } from './support.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('fan-out: a campaign cancelled while its pushes wait', () => {
  const fx = fanOutStack();

  const campaignPush = (uid: string, campaignId: string, vendor: 'fcm' | 'hms' = 'fcm'): PushDispatch =>
    dispatch({
      uid,
      device: 'phone',
      conv_id: `biz:${campaignId}`,
      channels: [{ vendor, token: fx.em.token(vendor, uid) }],
      business: { sender: 'marketing', category: 'CAMPAIGN', campaign_id: campaignId, expire_at: null },
    });

  test('a parked push of a cancelled campaign ends SUPPRESSED campaign_cancelled when due, unsent, once; another campaign goes on', async () => {
    const cancelled = new Map<string, number>();
    const fo = fanOutDriver(fx.db.pool, fx.db.table, {
      vendors: fx.registry,
      backoffInitialMs: 50,
      backoffMaxMs: 400,
      inlineBackoffMaxMs: 100,
      retryPollMs: 50,
      cancellations: { cancelledAt: (id) => cancelled.get(id) },
    });
    const pump = async (ms: number) => {
      for (const until = Date.now() + ms; Date.now() < until;) {
        await sleep(100);
        await fo.driver.advanceWallClockTime(100);
      }
    };
    const calls = (d: PushDispatch) => fx.em.fcm.received.filter((r) => r.token === d.channels[0]!.token).length;
    fx.em.fcm.script({ kind: 'server-error' });
    const spring = campaignPush('u-spring-1', 'spring');
    const autumn = campaignPush('u-autumn-1', 'autumn');
    await fo.send(spring); // each returns once its push is parked
    await fo.send(autumn);
    assert.deepEqual(fo.outcomes(), [], 'both wait out the 503s');
    assert.ok(calls(spring) > 0, 'the spring push was tried before the cancel');

    cancelled.set('spring', Date.now());
    const callsAtCancel = calls(spring);
    fx.em.fcm.clearFaults();
    for (const until = Date.now() + 8_000; Date.now() < until && !fx.em.fcm.accepted().some((r) => r.token === autumn.channels[0]!.token);) await pump(200);
    const late = campaignPush('u-spring-2', 'spring');
    await fo.send(late);
    await pump(300);

    const outcomes = fo.outcomes();
    assert.deepEqual(
      outcomes.map((o) => [o.task_id, o.status, o.reason, o.code, o.business?.campaign_id]).sort(),
      [
        [spring.task_id, 'SUPPRESSED', 'campaign_cancelled', 'CAMPAIGN_CANCELLED', 'spring'],
        [autumn.task_id, 'ACCEPTED', null, null, 'autumn'],
        [late.task_id, 'SUPPRESSED', 'campaign_cancelled', 'CAMPAIGN_CANCELLED', 'spring'],
      ].sort(),
    );
    assert.equal(calls(spring), callsAtCancel, 'no call after the cancel');
    assert.equal(calls(late), 0, 'a fresh dispatch of the cancelled campaign is never sent');
    for (const d of [spring, late]) {
      const row = await taskRow(fx.db.pool, fx.db.table, d.task_id);
      assert.deepEqual([row?.status, row?.fail_code], [3, 'CAMPAIGN_CANCELLED'], 'the task row is final');
    }

    // The dispatch delivered again (a replay after a crash) re-emits its one outcome, same event id, and sends nothing.
    await fo.send(spring);
    assert.deepEqual(
      fo.outcomes().map((o) => o.event_id),
      outcomes.filter((o) => o.task_id === spring.task_id).map((o) => o.event_id),
    );
    assert.equal(calls(spring), callsAtCancel);
    await fo.close();
  });

  test('pushes waiting at the vendor gate: those of the cancelled campaign are left out of the batch call, the others go out', async () => {
    // One HMS call at a time: a slow first call keeps the next batch waiting at the gate.
    const raw = fx.em.rawAppsConfig as { apps: Array<{ vendors: Record<string, Record<string, unknown>> }> };
    const apps = raw.apps.map((a) => ({ ...a, vendors: { ...a.vendors, hms: { ...a.vendors.hms, concurrency: 1 } } }));
    const oneAtATime = createVendorRegistry(parseAppsConfig({ ...raw, apps }));
    const cancelled = new Map<string, number>();
    let claimed = 0;
    const ledger = new MysqlPushTaskLedger({ pool: fx.db.pool, table: fx.db.table });
    const fanOut = {
      vendors: oneAtATime,
      ledger,
      cancellations: { cancelledAt: (id: string) => cancelled.get(id) },
      listener: { onClaimed: () => void claimed++ },
    };
    // No commit after each input: a dispatch is handed on without waiting for its vendor's answer, as on Kafka.
    const driver = new TopologyTestDriver(buildFanOutTopology({ valueSerdes: rawAvroValueSerdes(), fanOut }), {
      startWallClockMs: Date.now(),
      dlqTopic: TOPICS.dlq.name,
      commitEveryInput: false,
    });
    const send = (d: PushDispatch) => driver.pipeInput(TOPICS.dispatch.name, d.uid, d);
    const slow = campaignPush('u-gate-slow', 'summer', 'hms');
    fx.em.hms.scriptConnection({ kind: 'late', delayMs: 2_000 }, { token: slow.channels[0]!.token, times: 1 });
    await send(slow);
    // Its request is at the vendor, the answer 2 s away: the one call allowed is under way.
    for (const until = Date.now() + 1_500; fx.em.hms.received.length === 0 && Date.now() < until;) await sleep(10);
    const waiting = ['winter', 'summer', 'winter', 'summer', 'winter', 'summer'].map((c, i) => campaignPush(`u-gate-${i}`, c, 'hms'));
    for (const d of waiting) await send(d);
    // Claimed, so handed to the submit path (the walk's first step after its claim): now at the gate behind the slow call.
    for (const until = Date.now() + 1_500; claimed < 1 + waiting.length && Date.now() < until;) await sleep(10);
    await sleep(50);
    const callsAtCancel = fx.em.hms.received.length;
    cancelled.set('winter', Date.now());
    await driver.commit(); // waits for every dispatch in flight

    const winter = waiting.filter((d) => d.business!.campaign_id === 'winter');
    const summer = [slow, ...waiting.filter((d) => d.business!.campaign_id === 'summer')];
    assert.equal(claimed, 1 + waiting.length);
    assert.equal(callsAtCancel, 1, 'only the slow call had reached the vendor at the cancel');
    assert.deepEqual(
      driver
        .readAllOutputs<string, PushOutcome>(TOPICS.outcomes.name)
        .map(({ value: o }) => [o.task_id, o.status, o.reason, o.attempts])
        .sort(),
      [...winter.map((d) => [d.task_id, 'SUPPRESSED', 'campaign_cancelled', 0]), ...summer.map((d) => [d.task_id, 'ACCEPTED', null, 1])].sort(),
    );
    const tokens = (list: PushDispatch[]) => list.map((d) => d.channels[0]!.token).sort();
    assert.deepEqual(
      fx.em.hms
        .accepted()
        .map((p) => p.token)
        .sort(),
      tokens(summer),
      'the vendor got the summer pushes only',
    );
    await driver.close();
    ledger.close();
    await oneAtATime.close();
  });

  test('a restarted lane waits for the cancellations read before it sends: a campaign cancelled before the start is never sent', async () => {
    const cancelled = new Map<string, number>();
    let read!: () => void;
    const fo = fanOutDriver(fx.db.pool, fx.db.table, {
      vendors: fx.registry,
      cancellations: { cancelledAt: (id) => cancelled.get(id) },
      cancellationsRead: new Promise<void>((resolve) => (read = resolve)),
    });
    const queued = campaignPush('u-restart-1', 'early');
    const sending = fo.send(queued);
    await sleep(300);
    assert.equal(fx.em.fcm.received.filter((r) => r.token === queued.channels[0]!.token).length, 0, 'nothing sent before the read');
    cancelled.set('early', Date.now() - 60_000); // what the topic contained at the start
    read();
    await sending;
    assert.deepEqual(
      fo.outcomes().map((o) => [o.task_id, o.status, o.reason]),
      [[queued.task_id, 'SUPPRESSED', 'campaign_cancelled']],
    );
    assert.equal(fx.em.fcm.received.filter((r) => r.token === queued.channels[0]!.token).length, 0);
    await fo.close();
  });
});
