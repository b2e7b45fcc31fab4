/**
 * Expiry at the business lane's fan-out (TopologyTestDriver, FCM emulator, MariaDB): a business
 * dispatch whose expire_at has passed by the time the fan-out takes it is never submitted (DROPPED
 * `expired`, with its business tag), and one that has not is sent with a vendor time to live that
 * ends by its expiry, so the vendor never delivers it later. IM dispatches keep the configured TTL.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { dispatch, fanOutDriver, fanOutStack } from './support.ts';

describe('business expiry at the fan-out', () => {
  const fx = fanOutStack();

  test('an expired business push is dropped unsent; a live one goes with a TTL ending at its expiry; IM keeps the configured TTL', async () => {
    const fo = fanOutDriver(fx.db.pool, fx.db.table, { vendors: fx.registry, ttlSeconds: 86_400 });
    const tag = (expireAt: number) => ({ sender: 'orders', category: 'REMINDER', campaign_id: null, expire_at: expireAt });
    const channel = (seed: string) => [{ vendor: 'fcm' as const, token: fx.em.token('fcm', seed) }];
    await fo.send({ ...dispatch({ uid: 'u-late', device: 'd1', conv_id: 'biz:late', channels: channel('late') }), business: tag(Date.now() - 1000) });
    await fo.send({ ...dispatch({ uid: 'u-live', device: 'd1', conv_id: 'biz:live', channels: channel('live') }), business: tag(Date.now() + 600_000) });
    await fo.send(dispatch({ uid: 'u-im', device: 'd1', conv_id: 'chat', channels: channel('im') }));
    const outcomes = fo.outcomes();
    assert.deepEqual(outcomes.map((o) => `${o.uid} ${o.status} ${o.reason ?? ''} ${o.business?.sender ?? '-'}`).sort(), [
      'u-im ACCEPTED  -',
      'u-late DROPPED expired orders',
      'u-live ACCEPTED  orders',
    ]);
    const got = fx.em.fcm.accepted();
    assert.deepEqual(got.map((p) => p.token).sort(), [fx.em.token('fcm', 'im'), fx.em.token('fcm', 'live')].sort());
    const ttlOf = (token: string) => {
      const request = got.find((p) => p.token === token)!.request as { android?: { ttl?: string } };
      return Number.parseInt(request.android?.ttl ?? 'NaN', 10);
    };
    assert.ok(ttlOf(fx.em.token('fcm', 'live')) <= 600 && ttlOf(fx.em.token('fcm', 'live')) >= 590, `live TTL ${ttlOf(fx.em.token('fcm', 'live'))} s`);
    assert.equal(ttlOf(fx.em.token('fcm', 'im')), 86_400);
    await fo.close();
  });
});
