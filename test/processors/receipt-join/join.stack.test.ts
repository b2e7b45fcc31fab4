import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { RECEIPT_JOIN_BY_UID_STORES, RECEIPT_JOIN_STORES } from '../../../processors/receipt-join/join.ts';
import type { KeyValueStore, TimerStore } from '../../../topology/stores.ts';
import { DAY, ReceiptsHarness, T0, useReceiptsHarness } from '../receipts-harness.ts';

/** receipt-join on the TopologyTestDriver (real serdes, real MariaDB writers). */
describe('receipt-join', () => {
  let h: ReceiptsHarness;
  useReceiptsHarness('join', (harness) => (h = harness));

  test('a receipt is matched to the submission by vendor message id and carries its task, device and app', async () => {
    await h.outcome('d1', 'task-1', 'ACCEPTED', { vendorMessageId: 'req-1' });
    await h.hmsReceipt('req-1', 'tok-1', 0);
    const [r, ...rest] = h.receipts();
    assert.deepEqual(rest, []);
    assert.equal(r!.matched, true);
    assert.deepEqual(
      [r!.task_id, r!.device_id, r!.uid, r!.app_id, r!.vendor, r!.status, r!.code],
      ['task-1', 'd1', 'uid-d1', 'im-test', 'hms', 'DELIVERED', '0'],
    );
  });

  test('duplicate callbacks and replays emit one receipt per (submission, status), with a deterministic event id', async () => {
    await h.outcome('d2', 'task-2', 'ACCEPTED', { vendorMessageId: 'req-2' });
    await h.hmsReceipt('req-2', 'tok-2', 0, T0 - 2000);
    await h.hmsReceipt('req-2', 'tok-2', 0, T0 - 1000); // the vendor resends with another timestamp
    await h.outcome('d2', 'task-2', 'ACCEPTED', { vendorMessageId: 'req-2' }); // outcome replayed
    await h.hmsReceipt('req-2', 'tok-2', 0, T0 - 2000);
    const receipts = h.receipts();
    assert.equal(receipts.length, 1);
    await h.hmsReceipt('req-2', 'tok-2', 6); // a later, different status is news
    const later = h.receipts();
    assert.equal(later.length, 1);
    assert.notEqual(later[0]!.event_id, receipts[0]!.event_id);
  });

  test('a receipt that arrives before its submission waits for it', async () => {
    await h.hmsReceipt('req-3', 'tok-3', 0);
    assert.deepEqual(h.receipts(), []);
    await h.advance(60_000);
    await h.outcome('d3', 'task-3', 'ACCEPTED', { vendorMessageId: 'req-3' });
    const [r] = h.receipts();
    assert.deepEqual([r?.matched, r?.task_id], [true, 'task-3']);
  });

  test('a receipt with no submission is emitted unmatched after the pending window, keyed by the vendor message id', async () => {
    await h.hmsReceipt('req-unknown', 'tok-x', 0);
    await h.advance(9 * 60_000);
    assert.deepEqual(h.receipts(), []);
    await h.advance(2 * 60_000);
    const out = h.driver.readAllOutputs<string, { matched: boolean; task_id: string | null }>('push.receipts');
    assert.equal(out.length, 1);
    assert.equal(out[0]!.key, 'req-unknown');
    assert.deepEqual([out[0]!.value.matched, out[0]!.value.task_id], [false, null]);
  });

  test('batch sends: receipts naming different tokens of one request id go to different submissions', async () => {
    await h.outcome('d5a', 'task-5a', 'ACCEPTED', { vendorMessageId: 'req-5' });
    await h.outcome('d5b', 'task-5b', 'ACCEPTED', { vendorMessageId: 'req-5' });
    await h.hmsReceipt('req-5', 'tok-5a', 0);
    await h.hmsReceipt('req-5', 'tok-5b', 0);
    await h.hmsReceipt('req-5', 'tok-5a', 0);
    assert.deepEqual(
      h
        .receipts()
        .map((r) => r.task_id)
        .sort(),
      ['task-5a', 'task-5b'],
    );
  });

  test('state is bounded: a submission is forgotten after the retention', async () => {
    await h.outcome('d6', 'task-6', 'ACCEPTED', { vendorMessageId: 'req-6' });
    const messages = h.driver.getStateStore<KeyValueStore<unknown>>(RECEIPT_JOIN_STORES.messages);
    const expiry = h.driver.getStateStore<TimerStore>(RECEIPT_JOIN_STORES.due);
    const before = messages.size;
    assert.ok(before >= 1 && expiry.size >= 1);
    await h.advance(7 * DAY + 120_000);
    assert.equal(messages.size, 0);
    assert.equal(expiry.size, 0);
  });
});

describe('receipt-join with a cap on its entries', () => {
  let h: ReceiptsHarness;
  let evicted = 0;
  useReceiptsHarness('join-cap', (harness) => (h = harness), { maxEntries: 3, listener: { evicted: (n) => (evicted += n) } });

  test('past maxEntries the entries due soonest are forgotten and counted; a receipt for one goes out unmatched, the kept ones still match', async () => {
    const entries = () =>
      [RECEIPT_JOIN_STORES, RECEIPT_JOIN_BY_UID_STORES].reduce((n, s) => n + h.driver.getStateStore<KeyValueStore<unknown>>(s.messages).size, 0);
    for (const n of [1, 2, 3, 4, 5]) {
      await h.outcome(`dc${n}`, `task-c${n}`, 'ACCEPTED', { vendorMessageId: `req-c${n}` });
      await h.advance(1_000);
    }
    assert.equal(entries(), 3, 'the join holds maxEntries');
    assert.equal(evicted, 2, 'the two oldest submissions were evicted');

    await h.hmsReceipt('req-c5', 'tok-c5', 0);
    await h.hmsReceipt('req-c1', 'tok-c1', 0);
    assert.deepEqual(
      h.receipts().map((r) => [r.vendor_message_id, r.matched, r.task_id]),
      [
        ['req-c5', true, 'task-c5'],
        ['req-c1', false, null],
      ],
      "a kept submission's receipt matches; an evicted one's goes out unmatched at once (its waiting entry is due soonest)",
    );
    assert.equal(evicted, 3);
    assert.equal(entries(), 3);
  });
});
