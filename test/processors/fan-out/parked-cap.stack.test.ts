/**
 * The fan-out's parked store is capped per task (PUSH_FANOUT_MAX_PARKED): during a vendor outage,
 * parking one push more than PUSH_FANOUT_MAX_PARKED ends the oldest parked push (smallest
 * decided_at) at once, FAILED parked_evicted with the vendor's last code, exactly once, counted in
 * push_fanout_evictions_total; the others still go out when the vendor returns. Parked values are
 * stored in a compact form, and values written by earlier versions are still read.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ConfigError } from '../../../common/errors.ts';
import { fanOutConfig, fanOutOptionsFromEnv, type FanOutOptions } from '../../../processors/fan-out/options.ts';
import { ParkedDispatches, decodeParked, encodeParked, parkedStoreSerde, type DispatchProgress, type ParkedValue } from '../../../processors/fan-out/parked.ts';
import { PipelineMetrics } from '../../../sinks/metrics/pipeline-metrics.ts';
import { parseAppsConfig } from '../../../sinks/vendors/apps-config.ts';
import { createVendorRegistry, type VendorRegistry } from '../../../sinks/vendors/registry.ts';
import { InMemoryKeyValueStore, InMemoryTimerStore } from '../../../topology/in-memory-stores.ts';
import { startEmulators, type StartedEmulators } from '../../../emulators/index.ts';
import { dispatch, fanOutDriver, taskRow, taskTable } from './support.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('fan-out: the parked store over its cap', () => {
  let em: StartedEmulators;
  let registry: VendorRegistry;
  let db: Awaited<ReturnType<typeof taskTable>>;
  const metrics = new PipelineMetrics();

  before(async () => {
    em = await startEmulators();
    const raw = em.rawAppsConfig as { ca: string; apps: Array<{ appId: string; vendors: Record<string, Record<string, unknown>> }> };
    const apps = raw.apps.map((a) => ({ ...a, vendors: Object.fromEntries(Object.entries(a.vendors).map(([v, c]) => [v, { ...c, timeoutMs: 500 }])) }));
    registry = createVendorRegistry(parseAppsConfig({ ...raw, apps }));
    db = await taskTable();
  });
  after(async () => {
    metrics.stopGcObserver();
    await registry.close();
    await em.close();
    await db.close();
  });

  test('the oldest parked pushes end FAILED parked_evicted once, counted; the rest go out when the vendor returns', async () => {
    const fo = fanOutDriver(db.pool, db.table, {
      vendors: registry,
      backoffInitialMs: 50,
      backoffMaxMs: 400,
      inlineBackoffMaxMs: 100,
      retryPollMs: 50,
      retryMaxAgeMs: 600_000,
      maxParked: 3,
      listener: metrics.fanOutListener,
    });
    const pump = async (ms: number) => {
      for (const until = Date.now() + ms; Date.now() < until;) {
        await sleep(100);
        await fo.driver.advanceWallClockTime(100);
      }
    };
    em.fcm.script({ kind: 'server-error' });
    const now = Date.now();
    // Sent out of age order: the two oldest (decided 50 and 40 s ago) are not the first two sent.
    const ages = [30_000, 50_000, 10_000, 40_000, 20_000];
    const pushes = ages.map((age, i) =>
      dispatch({
        uid: `u-cap-${i}`,
        device: 'd1',
        conv_id: `c-${i}`,
        decided_at: now - age,
        channels: [{ vendor: 'fcm', token: em.token('fcm', `cap-${i}`) }],
      }),
    );
    const [, oldest, , second] = pushes as [unknown, (typeof pushes)[number], unknown, (typeof pushes)[number]];
    const evictionsBefore = metrics.fanOutEvictions.get({ vendor: 'fcm' });
    for (const d of pushes) await fo.send(d); // each returns once its push is parked

    const evicted = fo.outcomes();
    assert.deepEqual(
      evicted.map((o) => [o.task_id, o.status, o.vendor, o.reason, o.code]).sort(),
      [oldest, second].map((d) => [d.task_id, 'FAILED', 'fcm', 'parked_evicted', 'UNAVAILABLE']).sort(),
      "the two oldest by decided_at end, with the vendor's last code",
    );
    assert.equal(metrics.fanOutEvictions.get({ vendor: 'fcm' }) - evictionsBefore, 2);
    for (const d of [oldest, second]) assert.equal((await taskRow(db.pool, db.table, d.task_id))!.status, 3, 'evicted task row is failed');
    await pump(300);
    assert.equal(metrics.fanOutParked.get({ task: '0_0' }), 3, 'the gauge shows the parked pushes');
    const evictedCalls = (d: (typeof pushes)[number]) => em.fcm.received.filter((r) => r.token === d.channels[0]!.token).length;
    const callsAtEviction = [evictedCalls(oldest), evictedCalls(second)];

    em.fcm.clearFaults();
    const kept = pushes.filter((d) => d !== oldest && d !== second);
    for (const until = Date.now() + 8_000; Date.now() < until;) {
      await pump(200);
      if (kept.every((d) => em.fcm.accepted().some((r) => r.token === d.channels[0]!.token))) break;
    }
    await pump(300);
    const later = fo.outcomes();
    assert.deepEqual(later.map((o) => [o.task_id, o.status]).sort(), kept.map((d) => [d.task_id, 'ACCEPTED']).sort(), 'every kept push accepted, once');
    for (const d of kept) assert.equal(em.fcm.accepted().filter((r) => r.token === d.channels[0]!.token).length, 1);
    assert.deepEqual([evictedCalls(oldest), evictedCalls(second)], callsAtEviction, 'an evicted push is never called again');
    assert.equal(em.fcm.accepted().filter((r) => r.token === oldest.channels[0]!.token || r.token === second.channels[0]!.token).length, 0);
    assert.equal(metrics.fanOutParked.get({ task: '0_0' }), 0);

    // Its dispatch delivered again (a replay) re-emits the one outcome, with the same event id, and sends nothing.
    await fo.send(oldest);
    assert.deepEqual(
      fo.outcomes().map((o) => o.event_id),
      evicted.filter((o) => o.task_id === oldest.task_id).map((o) => o.event_id),
    );
    assert.equal(evictedCalls(oldest), callsAtEviction[0]);
    assert.equal(metrics.fanOutEvictions.get({ vendor: 'fcm' }) - evictionsBefore, 2, 'counted once');
    await fo.close();
  });

  test('an evicted push whose last call never reached the vendor (APNs down, connection refused) ends vendor_unreachable, not as a submission', async () => {
    const fo = fanOutDriver(db.pool, db.table, {
      vendors: registry,
      backoffInitialMs: 50,
      backoffMaxMs: 400,
      inlineBackoffMaxMs: 100,
      retryPollMs: 50,
      retryMaxAgeMs: 600_000,
      maxParked: 1,
      listener: metrics.fanOutListener,
    });
    const restarting = em.restart('apns', 4_000);
    const older = dispatch({
      uid: 'u-ga-old',
      device: 'ios',
      decided_at: Date.now() - 20_000,
      channels: [{ vendor: 'apns', token: em.token('apns', 'ga-old') }],
    });
    const newer = dispatch({ uid: 'u-ga-new', device: 'ios', channels: [{ vendor: 'apns', token: em.token('apns', 'ga-new') }] });
    const evictionsBefore = metrics.fanOutEvictions.get({ vendor: 'apns' });
    await fo.send(newer);
    await fo.send(older);
    assert.deepEqual(
      fo.outcomes().map((o) => [o.task_id, o.status, o.reason, o.code]),
      [[older.task_id, 'FAILED', 'vendor_unreachable', 'CONNECTION_LOST']],
    );
    assert.equal(metrics.fanOutEvictions.get({ vendor: 'apns' }) - evictionsBefore, 1);
    assert.equal((await taskRow(db.pool, db.table, older.task_id))!.status, 3);
    await restarting;
    for (const until = Date.now() + 8_000; Date.now() < until && !em.apns.accepted().some((r) => r.token === newer.channels[0]!.token);) {
      await sleep(100);
      await fo.driver.advanceWallClockTime(100);
    }
    await fo.driver.advanceWallClockTime(100);
    assert.deepEqual(
      fo.outcomes().map((o) => [o.task_id, o.status]),
      [[newer.task_id, 'ACCEPTED']],
    );
    assert.equal(em.apns.accepted().filter((r) => r.token === older.channels[0]!.token).length, 0);
    await fo.close();
  });

  test('the cap is validated at start, naming the key', () => {
    assert.equal(fanOutOptionsFromEnv({}).maxParked, 50_000, 'default');
    assert.equal(fanOutOptionsFromEnv({ PUSH_FANOUT_MAX_PARKED: '2000' }).maxParked, 2_000);
    for (const bad of ['0', '-5', 'many', '20000000']) {
      assert.throws(
        () => fanOutOptionsFromEnv({ PUSH_FANOUT_MAX_PARKED: bad }),
        (e: unknown) => e instanceof ConfigError && e.key === 'PUSH_FANOUT_MAX_PARKED',
        bad,
      );
    }
    const options = { vendors: registry, ledger: undefined as never, outputs: { outcomes: 'o', tokens: 't' } } satisfies FanOutOptions;
    assert.throws(() => fanOutConfig({ ...options, maxParked: 0 }), /PUSH_FANOUT_MAX_PARKED/);
  });
});

describe('fan-out: parked values', () => {
  const progress = (over: Partial<DispatchProgress> = {}): DispatchProgress => {
    const d = dispatch({
      uid: 'u-park',
      device: 'd1',
      conv_id: 'c-park',
      seq: 12,
      title: '张伟 👨‍👩‍👧',
      body: 'ok "quoted" \\ text',
      channels: [
        { vendor: 'apns', token: 'dead' },
        { vendor: 'fcm', token: 'tok-fcm' },
      ],
    });
    d.channels[1]!.classification = { category: 'IM' };
    return {
      dispatch: d,
      key: d.uid,
      timestamp: 1_700_000_000_000,
      channel: 1,
      call: 5,
      attempts: 6,
      last: { vendor: 'apns', code: 'BadDeviceToken', quotaOnly: false, throttled: false },
      trail: [
        { channel: 0, status: 'DEAD_TOKEN', vendor: 'apns', reason: 'dead_token', code: 'BadDeviceToken', attempts: 1, discriminator: '0:apns:DEAD_TOKEN' },
      ],
      waitingOn: 'UNAVAILABLE',
      ...over,
    };
  };

  test('the compact form keeps everything a retry needs, without field names', () => {
    for (const p of [progress(), progress({ key: 'another-key', trail: [] })]) {
      const encoded = encodeParked(p);
      assert.deepEqual(decodeParked(p.dispatch.task_id, parkedStoreSerde.deserialize(parkedStoreSerde.serialize(encoded))), p);
      assert.ok(!encoded.includes('"task_id"') && !encoded.includes(p.dispatch.task_id), 'no field names, no task id (the store key)');
      assert.ok(Buffer.byteLength(encoded) < 0.7 * Buffer.byteLength(JSON.stringify(p)), 'smaller than the object form');
    }
  });

  test('a value written by an earlier version (a DispatchProgress object) is restored and resumed', () => {
    const { waitingOn: _, ...old } = progress();
    const store = new InMemoryKeyValueStore<ParkedValue>('fan-out-parked', parkedStoreSerde);
    const timers = new InMemoryTimerStore('fan-out-retry-timers');
    store.restore(old.dispatch.task_id, Buffer.from(JSON.stringify(old)));
    timers.restore(old.dispatch.task_id, Buffer.from('1000'));
    const parked = new ParkedDispatches(store, timers, new InMemoryTimerStore('age', false), 10);
    const restored: string[] = [];
    parked.restore((taskId) => restored.push(taskId));
    assert.deepEqual(restored, [old.dispatch.task_id]);
    assert.deepEqual(parked.takeDue(1_000, 10), [old]);
    assert.equal(parked.size, 0);
  });

  test('over the cap, the push decided first leaves, whatever the order it was parked in', () => {
    const parked = new ParkedDispatches(
      new InMemoryKeyValueStore<ParkedValue>('p', parkedStoreSerde),
      new InMemoryTimerStore('t'),
      new InMemoryTimerStore('age', false),
      2,
    );
    const at = (uid: string, decidedAt: number) => {
      const p = progress();
      return { ...p, key: uid, dispatch: { ...p.dispatch, uid, task_id: `task-${uid}`, decided_at: decidedAt } };
    };
    parked.park(at('b', 200), 5_000);
    parked.park(at('a', 100), 5_000);
    assert.deepEqual(parked.takeOverCap(), []);
    parked.park(at('c', 300), 5_000);
    assert.deepEqual(
      parked.takeOverCap().map((p) => p.dispatch.uid),
      ['a'],
    );
    parked.park(at('a0', 50), 5_000);
    assert.deepEqual(
      parked.takeOverCap().map((p) => p.dispatch.uid),
      ['a0'],
      'the one just parked, when it is the oldest',
    );
    assert.deepEqual(
      parked
        .takeDue(5_000, 10)
        .map((p) => p.dispatch.uid)
        .sort(),
      ['b', 'c'],
    );
  });
});
