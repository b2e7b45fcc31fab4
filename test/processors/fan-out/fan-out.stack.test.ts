import assert from 'node:assert/strict';
import { beforeEach, describe, test } from 'node:test';
import { VENDORS } from '../../../processors/fan-out/vendor-port.ts';
import { dispatch, fanOutDriver, taskRow, fanOutStack } from './support.ts';

describe('fan-out through the TopologyTestDriver, vendor emulators and MariaDB', () => {
  const fx = fanOutStack();
  let fo: ReturnType<typeof fanOutDriver>;
  const options = () => ({ vendors: fx.registry, backoffInitialMs: 5, backoffMaxMs: 50, defaultThrottleMs: 100 });
  beforeEach(async () => {
    fx.em.reset();
    await fo?.close();
    fo = fanOutDriver(fx.db.pool, fx.db.table, options());
  });

  test('one dispatch per vendor reaches that vendor once with the token, collapse id and payload; the task is marked submitted', async () => {
    for (const vendor of VENDORS) {
      const d = dispatch({ uid: `u-${vendor}`, device: `d-${vendor}`, channels: [{ vendor, token: fx.em.token(vendor, `tok-${vendor}`) }] });
      await fo.send(d);
      const got = fx.em[vendor].accepted();
      assert.equal(got.length, 1, vendor);
      assert.equal(got[0]!.token, fx.em.token(vendor, `tok-${vendor}`), vendor);
      assert.equal(got[0]!.title, 'Alice', vendor);
      assert.equal(got[0]!.body, 'See you at 7?', vendor);
      if (vendor === 'apns' || vendor === 'fcm' || vendor === 'hms') assert.equal(got[0]!.collapseId, d.collapse_id, vendor);
      else assert.match(String(got[0]!.collapseId), /^\d+$/, `${vendor} notify id`);
      const data = got[0]!.data as Record<string, string>;
      assert.equal(data.conv_id, 'c1', vendor);
      assert.equal(data.seq, '1', vendor);
      const [outcome] = fo.outcomes();
      assert.equal(outcome!.status, 'ACCEPTED', vendor);
      assert.equal(outcome!.vendor, vendor);
      assert.ok(outcome!.vendor_message_id);
      const row = await taskRow(fx.db.pool, fx.db.table, d.task_id);
      assert.equal(row!.status, 1, vendor);
      assert.equal(row!.vendor, vendor);
      assert.equal(row!.vendor_message_id, outcome!.vendor_message_id);
    }
  });

  test('a task already submitted is never submitted again, by this instance or a restarted one; its outcome replays with the same event id', async () => {
    const d = dispatch({ uid: 'u-dup', device: 'd-dup', channels: [{ vendor: 'fcm', token: fx.em.token('fcm', 'dup') }] });
    await fo.send(d);
    await fo.send(d);
    const [first, again] = fo.outcomes();
    await fo.close();
    fo = fanOutDriver(fx.db.pool, fx.db.table, options());
    await fo.send(d);
    const [afterRestart] = fo.outcomes();
    assert.equal(fx.em.fcm.received.length, 1);
    for (const o of [again!, afterRestart!]) {
      assert.equal(o.status, 'ACCEPTED');
      assert.equal(o.event_id, first!.event_id);
      assert.equal(o.vendor_message_id, first!.vendor_message_id);
    }
  });

  test('a dead token is invalidated at once, never retried, and the device falls back to its next channel', async () => {
    const apnsToken = fx.em.token('apns', 'dead-ios');
    fx.em.apns.deadTokens.add(apnsToken);
    const d = dispatch({
      uid: 'u-dead',
      device: 'd-dead',
      channels: [
        { vendor: 'apns', token: apnsToken },
        { vendor: 'fcm', token: fx.em.token('fcm', 'alive') },
      ],
    });
    await fo.send(d);
    assert.equal(fx.em.apns.received.length, 1);
    assert.equal(fx.em.fcm.accepted().length, 1);
    assert.deepEqual(
      fo.outcomes().map((o) => [o.status, o.vendor, o.reason]),
      [
        ['DEAD_TOKEN', 'apns', 'dead_token'],
        ['ACCEPTED', 'fcm', null],
      ],
    );
    const [report] = fo.tokens();
    assert.deepEqual([report!.vendor, report!.token, report!.state, report!.source, report!.reason], ['apns', apnsToken, 'INVALID', 'FAN_OUT', 'dead_token']);
    assert.equal((await taskRow(fx.db.pool, fx.db.table, d.task_id))!.vendor, 'fcm');
  });

  test('a crash before the outcomes were committed: the restarted instance re-emits every channel answer and the dead token invalidation from the task row, calling no vendor', async () => {
    const apnsToken = fx.em.token('apns', 'dead-before-crash');
    fx.em.apns.deadTokens.add(apnsToken);
    const d = dispatch({
      uid: 'u-crash',
      device: 'd-crash',
      channels: [
        { vendor: 'apns', token: apnsToken },
        { vendor: 'fcm', token: fx.em.token('fcm', 'alive-after-crash') },
      ],
    });
    await fo.send(d);
    const before = fo.outcomes();
    // The instance dies after the ledger recorded the task but before its outcomes reached Kafka:
    // a fresh instance gets the same dispatch again.
    await fo.close();
    fo = fanOutDriver(fx.db.pool, fx.db.table, options());
    await fo.send(d);
    const replayed = fo.outcomes();
    assert.equal(fx.em.apns.received.length, 1, 'the dead token is not called again');
    assert.equal(fx.em.fcm.received.length, 1, 'the accepted push is not sent again');
    assert.deepEqual(
      replayed.map((o) => [o.status, o.vendor, o.event_id]),
      before.map((o) => [o.status, o.vendor, o.event_id]),
    );
    assert.deepEqual(
      fo.tokens().map((r) => [r.vendor, r.token, r.state, r.reason]),
      [['apns', apnsToken, 'INVALID', 'dead_token']],
    );
  });

  test('429 with Retry-After: the device moves to its next channel and nothing reaches that vendor before Retry-After', async () => {
    const first = dispatch({
      uid: 'u-429a',
      device: 'd1',
      channels: [
        { vendor: 'fcm', token: fx.em.token('fcm', 'a') },
        { vendor: 'hms', token: fx.em.token('hms', 'a') },
      ],
    });
    fx.em.fcm.script({ kind: 'rate-limit', retryAfterS: 1 }, { times: 1 });
    await fo.send(first);
    assert.deepEqual(
      fo.outcomes().map((o) => [o.status, o.vendor]),
      [
        ['THROTTLED', 'fcm'],
        ['ACCEPTED', 'hms'],
      ],
    );
    const throttledAt = fx.em.fcm.received[0]!.at;
    const second = dispatch({ uid: 'u-429b', device: 'd2', channels: [{ vendor: 'fcm', token: fx.em.token('fcm', 'b') }] });
    await fo.send(second);
    assert.equal(fo.outcomes()[0]!.status, 'ACCEPTED');
    const next = fx.em.fcm.received[1]!;
    assert.ok(next.at - throttledAt >= 1000, `next FCM request ${next.at - throttledAt} ms after the 429`);
  });

  test('a long Retry-After parks the dispatch instead of stalling the commit; it resumes when due', async () => {
    const token = fx.em.token('fcm', 'parked');
    fx.em.fcm.script({ kind: 'rate-limit', retryAfterS: 2 }, { token, times: 1 });
    const d = dispatch({ uid: 'u-park', device: 'd1', channels: [{ vendor: 'fcm', token }] });
    await fo.send(d);
    assert.deepEqual(
      fo.outcomes().map((o) => [o.status, o.reason]),
      [['THROTTLED', 'rate_limited']],
    );
    assert.equal((await taskRow(fx.db.pool, fx.db.table, d.task_id))!.status, 0);
    assert.equal(fx.em.fcm.received.length, 1);
    // The driver's wall clock drives the punctuator; the vendor pause runs on real time: pass both.
    await new Promise((r) => setTimeout(r, 2100));
    await fo.driver.advanceWallClockTime(2500);
    assert.deepEqual(
      fo.outcomes().map((o) => [o.status, o.vendor]),
      [['ACCEPTED', 'fcm']],
    );
    const [throttled, accepted] = fx.em.fcm.received;
    assert.ok(accepted!.at - throttled!.at >= 2000, 'resubmitted only after Retry-After');
    assert.equal((await taskRow(fx.db.pool, fx.db.table, d.task_id))!.status, 1);
  });

  test('while a vendor is paused by Retry-After, devices with another token move on without calling it', async () => {
    const first = dispatch({ uid: 'u-pause', device: 'd1', channels: [{ vendor: 'fcm', token: fx.em.token('fcm', 'p1') }] });
    fx.em.fcm.script({ kind: 'rate-limit', retryAfterS: 5 }, { times: 1 });
    await fo.send(first);
    assert.deepEqual(
      fo.outcomes().map((o) => o.status),
      ['THROTTLED'],
    );
    const second = dispatch({
      uid: 'u-pause',
      device: 'd2',
      channels: [
        { vendor: 'fcm', token: fx.em.token('fcm', 'p2') },
        { vendor: 'vivo', token: fx.em.token('vivo', 'p2') },
      ],
    });
    await fo.send(second);
    assert.deepEqual(
      fo.outcomes().map((o) => [o.status, o.vendor, o.code]),
      [
        ['THROTTLED', 'fcm', 'VENDOR_PAUSED'],
        ['ACCEPTED', 'vivo', null],
      ],
    );
    assert.equal(fx.em.fcm.received.length, 1, 'FCM was not called during its pause');
  });

  test('a device whose only channel stays throttled fails after a bounded number of calls, spaced by the pause', async () => {
    const token = fx.em.token('fcm', 'storm');
    fx.em.fcm.script({ kind: 'rate-limit' }, { token });
    const d = dispatch({ uid: 'u-storm', device: 'd1', channels: [{ vendor: 'fcm', token }] });
    await fo.send(d);
    const calls = fx.em.fcm.received.filter((r) => r.token === token);
    assert.equal(calls.length, 4);
    for (let i = 1; i < calls.length; i++) assert.ok(calls[i]!.at - calls[i - 1]!.at >= 100, 'each call waits out the pause');
    assert.deepEqual(
      fo.outcomes().map((o) => [o.status, o.reason]),
      [...Array(4).fill(['THROTTLED', 'rate_limited']), ['FAILED', 'rate_limited']],
    );
    assert.equal((await taskRow(fx.db.pool, fx.db.table, d.task_id))!.status, 3);
  });

  test('5xx bursts are retried a bounded number of times before the device moves to its next channel', async () => {
    const token = fx.em.token('hms', 'flaky');
    fx.em.hms.script({ kind: 'server-error' }, { token, times: 2 });
    const ok = dispatch({ uid: 'u-5xx', device: 'd1', channels: [{ vendor: 'hms', token }] });
    await fo.send(ok);
    assert.deepEqual(
      fx.em.hms.received.map((r) => r.answer),
      ['81000001', '81000001', 'accepted'],
    );
    assert.equal(fo.outcomes()[0]!.attempts, 3);
    const down = fx.em.token('hms', 'down');
    fx.em.hms.script({ kind: 'server-error' }, { token: down });
    const moved = dispatch({
      uid: 'u-5xx',
      device: 'd2',
      channels: [
        { vendor: 'hms', token: down },
        { vendor: 'fcm', token: fx.em.token('fcm', 'down') },
      ],
    });
    await fo.send(moved);
    assert.equal(fx.em.hms.received.filter((r) => r.token === down).length, 3);
    assert.deepEqual(
      fo.outcomes().map((o) => [o.status, o.vendor, o.reason]),
      [
        ['FAILED', 'hms', 'retries_exhausted'],
        ['ACCEPTED', 'fcm', null],
      ],
    );
    assert.equal((await taskRow(fx.db.pool, fx.db.table, moved.task_id))!.status, 1);
  });

  test('quota: next channel if there is one, else dropped with reason quota; never retried', async () => {
    fx.em.xiaomi.script({ kind: 'quota' });
    const moved = dispatch({
      uid: 'u-q',
      device: 'd1',
      channels: [
        { vendor: 'xiaomi', token: fx.em.token('xiaomi', 'q1') },
        { vendor: 'fcm', token: fx.em.token('fcm', 'q1') },
      ],
    });
    await fo.send(moved);
    assert.deepEqual(
      fo.outcomes().map((o) => [o.status, o.reason]),
      [
        ['THROTTLED', 'quota'],
        ['ACCEPTED', null],
      ],
    );
    const dropped = dispatch({ uid: 'u-q', device: 'd2', channels: [{ vendor: 'xiaomi', token: fx.em.token('xiaomi', 'q2') }] });
    await fo.send(dropped);
    assert.deepEqual(
      fo.outcomes().map((o) => [o.status, o.reason]),
      [
        ['THROTTLED', 'quota'],
        ['DROPPED', 'quota'],
      ],
    );
    assert.equal(fx.em.xiaomi.received.filter((r) => r.token === fx.em.token('xiaomi', 'q2')).length, 1);
  });

  test("a 5,000-character title is cut by the vendor's payload builder, not refused; no channel → dropped", async () => {
    // Payload limits are kept by the builders (test/sinks/vendors/payload-limits.test.ts); with
    // the dispatch's bounded ids the custom data always leaves room, so nothing is refused for size.
    const big = dispatch({
      uid: 'u-big',
      device: 'd1',
      title: 'x'.repeat(5000),
      channels: [
        { vendor: 'apns', token: fx.em.token('apns', 'big') },
        { vendor: 'fcm', token: fx.em.token('fcm', 'big') },
      ],
    });
    await fo.send(big);
    assert.deepEqual(
      fo.outcomes().map((o) => [o.status, o.vendor, o.reason]),
      [['ACCEPTED', 'apns', null]],
    );
    const sent = fx.em.apns.accepted()[0]!;
    assert.ok(sent.title!.endsWith('…') && sent.title!.length < 5000, 'the title went out cut');
    assert.equal(fx.em.fcm.received.length, 0);
    assert.equal((await taskRow(fx.db.pool, fx.db.table, big.task_id))!.status, 1);
    await fo.send(dispatch({ uid: 'u-none', device: 'd1', channels: [] }));
    assert.deepEqual(
      fo.outcomes().map((o) => [o.status, o.reason]),
      [['DROPPED', 'no_token']],
    );
  });
});
