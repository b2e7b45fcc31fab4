/**
 * The receipt join beside push.outcomes (pipeline/apps/receipts.ts, processors/model/receipt-route.ts):
 * a push whose receipts name its recipient is joined by uid, in the task that reads its outcome, at
 * no by-message record; one whose receipts do not (a campaign's, or written before the parameter)
 * still meets them by the vendor message id. On the TopologyTestDriver, real serdes and MariaDB.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { RECEIPT_JOIN_BY_UID_STORES, RECEIPT_JOIN_STORES } from '../../../processors/receipt-join/join.ts';
import { compositeKey } from '../../../processors/model/keys.ts';
import { recipientParam } from '../../../processors/model/receipt-route.ts';
import type { KeyValueStore } from '../../../topology/stores.ts';
import { ReceiptsHarness, TOPICS, useReceiptsHarness } from '../receipts-harness.ts';

describe('receipt-join by uid', () => {
  let h: ReceiptsHarness;
  useReceiptsHarness('join_by_uid', (harness) => (h = harness));

  /**
   * The receipt of request `req` for device `device`'s token, naming the device's user (or no one),
   * keyed as the receiver keys it (by that user, else by vendor) or by `key`.
   */
  const receipt = (req: string, device: string, status: number, named = true, key?: string) =>
    h.hmsReceipt(req, `tok-${device}`, status, h.now(), named ? recipientParam(`uid-${device}`)! : '', key);

  test('a receipt naming its recipient is matched beside the outcome: no re-key record, the task delivered', async () => {
    await h.insertTask('task-1', 'd1');
    await h.outcome('d1', 'task-1', 'ACCEPTED', { vendorMessageId: 'req-1', receiptsByUid: true });
    await receipt('req-1', 'd1', 0);
    await receipt('req-1', 'd1', 0); // the vendor posts it again
    const [r, ...rest] = h.receipts();
    assert.deepEqual(rest, [], 'one receipt per (submission, status)');
    assert.deepEqual([r!.matched, r!.task_id, r!.uid, r!.device_id, r!.status], [true, 'task-1', 'uid-d1', 'd1', 'DELIVERED']);
    assert.equal(await h.taskStatus('task-1'), 2);
    const produced = h.produced();
    assert.equal(produced[TOPICS.byMessage], undefined, 'nothing keyed by the vendor message id');
    assert.equal(produced[TOPICS.byUid], undefined, 'the callback came keyed by its recipient: joined in-process');
    // The driver commits after every input: the entry is written when the submission came; the
    // delivery marks it in memory only (processors/receipt-join/join.ts), the duplicate changes nothing.
    assert.equal(produced[`${RECEIPT_JOIN_BY_UID_STORES.messages}-changelog`], 1);
    assert.equal(produced[`${RECEIPT_JOIN_STORES.messages}-changelog`], undefined, 'nothing in the by-message join');
    const entries = h.driver.getStateStore<KeyValueStore<unknown>>(RECEIPT_JOIN_BY_UID_STORES.messages);
    assert.ok(entries.get(compositeKey('uid-d1', 'hms', 'req-1')), 'the entry is keyed by its user first (pipeline/repartition/store-keys.ts)');
  });

  test('a callback keyed by vendor (as a batch about several users is) is re-keyed by the uid its receipt names, and matched', async () => {
    await h.insertTask('task-5', 'd5');
    await h.outcome('d5', 'task-5', 'ACCEPTED', { vendorMessageId: 'req-5', receiptsByUid: true });
    h.produced();
    await receipt('req-5', 'd5', 0, true, 'hms');
    const [r, ...rest] = h.receipts();
    assert.deepEqual(rest, []);
    assert.deepEqual([r?.matched, r?.task_id, r?.status], [true, 'task-5', 'DELIVERED']);
    assert.equal(await h.taskStatus('task-5'), 2);
    assert.deepEqual(h.produced(), { [TOPICS.byUid]: 1 }, 'beside the receipt read above: the delivery changes the join entry in memory only');
  });

  test('a receipt naming its recipient that comes before the outcome waits for it', async () => {
    await receipt('req-2', 'd2', 0);
    assert.deepEqual(h.receipts(), []);
    await h.advance(60_000);
    await h.outcome('d2', 'task-2', 'ACCEPTED', { vendorMessageId: 'req-2', receiptsByUid: true });
    const [r] = h.receipts();
    assert.deepEqual([r?.matched, r?.task_id], [true, 'task-2']);
  });

  test('an outcome and receipt naming no one still meet by the vendor message id', async () => {
    await h.outcome('d3', 'task-3', 'ACCEPTED', { vendorMessageId: 'req-3' });
    await receipt('req-3', 'd3', 0, false);
    const [r] = h.receipts();
    assert.deepEqual([r?.matched, r?.task_id], [true, 'task-3']);
    const produced = h.produced();
    assert.equal(produced[TOPICS.byMessage], 2, 'the submission and the receipt');
    assert.equal(produced[TOPICS.byUid], undefined);
  });

  test('a batch request’s receipts naming no one do not meet submissions joined by uid: each path keeps its own', async () => {
    // The fan-out never mixes them for one request; a receipt the vendor sent without the parameter
    // waits the pending window and comes out unmatched, counted, instead of matching by accident.
    await h.outcome('d4', 'task-4', 'ACCEPTED', { vendorMessageId: 'req-4', receiptsByUid: true });
    await receipt('req-4', 'd4', 0, false);
    assert.deepEqual(h.receipts(), []);
    await h.advance(11 * 60_000);
    const [r, ...rest] = h.receipts();
    assert.deepEqual(rest, []);
    assert.deepEqual([r?.matched, r?.task_id], [false, null]);
  });
});
