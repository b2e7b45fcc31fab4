/**
 * A push of an app that a reload removed from the apps file (processors/fan-out/fan-out.ts,
 * `appRemovedAnswer`): it ends DROPPED app_removed, once, with no vendor call, no retry loop and no
 * token invalidation; fresh, parked waiting for a retry, or re-delivered. Through the
 * TopologyTestDriver, the vendor emulators and MariaDB.
 */
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { startEmulators, type StartedEmulators } from '../../../emulators/index.ts';
import { parseAppsConfig } from '../../../sinks/vendors/apps-config.ts';
import { createVendorRegistry, type ReloadableVendorRegistry } from '../../../sinks/vendors/registry.ts';
import { dispatch, fanOutDriver, taskRow, taskTable } from './support.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('a push of an app removed from the apps file', () => {
  let em: StartedEmulators;
  let registry: ReloadableVendorRegistry;
  let db: Awaited<ReturnType<typeof taskTable>>;
  let fo: ReturnType<typeof fanOutDriver>;
  const both = () => parseAppsConfig({ ca: em.ca, apps: em.rawAppsConfig.apps });
  const only = (appId: string) => parseAppsConfig({ ca: em.ca, apps: em.rawAppsConfig.apps.filter((a) => a.appId === appId) });

  before(async () => {
    em = await startEmulators({ apps: ['app-1', 'app-gone'] });
    db = await taskTable();
  });
  after(async () => {
    await fo?.close();
    await registry?.close();
    await em.close();
    await db.close();
  });
  beforeEach(async () => {
    em.reset();
    await fo?.close();
    await registry?.close();
    registry = createVendorRegistry(both());
    fo = fanOutDriver(db.pool, db.table, { vendors: registry, backoffInitialMs: 20, backoffMaxMs: 50, inlineBackoffMaxMs: 0, retryPollMs: 20 });
  });

  test('a fresh dispatch ends DROPPED app_removed without a call; its task row says so; a re-delivery re-emits the same outcome', async () => {
    await registry.replace(only('app-1')).drained;
    const d = dispatch({
      uid: 'u-gone',
      device: 'd1',
      app_id: 'app-gone',
      channels: [
        { vendor: 'hms', token: em.token('hms', 'gone-hms') },
        { vendor: 'fcm', token: em.token('fcm', 'gone-fcm') },
      ],
    });
    await fo.send(d);
    const [outcome, ...rest] = fo.outcomes();
    assert.deepEqual(rest, []);
    assert.deepEqual([outcome!.status, outcome!.reason, outcome!.vendor, outcome!.code], ['DROPPED', 'app_removed', 'hms', 'APP_REMOVED']);
    assert.deepEqual(fo.tokens(), [], 'its tokens are kept');
    assert.equal(em.hms.received.length + em.fcm.received.length, 0, 'no vendor called');
    const row = await taskRow(db.pool, db.table, d.task_id);
    assert.deepEqual([row!.status, row!.fail_code], [3, 'APP_REMOVED']);
    // The same dispatch again (a replay after a crash): the same outcome, nothing more.
    await fo.send(d);
    const again = fo.outcomes();
    assert.deepEqual(
      again.map((o) => o.event_id),
      [outcome!.event_id],
    );
    // The other app is served as before.
    await fo.send(dispatch({ uid: 'u-kept', device: 'd1', app_id: 'app-1', channels: [{ vendor: 'fcm', token: em.token('fcm', 'kept') }] }));
    assert.equal(fo.outcomes()[0]!.status, 'ACCEPTED');
  });

  test('a push parked waiting for a retry when its app is removed ends DROPPED app_removed when it comes due, not retried again', async () => {
    const token = em.token('fcm', 'parked');
    em.fcm.script({ kind: 'server-error' }, { token });
    const d = dispatch({ uid: 'u-parked', device: 'd1', app_id: 'app-gone', channels: [{ vendor: 'fcm', token }] });
    await fo.send(d);
    assert.deepEqual(fo.outcomes(), [], 'parked, waiting to retry');
    const calls = em.fcm.received.filter((r) => r.token === token).length;
    assert.ok(calls >= 1);
    await registry.replace(only('app-1')).drained;
    for (let i = 0; i < 20; i++) {
      await sleep(20);
      await fo.driver.advanceWallClockTime(50);
    }
    const outcomes = fo.outcomes();
    assert.deepEqual(
      outcomes.map((o) => [o.status, o.reason]),
      [['DROPPED', 'app_removed']],
    );
    assert.equal(em.fcm.received.filter((r) => r.token === token).length, calls, 'no call after the removal');
    assert.deepEqual(fo.tokens(), []);
    assert.equal((await taskRow(db.pool, db.table, d.task_id))!.status, 3);
  });

  test('a call in flight when its app is removed finishes; the next push of the app is dropped', async () => {
    em.oppo.latencyMs = 300;
    const first = dispatch({ uid: 'u-flight', device: 'd1', app_id: 'app-gone', channels: [{ vendor: 'oppo', token: em.token('oppo', 'flight') }] });
    const sending = fo.send(first);
    await sleep(100);
    const change = registry.replace(only('app-1'));
    await sending;
    await change.drained;
    em.oppo.latencyMs = 0;
    assert.deepEqual(
      fo.outcomes().map((o) => o.status),
      ['ACCEPTED'],
    );
    await fo.send(dispatch({ uid: 'u-flight', device: 'd1', app_id: 'app-gone', seq: 2, channels: [{ vendor: 'oppo', token: em.token('oppo', 'flight') }] }));
    assert.deepEqual(
      fo.outcomes().map((o) => [o.status, o.reason]),
      [['DROPPED', 'app_removed']],
    );
    assert.equal(em.oppo.received.length, 1);
  });
});
