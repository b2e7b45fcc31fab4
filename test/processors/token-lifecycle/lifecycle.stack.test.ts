import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { DAY, ReceiptsHarness, useReceiptsHarness } from '../receipts-harness.ts';

/**
 * Token lifecycle (docs/design.md, "receipts and tokens") through the receipts topology on the
 * TopologyTestDriver and a real MariaDB.
 */
describe('token lifecycle', () => {
  let h: ReceiptsHarness;
  useReceiptsHarness('tokens', (harness) => (h = harness));

  /** Submits task `task` to `device` (accepted by HMS under request id `vm`). */
  const submit = async (device: string, task: string, vm = `vm-${task}`) => h.outcome(device, task, 'ACCEPTED', { vendorMessageId: vm });

  test('a client report is stored once; an identical report writes nothing; a changed one is upserted on (device_id, vendor)', async () => {
    await h.report('d-report', 'tok-A', { platform: 'android' });
    assert.deepEqual(await h.tokenRow('d-report'), { token: 'tok-A', status: 1, invalid_reason: null, platform: 'android' });

    // Mark the stored row, then report the same token again: an unchanged report must not write.
    await h.mysql.pool.query("UPDATE im_push_token SET platform = 'marker' WHERE device_id = 'd-report'");
    await h.advance(60_000);
    await h.report('d-report', 'tok-A', { platform: 'android' });
    assert.equal((await h.tokenRow('d-report'))?.platform, 'marker', 'unchanged report was not written');

    await h.advance(60_000);
    await h.report('d-report', 'tok-B', { platform: 'android' });
    assert.deepEqual(await h.tokenRow('d-report'), { token: 'tok-B', status: 1, invalid_reason: null, platform: 'android' });
    const [rows] = await h.mysql.pool.query("SELECT COUNT(*) AS n FROM im_push_token WHERE device_id = 'd-report'");
    assert.equal((rows as Array<{ n: number }>)[0]!.n, 1, 'one row per (device_id, vendor)');
  });

  test('a dead-token receipt invalidates at once and feeds an INVALID report back to push.tokens', async () => {
    await h.report('d-dead', 'tok-dead');
    await h.advance(1000);
    await submit('d-dead', 't-dead');
    await h.hmsReceipt('vm-t-dead', 'tok-dead', 5);
    assert.deepEqual(await h.tokenRow('d-dead'), { token: 'tok-dead', status: 0, invalid_reason: 'dead_token', platform: 'android' });
    const fed = h.invalidations();
    assert.equal(fed.length, 1);
    assert.deepEqual(
      { device: fed[0]!.device_id, vendor: fed[0]!.vendor, token: fed[0]!.token, source: fed[0]!.source, reason: fed[0]!.reason },
      { device: 'd-dead', vendor: 'hms', token: 'tok-dead', source: 'RECEIPT', reason: 'dead_token' },
    );
  });

  test('a dead-token answer from the fan-out invalidates at once', async () => {
    await h.report('d-sync', 'tok-sync');
    await h.advance(1000);
    await h.outcome('d-sync', 't-sync', 'DEAD_TOKEN');
    assert.equal((await h.tokenRow('d-sync'))?.invalid_reason, 'dead_token');
  });

  test('three consecutive failures invalidate; a success in between resets the count; a duplicate receipt counts once', async () => {
    await h.report('d-fail', 'tok-fail');
    await h.advance(1000);
    const fail = async (task: string, times = 1) => {
      await submit('d-fail', task);
      for (let i = 0; i < times; i++) await h.hmsReceipt(`vm-${task}`, 'tok-fail', 6); // 6: notifications disabled → failed
    };
    await fail('f1');
    await fail('f2', 3); // delivered three times by the vendor: still one failure
    await submit('d-fail', 'ok1');
    await h.hmsReceipt('vm-ok1', 'tok-fail', 0); // delivered: resets
    await fail('f3');
    await fail('f4');
    assert.equal((await h.tokenRow('d-fail'))?.status, 1, 'two failures after a success keep the token');
    await fail('f5');
    assert.deepEqual(await h.tokenRow('d-fail'), { token: 'tok-fail', status: 0, invalid_reason: 'consecutive_failures', platform: 'android' });
  });

  test('the sweep invalidates a token not refreshed for 30 days, and only that one', async () => {
    await h.report('d-stale', 'tok-stale');
    await h.report('d-fresh', 'tok-fresh');
    await h.advance(20 * DAY);
    await h.report('d-fresh', 'tok-fresh'); // refreshed (same token: no MySQL write, but the clock restarts)
    await h.advance(10 * DAY + 2 * 3_600_000);
    assert.equal((await h.tokenRow('d-stale'))?.invalid_reason, 'stale');
    assert.equal((await h.tokenRow('d-fresh'))?.status, 1);
    const fed = h.invalidations();
    assert.deepEqual(
      fed.map((r) => [r.device_id, r.source, r.reason]),
      [['d-stale', 'SWEEP', 'stale']],
    );
    await h.advance(21 * DAY);
    assert.equal((await h.tokenRow('d-fresh'))?.invalid_reason, 'stale', 'swept 30 days after its last refresh');
  });

  test('a new report for the same (device_id, vendor) revives an invalid token, with a fresh failure count', async () => {
    await h.report('d-revive', 'tok-old');
    await h.advance(1000);
    await submit('d-revive', 'r1');
    await h.hmsReceipt('vm-r1', 'tok-old', 2); // app uninstalled
    assert.equal((await h.tokenRow('d-revive'))?.status, 0);

    await h.advance(60_000);
    await h.report('d-revive', 'tok-new');
    assert.deepEqual(await h.tokenRow('d-revive'), { token: 'tok-new', status: 1, invalid_reason: null, platform: 'android' });

    await h.advance(1000);
    await submit('d-revive', 'r2');
    await h.hmsReceipt('vm-r2', 'tok-new', 6);
    await submit('d-revive', 'r3');
    await h.hmsReceipt('vm-r3', 'tok-new', 6);
    assert.equal((await h.tokenRow('d-revive'))?.status, 1, 'failures before the revival do not count');

    // Re-reporting the very same dead token also revives it (the client says it is valid again).
    await submit('d-revive', 'r4');
    await h.hmsReceipt('vm-r4', 'tok-new', 5);
    assert.equal((await h.tokenRow('d-revive'))?.status, 0);
    await h.advance(1000);
    await h.report('d-revive', 'tok-new');
    assert.equal((await h.tokenRow('d-revive'))?.status, 1);
  });

  test('evidence about a replaced token does not invalidate its successor', async () => {
    await h.report('d-replace', 'tok-1');
    await h.advance(1000);
    await submit('d-replace', 'p1');
    const sentAt = h.now();
    await h.advance(60_000);
    await h.report('d-replace', 'tok-2'); // the device re-registered before the receipt came
    await h.hmsReceipt('vm-p1', 'tok-1', 5, sentAt + 500);
    assert.deepEqual(await h.tokenRow('d-replace'), { token: 'tok-2', status: 1, invalid_reason: null, platform: 'android' });
    assert.deepEqual(h.invalidations(), []);
    // An INVALID report naming the old token (say, from the fan-out) leaves the new one alone too.
  });

  test('receipts set im_push_task.status: 2 delivered, 3 failed, and a late failure never undoes a delivery', async () => {
    await h.report('d-task', 'tok-task');
    for (const t of ['task-ok', 'task-bad', 'task-both']) await h.insertTask(t, 'd-task');
    await h.advance(1000);
    await submit('d-task', 'task-ok');
    await submit('d-task', 'task-bad');
    await submit('d-task', 'task-both');
    await h.hmsReceipt('vm-task-ok', 'tok-task', 0);
    await h.hmsReceipt('vm-task-bad', 'tok-task', 6);
    await h.hmsReceipt('vm-task-both', 'tok-task', 0);
    await h.hmsReceipt('vm-task-both', 'tok-task', 6);
    assert.equal(await h.taskStatus('task-ok'), 2);
    assert.equal(await h.taskStatus('task-bad'), 3);
    assert.equal(await h.taskStatus('task-both'), 2);
  });
});
