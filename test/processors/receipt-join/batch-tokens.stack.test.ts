import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import avro from 'avsc';
import { tokenHash } from '../../../processors/model/ids.ts';
import { fanOutOutcome, replayedAnswer } from '../../../processors/fan-out/records.ts';
import type { PushDispatch, PushOutcome } from '../../../processors/model/records.ts';
import { ReceiptsHarness, TOPICS, useReceiptsHarness } from '../receipts-harness.ts';
import { TEST_APP } from '../../receipts/support.ts';

/**
 * Batch sends (HMS, Xiaomi, vivo): one vendor message id for many devices. The fan-out's outcomes
 * carry the hash of the token each device was sent to, and the join matches every receipt to the
 * submission of the token it names, whatever order outcomes and receipts arrive in.
 */
describe('per-token receipt matching for batch sends', () => {
  let h: ReceiptsHarness;
  useReceiptsHarness('batch', (harness) => (h = harness));

  /** The fan-out's ACCEPTED outcome of `task` on `device`, sent with `token` in batch `requestId`. */
  const accepted = async (device: string, task: string, requestId: string, token: string | null) => {
    const uid = `uid-${device}`;
    const outcome: PushOutcome = {
      event_id: `ev-${task}`,
      task_id: task,
      uid,
      device_id: device,
      conv_id: 'conv-b',
      seq: 1,
      msg_id: `msg-${task}`,
      app_id: TEST_APP,
      platform: 'android',
      vendor: 'hms',
      stage: 'fan-out',
      status: 'ACCEPTED',
      reason: null,
      code: null,
      vendor_message_id: requestId,
      collapse_id: null,
      attempts: 1,
      persisted_at: h.now() - 100,
      at: h.now(),
      latency_ms: 100,
      token_hash: token === null ? null : tokenHash(token),
    };
    await h.driver.pipeInput(TOPICS.outcomes, uid, outcome);
  };

  test('two devices in one batch get their own receipts: dead token and delivery go to the right device, in any order', async () => {
    await h.report('bd-a', 'tok-batch-a');
    await h.report('bd-b', 'tok-batch-b');
    await h.insertTask('bt-a', 'bd-a');
    await h.insertTask('bt-b', 'bd-b');
    await h.advance(1000);
    // Only device a's outcome has arrived (b's comes from another uid partition) when b's receipt does.
    await accepted('bd-a', 'bt-a', 'req-batch', 'tok-batch-a');
    await h.hmsReceipt('req-batch', 'tok-batch-b', 5); // 5: the token is no longer valid
    assert.deepEqual(h.receipts(), [], 'a receipt naming another token is not given to device a; it waits');
    assert.equal((await h.tokenRow('bd-a'))?.status, 1);
    await accepted('bd-b', 'bt-b', 'req-batch', 'tok-batch-b');
    await h.hmsReceipt('req-batch', 'tok-batch-a', 0);
    await h.hmsReceipt('req-batch', 'tok-batch-b', 5); // duplicate callback
    const receipts = h
      .receipts()
      .map((r) => `${r.device_id}:${r.task_id}:${r.status}`)
      .sort();
    assert.deepEqual(receipts, ['bd-a:bt-a:DELIVERED', 'bd-b:bt-b:DEAD_TOKEN']);
    assert.deepEqual(await h.tokenRow('bd-a'), { token: 'tok-batch-a', status: 1, invalid_reason: null, platform: 'android' });
    assert.deepEqual(await h.tokenRow('bd-b'), { token: 'tok-batch-b', status: 0, invalid_reason: 'dead_token', platform: 'android' });
    assert.deepEqual(
      h.invalidations().map((r) => r.device_id),
      ['bd-b'],
    );
    assert.deepEqual([await h.taskStatus('bt-a'), await h.taskStatus('bt-b')], [2, 3]);
  });

  test('failures count against the device whose token failed, even when its receipts arrive first in every batch', async () => {
    await h.report('fd-ok', 'tok-fine');
    await h.report('fd-bad', 'tok-failing');
    await h.advance(1000);
    for (let i = 1; i <= 3; i++) {
      // Device ok's submission first, but the failing device's receipt first: arrival order would swap them.
      await accepted('fd-ok', `ft-ok-${i}`, `req-f${i}`, 'tok-fine');
      await accepted('fd-bad', `ft-bad-${i}`, `req-f${i}`, 'tok-failing');
      await h.hmsReceipt(`req-f${i}`, 'tok-failing', 6); // 6: notifications disabled → failed
      await h.hmsReceipt(`req-f${i}`, 'tok-fine', 0);
    }
    assert.deepEqual(await h.tokenRow('fd-bad'), { token: 'tok-failing', status: 0, invalid_reason: 'consecutive_failures', platform: 'android' });
    assert.deepEqual(await h.tokenRow('fd-ok'), { token: 'tok-fine', status: 1, invalid_reason: null, platform: 'android' });
    const byDevice = h
      .receipts()
      .map((r) => `${r.device_id}:${r.status}`)
      .sort();
    assert.deepEqual(byDevice, ['fd-bad:FAILED', 'fd-bad:FAILED', 'fd-bad:FAILED', 'fd-ok:DELIVERED', 'fd-ok:DELIVERED', 'fd-ok:DELIVERED']);
  });

  test('outcomes without a token hash (written before the field existed) still match in arrival order', async () => {
    await accepted('od-a', 'ot-a', 'req-old', null);
    await accepted('od-b', 'ot-b', 'req-old', null);
    await h.hmsReceipt('req-old', 'tok-old-a', 0);
    await h.hmsReceipt('req-old', 'tok-old-b', 0);
    await h.hmsReceipt('req-old', 'tok-old-a', 0);
    assert.deepEqual(
      h
        .receipts()
        .map((r) => r.task_id)
        .sort(),
      ['ot-a', 'ot-b'],
    );
  });

  test('a receipt whose token is in no submission of the batch is emitted unmatched when the entry expires', async () => {
    await accepted('xd-a', 'xt-a', 'req-x', 'tok-x-a');
    await h.hmsReceipt('req-x', 'tok-stranger', 0);
    assert.deepEqual(h.receipts(), []);
    await h.advance(8 * 86_400_000);
    const out = h.driver.readAllOutputs<string, { matched: boolean; task_id: string | null }>(TOPICS.receipts).map((r) => r.value);
    assert.deepEqual(
      out.map((r) => [r.matched, r.task_id]),
      [[false, null]],
    );
  });
});

