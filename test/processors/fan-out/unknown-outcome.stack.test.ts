/**
 * A vendor that accepts a push but answers after the client's deadline: the
 * outcome is unknown, not refused. The fan-out retries the same channel only (the collapse id makes
 * the resend harmless on the device), never another vendor, and accounts the push once.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createVendorRegistry, type VendorRegistry } from '../../../sinks/vendors/registry.ts';
import { parseAppsConfig } from '../../../sinks/vendors/apps-config.ts';
import { startEmulators, type StartedEmulators } from '../../../emulators/index.ts';
import { dispatch, fanOutDriver, taskRow, taskTable } from './support.ts';

const TIMEOUT_MS = 400;

describe('fan-out: an answer lost after the push was written', () => {
  let em: StartedEmulators;
  let registry: VendorRegistry;
  let db: Awaited<ReturnType<typeof taskTable>>;

  before(async () => {
    em = await startEmulators();
    const raw = em.rawAppsConfig as { ca: string; apps: Array<{ appId: string; vendors: Record<string, Record<string, unknown>> }> };
    const apps = raw.apps.map((a) => ({ ...a, vendors: Object.fromEntries(Object.entries(a.vendors).map(([v, c]) => [v, { ...c, timeoutMs: TIMEOUT_MS }])) }));
    registry = createVendorRegistry(parseAppsConfig({ ...raw, apps }));
    db = await taskTable();
  });
  after(async () => {
    await registry.close();
    await em.close();
    await db.close();
  });

  test('is retried on the same channel past the retry budget, never on the next channel, and accepted once', async () => {
    const fo = fanOutDriver(db.pool, db.table, { vendors: registry, backoffInitialMs: 5, backoffMaxMs: 50, maxRetryableAttempts: 2 });
    const token = em.token('fcm', 'late');
    // The first four requests are processed by the vendor, and their answers come after the deadline.
    em.fcm.scriptConnection({ kind: 'late', delayMs: TIMEOUT_MS + 300 }, { token, times: 4 });
    const d = dispatch({
      uid: 'u-late',
      device: 'd1',
      channels: [
        { vendor: 'fcm', token },
        { vendor: 'apns', token: em.token('apns', 'late') },
      ],
    });
    await fo.send(d);

    assert.deepEqual(
      fo.outcomes().map((o) => [o.status, o.vendor]),
      [['ACCEPTED', 'fcm']],
      'one outcome: accepted on the first channel',
    );
    assert.equal(em.apns.received.length, 0, 'the next channel was never tried');
    const sent = em.fcm.received.filter((r) => r.token === token);
    assert.equal(sent.length, 5, 'four unanswered calls, then the one answered in time');
    assert.equal(new Set(sent.map((r) => r.collapseId)).size, 1, 'every resend carries the same collapse id');
    assert.equal((await taskRow(db.pool, db.table, d.task_id))!.status, 1, 'the task is submitted');
    await fo.close();
  });

  test('past the maximum age it ends FAILED on that channel, still without trying another vendor', async () => {
    const fo = fanOutDriver(db.pool, db.table, { vendors: registry, backoffInitialMs: 5, backoffMaxMs: 50, maxRetryableAttempts: 2, retryMaxAgeMs: 1_000 });
    const token = em.token('fcm', 'late-forever');
    em.fcm.scriptConnection({ kind: 'late', delayMs: TIMEOUT_MS + 300 }, { token });
    const d = dispatch({
      uid: 'u-late',
      device: 'd2',
      decided_at: Date.now(),
      channels: [
        { vendor: 'fcm', token },
        { vendor: 'apns', token: em.token('apns', 'late-forever') },
      ],
    });
    await fo.send(d);

    assert.deepEqual(
      fo.outcomes().map((o) => [o.status, o.vendor, o.reason, o.code]),
      [['FAILED', 'fcm', 'max_age_exceeded', 'ANSWER_LOST']],
    );
    assert.equal(em.apns.received.length, 0, 'the next channel was never tried');
    assert.ok(em.fcm.received.filter((r) => r.token === token).length >= 2);
    assert.equal((await taskRow(db.pool, db.table, d.task_id))!.status, 3);
    await fo.close();
  });
});
