/** Deterministic ids: the same inputs always give the same id; different inputs never collide in practice. */
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { collapseId, notifyId, outcomeEventId, receiptEventId, senderCollapseId, taskId, tokenHash } from '../../../processors/model/ids.ts';
import { decisionOutcome } from '../../../processors/model/outcomes.ts';
import { onlineFilterOptionsFromEnv, compileOnlineFilterOptions } from '../../../processors/online-filter/options.ts';

describe('ids', () => {
  test('task ids are deterministic UUIDs, distinct per device and per part boundary', () => {
    const a = taskId('u1', 'c1', 7, 'd1');
    assert.equal(taskId('u1', 'c1', 7, 'd1'), a);
    assert.match(a, /^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    assert.notEqual(taskId('u1', 'c1', 7, 'd2'), a);
    assert.notEqual(taskId('u1', 'c1', 8, 'd1'), a);
    assert.notEqual(taskId('u1|c', '1', 7, 'd1'), taskId('u1', 'c|1', 7, 'd1'));
    const many = new Set(Array.from({ length: 20_000 }, (_, i) => taskId(`u${i % 100}`, `c${i % 7}`, i, `d${i % 3}`)));
    assert.equal(many.size, 20_000);
  });

  test('collapse ids depend on (uid, conv) only and fit APNs (≤ 64 bytes); notify ids are positive 31-bit', () => {
    assert.equal(collapseId('u1', 'c1'), collapseId('u1', 'c1'));
    assert.notEqual(collapseId('u1', 'c1'), collapseId('u1', 'c2'));
    assert.ok(Buffer.byteLength(collapseId('u'.repeat(500), 'c'.repeat(500))) <= 64);
    const ids = new Set<number>();
    for (let i = 0; i < 1_000; i++) {
      const n = notifyId(collapseId(`u${i}`, 'c'));
      assert.ok(Number.isInteger(n) && n >= 1 && n <= 2 ** 31 - 1);
      assert.equal(notifyId(collapseId(`u${i}`, 'c')), n);
      ids.add(n);
    }
    assert.equal(ids.size, 1_000);
    // The number every push sent so far carries for this collapse id (FNV-1a): a change would stack notifications.
    assert.equal(notifyId('0123456789abcdef0123456789abcdef'), 1 + (fnv1a('0123456789abcdef0123456789abcdef') % (2 ** 31 - 1)));
  });

  test('every id kind gives the value releases so far have given: records, MySQL rows, ClickHouse dedupe and devices hold them', () => {
    assert.equal(taskId('u1', 'c1', 7, 'd1'), 'eb0614e2-bc0d-5aba-8a17-92403c59e58d');
    assert.equal(collapseId('u1', 'c1'), 'e843a9cdb54a23a05b9dead6426cb727');
    assert.equal(senderCollapseId('notices', 'k1'), '4eba7f3bb97ffa63a35f484dbb69da04');
    assert.equal(tokenHash('tok-1'), '65dcf16ea3dfa49069628089eb4a7548');
    assert.equal(receiptEventId('hms', 'm1', 't1', 'd1', 'DELIVERED'), 'd3f5f2e80d3914f827f42b1394bd2a4e');
    assert.equal(outcomeEventId('merge', 'MERGED', 't1', 17), 'ddd6d77f-ec60-5e98-a952-713ffb5e5104');
  });

  test('outcome event ids are stable across replays and differ by status and reason', () => {
    const subject = { uid: 'u1', device_id: 'd1', conv_id: 'c1', seq: 3, msg_id: 'm', app_id: 'a', persisted_at: 1 };
    const first = decisionOutcome('policy', 'SUPPRESSED', 'dnd', subject, 100);
    const replay = decisionOutcome('policy', 'SUPPRESSED', 'dnd', subject, 999);
    assert.equal(first.event_id, replay.event_id, 'the decision time does not enter the id');
    assert.notEqual(decisionOutcome('policy', 'SUPPRESSED', 'mute', subject, 100).event_id, first.event_id);
    assert.notEqual(outcomeEventId('merge', 'MERGED', first.task_id), outcomeEventId('policy', 'MERGED', first.task_id));
    assert.equal(first.task_id, taskId('u1', 'c1', 3, 'd1'));
  });
});

describe('online-filter options', () => {
  test('the hold window must be within 5–30 s, named PUSH_HOLD_WINDOW_MS', () => {
    assert.throws(() => compileOnlineFilterOptions({ holdWindowMs: 4_999 }), /PUSH_HOLD_WINDOW_MS/);
    assert.throws(() => compileOnlineFilterOptions({ holdWindowMs: 30_001 }), /PUSH_HOLD_WINDOW_MS/);
    assert.throws(() => onlineFilterOptionsFromEnv({ PUSH_HOLD_WINDOW_MS: 'ten' }), /PUSH_HOLD_WINDOW_MS/);
    assert.equal(compileOnlineFilterOptions().holdWindowMs, 10_000);
    assert.equal(onlineFilterOptionsFromEnv({ PUSH_HOLD_WINDOW_MS: '30000' }).holdWindowMs, 30_000);
  });
});

/** FNV-1a 32-bit, written out here so the test fails if ids.ts's notify id changes its function. */
function fnv1a(s: string): number {
  let h = 0x811c9dc5;
  for (const byte of new TextEncoder().encode(s)) h = Math.imul(h ^ byte, 0x01000193) >>> 0;
  return h;
}
