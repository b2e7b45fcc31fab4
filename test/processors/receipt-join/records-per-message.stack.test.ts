import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { DAY, ReceiptsHarness, TOPICS, useReceiptsHarness } from '../receipts-harness.ts';

const BY_MESSAGE = TOPICS.byMessage;
const JOIN = 'receipt-join-messages-changelog';
const TOKENS = 'token-lifecycle-tokens-changelog';

/**
 * Kafka records the receipts application produces (output topics, its internal by-message topic
 * and every store changelog), per accepted push and per receipt, as an operator counts them from
 * the topics' end offsets. The driver commits after every input, so each step is one commit: on
 * Kafka, writes to one key within a commit interval cost one changelog record, never more.
 * The counts asserted below are what a receipt join without this accounting exceeds: it wrote 3
 * records plus 2 tombstones at expiry for every acceptance, APNs and FCM included, and 2 for a
 * duplicate receipt.
 */
describe('records the receipts application produces', () => {
  let h: ReceiptsHarness;
  useReceiptsHarness('records', (harness) => (h = harness));

  test('an APNs or FCM acceptance produces none: those vendors send no receipts', async () => {
    await h.report('d-ios', 'tok-ios', { vendor: 'apns', platform: 'ios' });
    await h.report('d-fcm', 'tok-fcm', { vendor: 'fcm' });
    h.produced();
    await h.outcome('d-ios', 't-ios', 'ACCEPTED', { vendor: 'apns', vendorMessageId: 'apns-id-1' });
    await h.outcome('d-fcm', 't-fcm', 'ACCEPTED', { vendor: 'fcm', vendorMessageId: 'projects/p/messages/1' });
    assert.deepEqual(h.produced(), {});
    await h.advance(8 * DAY);
    assert.deepEqual(h.produced(), {}, 'nothing to expire either');
  });

  test('an acceptance by a receipt vendor costs one by-message and one join record, and one tombstone when it expires unanswered', async () => {
    await h.report('d-h', 'tok-h');
    h.produced();
    await h.outcome('d-h', 't-1', 'ACCEPTED', { vendorMessageId: 'vm-1' });
    assert.deepEqual(h.produced(), { [BY_MESSAGE]: 1, [JOIN]: 1 });
    await h.outcome('d-h', 't-1', 'ACCEPTED', { vendorMessageId: 'vm-1' }); // the outcome replayed after a crash
    assert.deepEqual(h.produced(), { [BY_MESSAGE]: 1 });
    await h.advance(7 * DAY + 2 * 60_000);
    assert.deepEqual(h.produced(), { [JOIN]: 1 });
    assert.deepEqual(h.driver.changelog('receipt-join-messages').at(-1)?.value, null, 'the last record is a tombstone');
  });

  test('a delivery costs its by-message record and its push.receipts record, no join record; a duplicate only its by-message record', async () => {
    await h.report('d-r', 'tok-r');
    await h.outcome('d-r', 't-r', 'ACCEPTED', { vendorMessageId: 'vm-r' });
    h.produced();
    await h.hmsReceipt('vm-r', 'tok-r', 0);
    assert.deepEqual(h.produced(), { [BY_MESSAGE]: 1, [TOPICS.receipts]: 1 });
    await h.hmsReceipt('vm-r', 'tok-r', 0, h.now() + 1000);
    assert.deepEqual(h.produced(), { [BY_MESSAGE]: 1 }, 'the mark in memory drops the duplicate');
    const written = h.driver.changelog('receipt-join-messages').at(-1)!.value!;
    assert.deepEqual(JSON.parse(written.toString()).emitted, [], 'a restore gets the entry as the acceptance wrote it');
  });

  test('a failure is written to the join, so a copy of it is dropped after a restore as well', async () => {
    await h.report('d-x', 'tok-x');
    await h.outcome('d-x', 't-x', 'ACCEPTED', { vendorMessageId: 'vm-x' });
    h.produced();
    await h.hmsReceipt('vm-x', 'tok-x', 6);
    assert.deepEqual(h.produced(), { [BY_MESSAGE]: 1, [TOPICS.receipts]: 1, [JOIN]: 1, [TOKENS]: 1 });
    const written = h.driver.changelog('receipt-join-messages').at(-1)!.value!;
    assert.deepEqual(JSON.parse(written.toString()).emitted, ['0|FAILED']);
  });

  test('a failed receipt also counts against the token (one token record); a delivery with no failure to reset writes no token record', async () => {
    await h.report('d-f', 'tok-f');
    await h.outcome('d-f', 't-f1', 'ACCEPTED', { vendorMessageId: 'vm-f1' });
    await h.outcome('d-f', 't-f2', 'ACCEPTED', { vendorMessageId: 'vm-f2' });
    await h.outcome('d-f', 't-f3', 'ACCEPTED', { vendorMessageId: 'vm-f3' });
    h.produced();
    await h.hmsReceipt('vm-f1', 'tok-f', 6);
    assert.deepEqual(h.produced(), { [BY_MESSAGE]: 1, [TOPICS.receipts]: 1, [JOIN]: 1, [TOKENS]: 1 });
    await h.hmsReceipt('vm-f2', 'tok-f', 0); // resets the failure count: a real change
    assert.deepEqual(h.produced(), { [BY_MESSAGE]: 1, [TOPICS.receipts]: 1, [TOKENS]: 1 });
    await h.hmsReceipt('vm-f3', 'tok-f', 0);
    assert.deepEqual(h.produced(), { [BY_MESSAGE]: 1, [TOPICS.receipts]: 1 });
  });

  test('a receipt before its submission: one join record while it waits, and the submission matches it', async () => {
    await h.report('d-e', 'tok-e');
    h.produced();
    await h.hmsReceipt('vm-e', 'tok-e', 0);
    assert.deepEqual(h.produced(), { [BY_MESSAGE]: 1, [JOIN]: 1 });
    await h.outcome('d-e', 't-e', 'ACCEPTED', { vendorMessageId: 'vm-e' });
    assert.deepEqual(h.produced(), { [BY_MESSAGE]: 1, [TOPICS.receipts]: 1, [JOIN]: 1 });
  });

  test('a token report costs one changelog record (no timer record); the same report replayed costs none', async () => {
    await h.report('d-t', 'tok-t', { at: h.now() });
    assert.deepEqual(h.produced(), { [TOKENS]: 1 });
    await h.report('d-t', 'tok-t', { at: h.now() });
    assert.deepEqual(h.produced(), {});
  });
});