describe('push-outcome token_hash', () => {
  const dispatch: PushDispatch = {
    task_id: 'task-1',
    uid: 'u1',
    device_id: 'd1',
    conv_id: 'c1',
    seq: 3,
    msg_id: 'm1',
    app_id: TEST_APP,
    platform: 'android',
    channels: [
      { vendor: 'hms', token: 'tok-hms', classification: {} },
      { vendor: 'fcm', token: 'tok-fcm', classification: {} },
    ],
    title: 'Alice',
    body: 'hello',
    badge: 1,
    collapse_id: 'cid',
    silent: false,
    kind: 'LEADING',
    merged_count: 0,
    persisted_at: 0,
    decided_at: 0,
  };

  test('fan-out outcomes carry the hash of the token the call used, never the token', () => {
    const accepted = fanOutOutcome(
      dispatch,
      { status: 'ACCEPTED', vendor: 'fcm', reason: null, code: null, vendorMessageId: 'vm', attempts: 2, discriminator: 'accepted' },
      1,
    );
    assert.equal(accepted.token_hash, tokenHash('tok-fcm'));
    const dead = fanOutOutcome(
      dispatch,
      { status: 'DEAD_TOKEN', vendor: 'hms', reason: 'dead_token', code: '80300007', attempts: 1, discriminator: '0:hms:DEAD_TOKEN' },
      1,
    );
    assert.equal(dead.token_hash, tokenHash('tok-hms'));
    const replayed = fanOutOutcome(dispatch, replayedAnswer({ status: 1, vendor: 'hms', vendorMessageId: 'vm', failCode: null, attempts: 1, trail: [] }), 1);
    assert.equal(replayed.token_hash, tokenHash('tok-hms'));
    const dropped = fanOutOutcome(
      { ...dispatch, channels: [] },
      { status: 'DROPPED', vendor: null, reason: 'no_token', code: null, attempts: 0, discriminator: 'no_token' },
      1,
    );
    assert.equal(dropped.token_hash, null);
    for (const o of [accepted, dead, replayed]) assert.ok(!JSON.stringify(o).includes('tok-'), 'no token in the outcome');
  });

  test('an outcome written before the field existed reads with token_hash null; a new one round-trips it', () => {
    const wire = new URL('../../fixtures/wire/', import.meta.url);
    const writer = avro.Type.forSchema(JSON.parse(readFileSync(new URL('push-outcome.writer.avsc', wire), 'utf8')) as avro.Schema);
    const reader = avro.Type.forSchema(JSON.parse(readFileSync(new URL('../../../schemas/push-outcome.avsc', import.meta.url), 'utf8')) as avro.Schema);
    assert.ok(!JSON.stringify(writer.schema()).includes('token_hash'), 'the captured fixture predates the field');
    const old = reader.fromBuffer(
      Buffer.from(readFileSync(new URL('push-outcome.hex', wire), 'utf8').trim(), 'hex'),
      reader.createResolver(writer),
    ) as PushOutcome;
    assert.equal(old.token_hash, null);
    const fresh = { ...old, token_hash: tokenHash('tok') };
    assert.equal((reader.fromBuffer(reader.toBuffer(fresh)) as PushOutcome).token_hash, tokenHash('tok'));
  });
});
