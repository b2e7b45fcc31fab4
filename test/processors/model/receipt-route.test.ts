/**
 * Which pushes name their recipient in the vendor's callback parameter, so their receipts are
 * joined by uid (processors/model/receipt-route.ts): the fan-out's vendor message carries the
 * parameter and its ACCEPTED outcome says so; a campaign's push does neither.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { fanOutOutcome, pushMessage, type FanOutAnswer } from '../../../processors/fan-out/records.ts';
import { collapseId, taskId } from '../../../processors/model/ids.ts';
import { RECIPIENT_PARAM_MAX_BYTES, receiptRawKey, recipientOfParam, recipientParam } from '../../../processors/model/receipt-route.ts';
import type { BusinessTag, PushDispatch } from '../../../processors/model/records.ts';

function dispatch(uid: string, business: BusinessTag | null = null): PushDispatch {
  return {
    task_id: taskId(uid, 'c1', 1, 'd1'),
    uid,
    device_id: 'd1',
    conv_id: 'c1',
    seq: 1,
    msg_id: 'm1',
    app_id: 'app-1',
    platform: 'android',
    channels: [{ vendor: 'hms', token: 'tok-1', classification: {} }],
    title: 'Alice',
    body: 'See you at 7?',
    badge: 1,
    collapse_id: collapseId(uid, 'c1'),
    silent: false,
    kind: 'LEADING',
    merged_count: 1,
    persisted_at: 1_000,
    decided_at: 1_005,
    business,
  };
}

const answer = (status: FanOutAnswer['status']): FanOutAnswer => ({
  status,
  vendor: 'hms',
  reason: null,
  code: null,
  vendorMessageId: status === 'ACCEPTED' ? 'req-1' : null,
  attempts: 1,
  discriminator: 'accepted',
});

describe('receipts joined by uid: who names the recipient', () => {
  test('the parameter names a uid that fits it, and reads back; other parameters name no one', () => {
    assert.equal(recipientParam('u-42'), 'uid:u-42');
    assert.equal(recipientOfParam(recipientParam('u-42')), 'u-42');
    const longest = 'x'.repeat(RECIPIENT_PARAM_MAX_BYTES - 'uid:'.length);
    assert.equal(recipientOfParam(recipientParam(longest)), longest);
    assert.equal(recipientParam(`${longest}x`), undefined, 'one byte over the vendors’ 64');
    assert.equal(recipientParam('用'.repeat(21)), undefined, 'counted in UTF-8 bytes');
    assert.equal(recipientParam(''), undefined);
    for (const other of [taskId('u', 'c', 1, 'd'), collapseId('u', 'c'), '', 'uid:', undefined, 42]) assert.equal(recipientOfParam(other), undefined);
  });

  test('an IM push names its recipient and its ACCEPTED outcome says so; its other outcomes say nothing', () => {
    const d = dispatch('u-7');
    assert.equal(pushMessage(d, 'tok-1', undefined, 3600).recipient, 'uid:u-7');
    assert.equal(fanOutOutcome(d, answer('ACCEPTED'), 2_000).receipts_by_uid, true);
    assert.equal(fanOutOutcome(d, answer('FAILED'), 2_000).receipts_by_uid, undefined);
  });

  test('a business push to one user names it; a campaign push and a uid too long for the parameter do not', () => {
    const notice = dispatch('u-8', { sender: 'shop', category: 'NOTICE', campaign_id: null, expire_at: null });
    assert.equal(pushMessage(notice, 'tok-1', undefined, 3600).recipient, 'uid:u-8');
    const campaign = dispatch('u-9', { sender: 'shop', category: 'CAMPAIGN', campaign_id: 'autumn', expire_at: null });
    const long = dispatch('u'.repeat(70));
    for (const d of [campaign, long]) {
      assert.equal(pushMessage(d, 'tok-1', undefined, 3600).recipient, undefined);
      assert.equal(fanOutOutcome(d, answer('ACCEPTED'), 2_000).receipts_by_uid, undefined);
    }
  });

  test('a raw callback is keyed by the one uid all its receipts name, else by its vendor', () => {
    assert.equal(receiptRawKey('hms', [{ recipient: 'u-1' }]), 'u-1');
    assert.equal(receiptRawKey('hms', [{ recipient: 'u-1' }, { recipient: 'u-1' }]), 'u-1', 'a batch about one user');
    assert.equal(receiptRawKey('hms', [{ recipient: 'u-1' }, { recipient: 'u-2' }]), 'hms', 'a batch about two users');
    assert.equal(receiptRawKey('vivo', [{ recipient: 'u-1' }, {}]), 'vivo', 'one receipt names no one');
    assert.equal(receiptRawKey('oppo', [{}]), 'oppo');
    assert.equal(receiptRawKey('xiaomi', []), 'xiaomi');
  });
});
