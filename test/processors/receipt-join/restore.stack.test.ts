import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { RECEIPT_JOIN_STORES } from '../../../processors/receipt-join/join.ts';
import { tokenHash } from '../../../processors/model/ids.ts';
import { messageKey } from '../../../processors/receipt-join/rekey.ts';
import { compositeKey } from '../../../processors/model/keys.ts';
import { TOKEN_LIFECYCLE_STORES } from '../../../processors/token-lifecycle/lifecycle.ts';
import { TOPICS as PIPELINE_TOPICS } from '../../../pipeline/topics.ts';
import { DAY, ReceiptsHarness, T0, TOPICS, useReceiptsHarness } from '../receipts-harness.ts';
import type { StreamTask } from '../../../topology/task.ts';
import { standaloneTask } from '../../support/task.ts';

const MINUTE = 60_000;

/**
 * Changelogs written by the previous version restore. It kept each join entry's expiry and each
 * token's staleness timer in separate changelogged timer stores (`receipt-join-expiry`,
 * `token-lifecycle-stale`); now the entries' own values say when they expire. An entry restored
 * without its due time must still match receipts and expire, at the time the old timer had.
 */
describe('restoring state written by the previous version', () => {
  let h: ReceiptsHarness;
  useReceiptsHarness('restore', (harness) => (h = harness));
  let clock = T0;

  /** A task of the sub-topology owning `store`, restored from `changelog` (values as the old version wrote them), then initialised. */
  async function restoredTask(store: string, changelog: ReadonlyArray<readonly [string, object]>): Promise<StreamTask> {
    const task = standaloneTask(h.topology, 'restore-test', () => clock, {
      subtopology: h.topology.subtopologyOfStore(store)!,
      dlqTopic: PIPELINE_TOPICS.dlq.name,
    });
    for (const [key, value] of changelog) task.stores.get(store)!.restore(key, Buffer.from(JSON.stringify(value)));
    await task.init();
    return task;
  }

  /** Output records of `topic` since the last call, by key. */
  async function keysWritten(task: StreamTask, topic: string): Promise<string[]> {
    await task.flush();
    return task
      .drainOutputs()
      .records.filter((r) => r.topic === topic)
      .map((r) => r.key!.toString('utf8'));
  }

  const receipt = (vendorMessageId: string, token: string, receivedAt: number) => ({
    vendor: 'hms',
    vendor_message_id: vendorMessageId,
    token_hash: tokenHash(token),
    status: 'DELIVERED',
    code: '0',
    at: receivedAt,
    received_at: receivedAt,
    app_id: 'im-test',
  });

  test('join entries without a due time match receipts and expire when their old timers would have', async () => {
    clock = T0;
    const acceptedAt = T0 - DAY;
    const submission = {
      task_id: 't-legacy',
      uid: 'uid-legacy',
      device_id: 'd-legacy',
      app_id: 'im-test',
      platform: 'android',
      conv_id: 'c',
      seq: 1,
      persisted_at: acceptedAt - 100,
      accepted_at: acceptedAt,
      token_hash: tokenHash('tok-legacy'),
    };
    const task = await restoredTask(RECEIPT_JOIN_STORES.messages, [
      [messageKey('hms', 'vm-legacy'), { subs: [submission], assigned: {}, emitted: [], pending: [] }],
      [messageKey('hms', 'vm-orphan'), { subs: [], assigned: {}, emitted: [], pending: [receipt('vm-orphan', 'tok-orphan', T0 - 5 * MINUTE)] }],
    ]);

    const value = { type: 'receipt', receipt: receipt('vm-legacy', 'tok-legacy', T0) };
    await task.process({
      topic: TOPICS.byMessage,
      partition: 0,
      offset: '0',
      key: Buffer.from(messageKey('hms', 'vm-legacy')),
      value: Buffer.from(JSON.stringify(value)),
      timestamp: T0,
      headers: {},
    });
    assert.deepEqual(await keysWritten(task, TOPICS.receipts), ['uid-legacy'], 'the restored submission matched, keyed by its uid');

    // The orphan receipt's pending window (10 minutes from its arrival) ends at T0 + 5 min.
    clock = T0 + 6 * MINUTE;
    await task.punctuateWallClock(clock);
    assert.deepEqual(await keysWritten(task, TOPICS.receipts), ['vm-orphan'], 'emitted unmatched after its pending window');
    const messages = task.stores.get(RECEIPT_JOIN_STORES.messages) as unknown as { size: number };
    assert.equal(messages.size, 1);

    // The submission's retention (7 days in the harness) runs from its acceptance.
    clock = acceptedAt + 7 * DAY + 2 * MINUTE;
    await task.punctuateWallClock(clock);
    assert.equal(messages.size, 0, 'forgotten after the retention');
    await task.close();
  });

  test('a restored valid token is still swept 30 days after its last report', async () => {
    clock = T0;
    const health = {
      uid: 'uid-old',
      device_id: 'd-old',
      vendor: 'hms',
      platform: 'android',
      app_id: 'im-test',
      token: 'tok-old',
      manufacturer: 'huawei',
      state: 'VALID',
      reason: null,
      reported_at: T0 - 29 * DAY,
      changed_at: T0 - 29 * DAY,
      failures: 0,
    };
    const task = await restoredTask(TOKEN_LIFECYCLE_STORES.tokens, [[compositeKey('d-old', 'hms'), health]]);
    clock = T0 + DAY / 2;
    await task.punctuateWallClock(clock);
    assert.deepEqual(await keysWritten(task, TOPICS.tokens), [], 'not stale yet');
    clock = T0 + DAY + 2 * 3_600_000;
    await task.punctuateWallClock(clock);
    assert.deepEqual(await keysWritten(task, TOPICS.tokens), ['uid-old'], 'swept: an INVALID report fed back');
    await task.close();
  });
});
