/**
 * The facts each decision stage records in its outcome's (or dispatch's) `detail`
 * (processors/model/outcomes.ts, docs/data.md "Decision details"), through the TopologyTestDriver
 * and the Avro schemas: what `pushctl trace` turns into the words of why.
 */
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { detailString, parseDetail } from '../../processors/model/outcomes.ts';
import { withHarness } from './harness.ts';

const factsOf = (records: ReadonlyArray<{ detail?: string | null }>) => records.map((r) => parseDetail(r.detail));

describe('decision details', () => {
  test('detailString: pairs in order, empty values left out, separators in values replaced; parseDetail reads them back', () => {
    assert.equal(detailString({ a: 1, b: null, c: '', d: 'x;y=z', e: undefined }), 'a=1;d=x_y_z');
    assert.equal(detailString({ a: null }), null);
    assert.deepEqual(parseDetail('hb=12;ack=before'), { hb: '12', ack: 'before' });
    assert.deepEqual(parseDetail(null), {});
  });

  test('online-filter: an ACK within the hold window records the heartbeat age, the window and the ACK delay; an ACK before the message says so (the heartbeat age is counted from the last heartbeat, not from ACKs)', () =>
    withHarness({ onlineFilter: { holdWindowMs: 5_000 } }, async (h) => {
      await h.token('u1', 'd1', 'fcm');
      await h.online('u1', 'd1');
      await h.advanceTo(1_500);
      await h.message('u1', 'c1');
      await h.advanceTo(1_800);
      await h.presence('u1', 'd1', 'ACK', 'c1', 1);
      await h.presence('u1', 'd1', 'ACK', 'c2', 1);
      await h.advanceTo(2_000);
      await h.message('u1', 'c2');
      const { outcomes } = h.drain();
      assert.deepEqual(factsOf(outcomes), [
        { hb: '1500', hold: '5000', ack: '300' },
        { hb: '2000', ack: 'before' },
      ]);
    }));

  test('merge: a merged message names the seq whose push carries it and the window', () =>
    withHarness({ merge: { windowMs: 2_000 } }, async (h) => {
      await h.token('u1', 'd1', 'fcm');
      await h.message('u1', 'c1');
      await h.message('u1', 'c1');
      await h.message('u1', 'c1');
      await h.advanceTo(3_000);
      const { outcomes, dispatches } = h.drain();
      assert.deepEqual(
        outcomes.map((o) => [o.seq, o.reason, parseDetail(o.detail)]),
        [[2, 'merged', { by: '3', win: '2000' }]],
      );
      assert.deepEqual(
        dispatches.map((d) => [d.seq, d.kind, parseDetail(d.detail)]),
        [
          [1, 'LEADING', { on: 'OFFLINE', ch: 'fcm', why: 'only' }],
          [3, 'TRAILING', { on: 'OFFLINE', ch: 'fcm', why: 'only' }],
        ],
      );
    }));

  test('policy: quiet hours in the user zone, mute and the mention that overrode it, private mode, the channel and why', () =>
    withHarness({ startMs: Date.parse('2026-01-15T14:30:00Z'), policy: { quotas: { hms: { '*': 0 } } } }, async (h) => {
      await h.token('quiet', 'd1', 'fcm');
      await h.settings('quiet', { time_zone: 'Asia/Shanghai', quiet_hours: { start_minute: 22 * 60, end_minute: 7 * 60 } });
      await h.message('quiet', 'c1');
      await h.token('muted', 'd1', 'fcm');
      await h.settings('muted', { muted_conversations: ['c1', 'c2'], private_mode: true });
      await h.message('muted', 'c1');
      await h.message('muted', 'c2', { mention: 'DIRECT' });
      // A Huawei phone with HMS (over its quota) and FCM: re-routed to FCM.
      await h.token('quota', 'd1', 'hms', { platform: 'harmony', manufacturer: 'huawei' });
      await h.token('quota', 'd1', 'fcm', { platform: 'harmony', manufacturer: 'huawei' });
      await h.message('quota', 'c1');
      const { outcomes, dispatches } = h.drain();
      assert.deepEqual(
        outcomes.map((o) => [o.uid, o.reason, parseDetail(o.detail)]),
        [
          ['quiet', 'dnd', { tz: 'Asia/Shanghai', qh: '22:00-07:00', local: '22:30' }],
          ['muted', 'mute', {}],
        ],
      );
      assert.deepEqual(
        dispatches.map((d) => [d.uid, parseDetail(d.detail)]),
        [
          ['muted', { on: 'OFFLINE', ch: 'fcm', why: 'only', mention: 'DIRECT', over: 'mute', private: '1' }],
          ['quota', { on: 'OFFLINE', ch: 'fcm', why: 'quota', skip: 'hms' }],
        ],
      );
    }));

  test('policy: a push deferred through quiet hours and released at their end says so', () =>
    withHarness({ startMs: Date.parse('2026-01-15T14:30:00Z'), policy: { deferredRelease: true } }, async (h) => {
      // 22:30 in Shanghai; quiet 22:00-07:00 there ends at 23:00 UTC.
      await h.token('u1', 'd1', 'fcm');
      await h.settings('u1', { time_zone: 'Asia/Shanghai', quiet_hours: { start_minute: 22 * 60, end_minute: 7 * 60 } });
      await h.message('u1', 'c1');
      await h.advanceTo(Date.parse('2026-01-15T23:00:01Z') - Date.parse('2026-01-15T14:30:00Z'), 600_000);
      assert.deepEqual(
        h.drain().dispatches.map((d) => [d.kind, parseDetail(d.detail)]),
        [['DEFERRED', { on: 'OFFLINE', deferred: '1', ch: 'fcm', why: 'only' }]],
      );
    }));

  test('online-filter: a pushed device carries its heartbeat age to the dispatch (offline after a disconnect, half-open after the hold), through a merge window too', () =>
    withHarness({ onlineFilter: { holdWindowMs: 5_000 }, merge: { windowMs: 2_000 } }, async (h) => {
      await h.token('u1', 'd1', 'fcm');
      await h.online('u1', 'd1');
      await h.advanceTo(1_000);
      await h.message('u1', 'half-open');
      await h.advanceTo(6_500);
      await h.presence('u1', 'd1', 'DISCONNECT');
      await h.advanceTo(8_000);
      await h.message('u1', 'c1');
      await h.message('u1', 'c1');
      await h.advanceTo(11_000);
      await h.token('u2', 'd1', 'fcm');
      await h.message('u2', 'c1');
      assert.deepEqual(
        h.drain().dispatches.map((d) => [d.uid, d.conv_id, d.kind, parseDetail(d.detail)]),
        [
          ['u1', 'half-open', 'LEADING', { on: 'HALF_OPEN', hb: '6000', ch: 'fcm', why: 'only' }],
          ['u1', 'c1', 'LEADING', { on: 'OFFLINE', hb: '8000', ch: 'fcm', why: 'only' }],
          ['u1', 'c1', 'TRAILING', { on: 'OFFLINE', hb: '8000', ch: 'fcm', why: 'only' }],
          ['u2', 'c1', 'LEADING', { on: 'OFFLINE', ch: 'fcm', why: 'only' }],
        ],
      );
    }));
});
