import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { PushDispatch } from '../../../processors/model/records.ts';
import { VENDORS, type Vendor } from '../../../processors/fan-out/vendor-port.ts';
import { startEmulators, type StartedEmulators } from '../../../emulators/index.ts';
import { uniqueName } from '../../support/stack.ts';
import { followOutcomes, kafka, produceDispatches, spawnFanOutWorker, type FanOutWorker } from './stack-helpers.ts';
import { dispatch, taskTable } from './support.ts';
import { createTopicsWithLeaders } from '../../../topology/create-topics.ts';

/**
 * The fan-out on the real stack (Kafka, schema registry, MariaDB) with all six emulators, run as
 * worker processes; the second test kills the worker with SIGKILL mid-run.
 */
describe('fan-out worker on the real stack with all six vendor emulators', () => {
  let em: StartedEmulators;
  let db: Awaited<ReturnType<typeof taskTable>>;
  let prefix: string;
  let env: Record<string, string>;
  let follower: Awaited<ReturnType<typeof followOutcomes>>;
  const workers: FanOutWorker[] = [];

  before(async () => {
    em = await startEmulators();
    db = await taskTable();
    prefix = `${uniqueName('fanout')}.`;
    const dir = mkdtempSync(join(tmpdir(), 'fanout-it-'));
    const appsFile = join(dir, 'apps.json');
    writeFileSync(appsFile, JSON.stringify(em.rawAppsConfig));
    chmodSync(appsFile, 0o600);
    const admin = kafka.admin();
    await admin.connect();
    await createTopicsWithLeaders(
      admin,
      ['push.dispatch', 'im.presence', 'push.outcomes', 'push.tokens', 'push.dlq'].map((t) => ({
        topic: prefix + t,
        numPartitions: t === 'push.dispatch' || t === 'im.presence' ? 3 : 1,
        replicationFactor: 1,
      })),
    );
    await admin.disconnect();
    env = { FANOUT_APP_ID: uniqueName('fan-out'), FANOUT_TOPIC_PREFIX: prefix, FANOUT_APPS_CONFIG: appsFile, FANOUT_TASK_TABLE: db.table };
    follower = await followOutcomes(prefix);
  });
  after(async () => {
    for (const w of workers) if (w.child.exitCode === null) w.child.kill('SIGKILL');
    await follower?.stop();
    await em?.close();
    await db?.close();
  });

  const accepted = (tasks: ReadonlySet<string>) => () =>
    new Set(follower.outcomes.filter((o) => o.status === 'ACCEPTED' && tasks.has(o.task_id)).map((o) => o.task_id)).size === tasks.size;

  test('every push reaches the right emulator once, with its token, collapse id and payload', async () => {
    const worker = spawnFanOutWorker(env);
    workers.push(worker);
    await worker.started();
    const batch: PushDispatch[] = VENDORS.flatMap((vendor: Vendor) =>
      Array.from({ length: 40 }, (_, i) =>
        dispatch({
          uid: `u-${vendor}-${i}`,
          device: `d-${i}`,
          conv_id: `conv-${i % 5}`,
          seq: 7,
          title: `From ${i}`,
          channels: [{ vendor, token: em.token(vendor, `${vendor}-${i}`) }],
        }),
      ),
    );
    await produceDispatches(prefix, batch);
    await follower.until(accepted(new Set(batch.map((d) => d.task_id))), 90_000);
    for (const vendor of VENDORS) {
      const mine = batch.filter((d) => d.channels[0]!.vendor === vendor);
      const got = em[vendor].accepted();
      assert.equal(got.length, mine.length, `${vendor}: one submission per push`);
      for (const d of mine) {
        const token = d.channels[0]!.token;
        const hits = got.filter((r) => r.token === token);
        assert.equal(hits.length, 1, `${vendor} ${d.uid}`);
        assert.equal(hits[0]!.title, d.title);
        assert.equal((hits[0]!.data as Record<string, string>).seq, '7');
        if (vendor === 'apns' || vendor === 'fcm' || vendor === 'hms') assert.equal(hits[0]!.collapseId, d.collapse_id);
      }
      // Vendors with numeric notify ids: the same (uid, conv) always gets the same id.
      const ids = new Map<string, Set<string>>();
      for (const d of mine) {
        const hit = got.find((r) => r.token === d.channels[0]!.token)!;
        ids.set(d.collapse_id, (ids.get(d.collapse_id) ?? new Set()).add(String(hit.collapseId)));
      }
      assert.ok(
        [...ids.values()].every((s) => s.size === 1),
        `${vendor}: one replace id per collapse id`,
      );
    }
    const [rows] = await db.pool.query(`SELECT status, COUNT(*) AS n FROM \`${db.table}\` GROUP BY status`);
    assert.deepEqual(
      (rows as Array<{ status: number; n: number }>).map((r) => [r.status, Number(r.n)]),
      [[1, batch.length]],
    );
    worker.child.kill('SIGTERM');
    assert.equal(await worker.exited, 0, worker.stderr());
  });

  test('after SIGKILL mid-run no task recorded as submitted is submitted again; crash-window duplicates keep their collapse id', async (t) => {
    em.reset();
    em.apns.latencyMs = 100;
    em.fcm.latencyMs = 100;
    const batch: PushDispatch[] = Array.from({ length: 600 }, (_, i) => {
      const vendor: Vendor = i % 2 === 0 ? 'apns' : 'fcm';
      return dispatch({ uid: `k-${i}`, device: 'phone', conv_id: `g-${i % 7}`, seq: 100 + i, channels: [{ vendor, token: em.token(vendor, `k-${i}`) }] });
    });
    const tasks = new Set(batch.map((d) => d.task_id));
    const slow = { ...env, PUSH_FANOUT_MAX_IN_FLIGHT: '32' };
    const first = spawnFanOutWorker(slow);
    workers.push(first);
    await first.started();
    await produceDispatches(prefix, batch);
    const deadline = Date.now() + 60_000;
    const submittedRows = async () =>
      Number(
        ((await db.pool.query(`SELECT COUNT(*) AS n FROM \`${db.table}\` WHERE status = 1 AND task_id IN (?)`, [[...tasks]]))[0] as Array<{ n: number }>)[0]!.n,
      );
    while ((await submittedRows()) < 100 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    first.child.kill('SIGKILL');
    await first.exited;
    const [rows] = await db.pool.query(`SELECT task_id FROM \`${db.table}\` WHERE status = 1`);
    const recorded = new Set((rows as Array<{ task_id: string }>).map((r) => r.task_id).filter((t) => tasks.has(t)));
    const acceptedBeforeRestart = em.apns.accepted().length + em.fcm.accepted().length;
    assert.ok(recorded.size > 0 && recorded.size < batch.length, `killed mid-run (${recorded.size} recorded as submitted)`);

    const second = spawnFanOutWorker(slow);
    workers.push(second);
    await second.started();
    await follower.until(accepted(tasks), 120_000);
    second.child.kill('SIGTERM');
    await second.exited;

    const hits = new Map<string, Array<{ collapseId: string | undefined }>>();
    for (const r of [...em.apns.accepted(), ...em.fcm.accepted()]) hits.set(r.token, [...(hits.get(r.token) ?? []), { collapseId: r.collapseId }]);
    for (const d of batch) {
      const mine = hits.get(d.channels[0]!.token) ?? [];
      assert.ok(mine.length >= 1, `${d.uid} reached its vendor`);
      if (recorded.has(d.task_id)) assert.equal(mine.length, 1, `${d.uid} was recorded as submitted and must not be resubmitted`);
      assert.ok(
        mine.every((h) => h.collapseId === d.collapse_id),
        `${d.uid}: every copy carries the collapse id`,
      );
    }
    const duplicates = batch.filter((d) => (hits.get(d.channels[0]!.token)?.length ?? 0) > 1).length;
    t.diagnostic(
      `crash run: ${recorded.size} recorded before SIGKILL, ${acceptedBeforeRestart} accepted before restart, ${duplicates} crash-window duplicates (same collapse id)`,
    );
    const [final] = await db.pool.query(`SELECT COUNT(*) AS n FROM \`${db.table}\` WHERE status = 1 AND task_id IN (?)`, [[...tasks]]);
    assert.equal(Number((final as Array<{ n: number }>)[0]!.n), batch.length);
  });

  test('chaos: a 429 storm with Retry-After, 5xx bursts and GOAWAY mid-stream lose nothing and send nothing early', async (t) => {
    em.reset();
    const worker = spawnFanOutWorker(env);
    workers.push(worker);
    await worker.started();
    const withFallback = Array.from({ length: 60 }, (_, i) =>
      dispatch({
        uid: `s-${i}`,
        device: 'p',
        conv_id: 'storm',
        seq: 500 + i,
        channels: [
          { vendor: 'fcm', token: em.token('fcm', `s-${i}`) },
          { vendor: 'hms', token: em.token('hms', `s-${i}`) },
        ],
      }),
    );
    const fcmOnly = Array.from({ length: 30 }, (_, i) =>
      dispatch({ uid: `f-${i}`, device: 'p', conv_id: 'storm', seq: 500 + i, channels: [{ vendor: 'fcm', token: em.token('fcm', `f-${i}`) }] }),
    );
    const flaky = Array.from({ length: 30 }, (_, i) =>
      dispatch({ uid: `h-${i}`, device: 'p', conv_id: 'burst', seq: 500 + i, channels: [{ vendor: 'hms', token: em.token('hms', `h-${i}`) }] }),
    );
    const ios = Array.from({ length: 60 }, (_, i) =>
      dispatch({ uid: `i-${i}`, device: 'p', conv_id: 'goaway', seq: 500 + i, channels: [{ vendor: 'apns', token: em.token('apns', `i-${i}`) }] }),
    );
    // The storm: every FCM request answers 429 with Retry-After: 2 until it is cleared 3 s later.
    em.fcm.script({ kind: 'rate-limit', retryAfterS: 2 });
    for (const d of flaky) em.hms.script({ kind: 'server-error' }, { token: d.channels[0]!.token, times: 2 });
    em.apns.script({ kind: 'goaway' }, { times: 3 });
    const probe = dispatch({ uid: 'probe', device: 'p', conv_id: 'storm', seq: 1, channels: [{ vendor: 'fcm', token: em.token('fcm', 'probe') }] });
    await produceDispatches(prefix, [probe]);
    for (const until = Date.now() + 60_000; em.fcm.received.length === 0 && Date.now() < until;) await new Promise((r) => setTimeout(r, 10));
    const firstThrottle = em.fcm.received[0]!.at;
    setTimeout(() => em.fcm.clearFaults(), Math.max(0, firstThrottle + 3000 - Date.now())).unref();
    const all = [probe, ...withFallback, ...fcmOnly, ...flaky, ...ios];
    await produceDispatches(prefix, all.slice(1));
    await follower.until(accepted(new Set(all.map((d) => d.task_id))), 120_000).catch((error: Error) => {
      const missing = all.filter((d) => !follower.outcomes.some((o) => o.task_id === d.task_id && o.status === 'ACCEPTED'));
      const seen = missing.slice(0, 5).map(
        (d) =>
          `${d.uid}: ${follower.outcomes
            .filter((o) => o.task_id === d.task_id)
            .map((o) => `${o.status}/${o.vendor}/${o.code}`)
            .join(',')}`,
      );
      throw new Error(
        `${error.message}; ${missing.length} without ACCEPTED, e.g. ${seen.join(' | ')}; emulators: fcm ${em.fcm.received.length}, hms ${em.hms.received.length}, apns ${em.apns.received.length}; worker: ${worker.stderr().slice(-500)}`,
      );
    });
    worker.child.kill('SIGTERM');
    await worker.exited;

    const fcm = em.fcm.received;
    const early = fcm.filter((r) => r.at > firstThrottle && r.at < firstThrottle + 2000);
    assert.deepEqual(
      early.map((r) => r.answer),
      [],
      'no FCM request inside the Retry-After window',
    );
    const byVendor = (d: PushDispatch) => follower.outcomes.find((o) => o.status === 'ACCEPTED' && o.task_id === d.task_id)!.vendor;
    assert.ok(
      withFallback.every((d) => byVendor(d) === 'hms' || em.fcm.accepted().some((r) => r.token === d.channels[0]!.token)),
      'throttled devices moved to their HMS token',
    );
    assert.ok(withFallback.filter((d) => byVendor(d) === 'hms').length > 0);
    assert.ok(
      fcmOnly.every((d) => byVendor(d) === 'fcm'),
      'FCM-only devices pushed after the storm',
    );
    for (const d of flaky) {
      const calls = em.hms.received.filter((r) => r.token === d.channels[0]!.token).map((r) => r.answer);
      assert.deepEqual(calls, ['81000001', '81000001', 'accepted'], d.uid);
    }
    assert.equal(em.apns.goaways, 3);
    t.diagnostic(
      `chaos: ${fcm.filter((r) => r.answer === 'QUOTA_EXCEEDED').length} FCM 429s, ${withFallback.filter((d) => byVendor(d) === 'hms').length}/${withFallback.length} devices moved to HMS, ${em.hms.received.filter((r) => r.answer === '81000001').length} HMS 5xx retried, ${em.apns.goaways} GOAWAYs`,
    );
    for (const d of ios) assert.equal(em.apns.accepted().filter((r) => r.token === d.channels[0]!.token).length, 1, d.uid);
  });
});
