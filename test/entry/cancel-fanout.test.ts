/**
 * The fan-out and a campaign cancelled while its pushes wait (processors/fan-out/cancelled.ts), on
 * the TopologyTestDriver with the FCM emulator and a MySQL task table: a push parked waiting out
 * the vendor's 503s is not submitted when it is due once its campaign is cancelled; it ends
 * SUPPRESSED campaign_cancelled, its task row failed with CAMPAIGN_CANCELLED, and a replay of its
 * dispatch re-emits that outcome without a call. A fresh dispatch of the campaign ends the same
 * way; another campaign's push goes out. test/entry/cancel-lane.test.ts checks the whole lane.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createVendorRegistry, type VendorRegistry } from '../../sinks/vendors/registry.ts';
import { startEmulators, type StartedEmulators } from '../../emulators/index.ts';
import type { PushDispatch } from '../../processors/model/records.ts';
import { dispatch, fanOutDriver, taskRow, taskTable } from '../fanout/support.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('fan-out: a campaign cancelled while its pushes wait', () => {
  let em: StartedEmulators;
  let registry: VendorRegistry;
  let db: Awaited<ReturnType<typeof taskTable>>;

  before(async () => {
    em = await startEmulators();
    registry = createVendorRegistry(em.appsConfig);
    db = await taskTable();
  });
  after(async () => {
    await registry.close();
    await em.close();
    await db.close();
  });

  const campaignPush = (uid: string, campaignId: string): PushDispatch =>
    dispatch({
      uid,
      device: 'phone',
      conv_id: `biz:${campaignId}`,
      channels: [{ vendor: 'fcm', token: em.token('fcm', uid) }],
      business: { sender: 'marketing', category: 'CAMPAIGN', campaign_id: campaignId, expire_at: null },
    });

  test('a parked push of a cancelled campaign ends SUPPRESSED campaign_cancelled when due, unsent, once; another campaign goes on', async () => {
    const cancelled = new Map<string, number>();
    const fo = fanOutDriver(db.pool, db.table, {
      vendors: registry,
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
    const calls = (d: PushDispatch) => em.fcm.received.filter((r) => r.token === d.channels[0]!.token).length;
    em.fcm.script({ kind: 'server-error' });
    const spring = campaignPush('u-spring-1', 'spring');
    const autumn = campaignPush('u-autumn-1', 'autumn');
    await fo.send(spring); // each returns once its push is parked
    await fo.send(autumn);
    assert.deepEqual(fo.outcomes(), [], 'both wait out the 503s');
    assert.ok(calls(spring) > 0, 'the spring push was tried before the cancel');

    cancelled.set('spring', Date.now());
    const callsAtCancel = calls(spring);
    em.fcm.clearFaults();
    for (const until = Date.now() + 8_000; Date.now() < until && !em.fcm.accepted().some((r) => r.token === autumn.channels[0]!.token);) await pump(200);
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
      const row = await taskRow(db.pool, db.table, d.task_id);
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
});
