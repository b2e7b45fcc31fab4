/**
 * A vendor down for a long time, with the maximum age shortened from one hour:
 * retryable failures (503, then the server unreachable) are parked and retried with backoff, and
 * every push is submitted once the vendor returns — none lost, none sent twice; a push older than
 * the maximum age ends FAILED max_age_exceeded; a READ of the conversation cancels a parked push.
 */
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { ConfigError } from '../../../common/errors.ts';
import { fanOutOptionsFromEnv } from '../../../processors/fan-out/options.ts';
import { parseAppsConfig } from '../../../sinks/vendors/apps-config.ts';
import { createVendorRegistry, type VendorRegistry } from '../../../sinks/vendors/registry.ts';
import { startEmulators, type StartedEmulators } from '../../../emulators/index.ts';
import { dispatch, fanOutDriver, taskRow, taskTable } from './support.ts';

/**
 * Long enough that a push sent during a test is still young at its end, however slowly a busy
 * machine runs the test's steps (503s, an outage, the vendor's return); the push that must expire
 * is sent already close to it.
 */
const MAX_AGE_MS = 60_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('fan-out: a vendor outage longer than the retry budget', () => {
  let em: StartedEmulators;
  let registry: VendorRegistry;
  let db: Awaited<ReturnType<typeof taskTable>>;
  let fo: ReturnType<typeof fanOutDriver>;

  before(async () => {
    em = await startEmulators();
    const raw = em.rawAppsConfig as { ca: string; apps: Array<{ appId: string; vendors: Record<string, Record<string, unknown>> }> };
    const apps = raw.apps.map((a) => ({ ...a, vendors: Object.fromEntries(Object.entries(a.vendors).map(([v, c]) => [v, { ...c, timeoutMs: 500 }])) }));
    registry = createVendorRegistry(parseAppsConfig({ ...raw, apps }));
    db = await taskTable();
  });
  after(async () => {
    await fo?.close();
    await registry.close();
    await em.close();
    await db.close();
  });
  beforeEach(async () => {
    em.reset();
    await fo?.close();
    fo = fanOutDriver(db.pool, db.table, {
      vendors: registry,
      backoffInitialMs: 50,
      backoffMaxMs: 400,
      inlineBackoffMaxMs: 100,
      retryPollMs: 50,
      retryMaxAgeMs: MAX_AGE_MS,
    });
  });

  /** Real time for the vendor and the push's age, the driver's wall clock for the parked-retry punctuator. */
  const pump = async (ms: number) => {
    for (const until = Date.now() + ms; Date.now() < until;) {
      await sleep(100);
      await fo.driver.advanceWallClockTime(100);
    }
  };

  test('503s, then the server unreachable: parked, retried with backoff, each push accepted once after the vendor returns', async () => {
    em.fcm.script({ kind: 'server-error' });
    const pushes = Array.from({ length: 12 }, (_, i) =>
      dispatch({ uid: `u-out-${i}`, device: 'd1', conv_id: `c-${i % 3}`, channels: [{ vendor: 'fcm', token: em.token('fcm', `out-${i}`) }] }),
    );
    for (const d of pushes) await fo.send(d);
    assert.deepEqual(fo.outcomes(), [], 'nothing ends while the vendor answers 503');
    await pump(1_000);
    const during503 = em.fcm.received.length;
    assert.ok(during503 > pushes.length * 3, `retried past the retry budget (${during503} calls)`);
    // The vendor goes away entirely for a while (connections refused), then comes back healthy.
    em.fcm.clearFaults();
    // The moment it listens again, from the restart itself: the pump below can run past it on a busy box.
    let upAt = Infinity;
    const restarting = em.restart('fcm', 1_500, { up: () => (upAt = Date.now()) });
    await pump(1_500);
    await restarting;
    for (const until = Date.now() + 5_000; Date.now() < until;) {
      await pump(200);
      if (pushes.every((d) => em.fcm.accepted().some((r) => r.token === d.channels[0]!.token))) break;
    }
    await pump(300);
    const outcomes = fo.outcomes();
    assert.deepEqual(
      outcomes.map((o) => o.status).sort(),
      pushes.map(() => 'ACCEPTED'),
      'one ACCEPTED per push, nothing else',
    );
    assert.deepEqual(new Set(outcomes.map((o) => o.task_id)), new Set(pushes.map((d) => d.task_id)));
    for (const d of pushes) {
      const copies = em.fcm.accepted().filter((r) => r.token === d.channels[0]!.token);
      assert.equal(copies.length, 1, `${d.uid} shown once`);
      assert.equal(copies[0]!.collapseId, d.collapse_id);
      assert.ok(copies[0]!.at >= upAt, 'submitted after the vendor returned');
      assert.equal((await taskRow(db.pool, db.table, d.task_id))!.status, 1);
    }
  });

  test('a push older than the maximum age ends FAILED max_age_exceeded; a READ cancels a parked push', async () => {
    em.fcm.script({ kind: 'server-error' });
    const old = dispatch({
      uid: 'u-old',
      device: 'd1',
      decided_at: Date.now() - MAX_AGE_MS + 1_500,
      channels: [{ vendor: 'fcm', token: em.token('fcm', 'old') }],
    });
    const read = dispatch({ uid: 'u-read', device: 'd1', conv_id: 'c-read', seq: 7, channels: [{ vendor: 'fcm', token: em.token('fcm', 'read') }] });
    const unread = dispatch({ uid: 'u-read', device: 'd1', conv_id: 'c-read', seq: 9, channels: [{ vendor: 'fcm', token: em.token('fcm', 'unread') }] });
    await fo.send(old);
    await fo.send(read);
    await fo.send(unread);
    await pump(500);
    // The user reads the conversation up to seq 8 on another device: seq 7 is cancelled, seq 9 is not.
    await fo.read('u-read', 'c-read', 8);
    assert.deepEqual(
      fo.outcomes().map((o) => [o.task_id, o.status, o.reason]),
      [[read.task_id, 'SUPPRESSED', 'read']],
    );
    const readCalls = em.fcm.received.filter((r) => r.token === em.token('fcm', 'read')).length;
    await pump(1_800);
    assert.deepEqual(
      fo.outcomes().map((o) => [o.task_id, o.status, o.reason, o.code]),
      [[old.task_id, 'FAILED', 'max_age_exceeded', 'UNAVAILABLE']],
    );
    assert.equal((await taskRow(db.pool, db.table, old.task_id))!.status, 3);
    em.fcm.clearFaults();
    await pump(1_000);
    assert.deepEqual(
      fo.outcomes().map((o) => [o.task_id, o.status]),
      [[unread.task_id, 'ACCEPTED']],
    );
    assert.equal(em.fcm.received.filter((r) => r.token === em.token('fcm', 'read')).length, readCalls, 'the read push was not called again');
    assert.equal(em.fcm.accepted().filter((r) => r.token === em.token('fcm', 'read')).length, 0);
    const row = await taskRow(db.pool, db.table, read.task_id);
    assert.equal(row!.status, 3);
    // A re-delivered dispatch of the cancelled task re-emits its one outcome, with the same event id.
    const first = await fo.send(read).then(() => fo.outcomes());
    assert.deepEqual(
      first.map((o) => [o.task_id, o.status, o.reason]),
      [[read.task_id, 'SUPPRESSED', 'read']],
    );
  });

  test('the maximum age is validated at start, naming the key', () => {
    assert.equal(fanOutOptionsFromEnv({ PUSH_FANOUT_RETRY_MAX_AGE_MS: '120000' }).retryMaxAgeMs, 120_000);
    assert.equal(fanOutOptionsFromEnv({ PUSH_FANOUT_UNKNOWN_RETRY_MAX_AGE_MS: '5000' }).retryMaxAgeMs, 5_000, 'the older key still configures it');
    assert.equal(fanOutOptionsFromEnv({}).retryMaxAgeMs, 3_600_000, 'one hour by default');
    assert.throws(
      () => fanOutOptionsFromEnv({ PUSH_FANOUT_RETRY_MAX_AGE_MS: '90000000' }),
      (e: unknown) => e instanceof ConfigError && e.key === 'PUSH_FANOUT_RETRY_MAX_AGE_MS',
    );
    assert.throws(() => fanOutOptionsFromEnv({ PUSH_FANOUT_RETRY_MAX_AGE_MS: 'an hour' }), /PUSH_FANOUT_RETRY_MAX_AGE_MS/);
  });
});
