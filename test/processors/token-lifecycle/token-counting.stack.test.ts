import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ReceiptsHarness, useReceiptsHarness } from '../receipts-harness.ts';

/**
 * A refusal caused by the payload, or a vendor code nobody knows, says nothing about the
 * device token, so it must never invalidate it (the vivo 10055 case cost users their channel).
 * Through the receipts topology's token lifecycle on the TopologyTestDriver and a real MariaDB.
 */
describe('vendor refusals and the device token', () => {
  let h: ReceiptsHarness;
  useReceiptsHarness('refusals', (harness) => (h = harness));

  test('payload too large, payload rejected and unknown codes never invalidate a token; permanent refusals do after three', async () => {
    for (const reason of ['payload_too_large', 'payload_rejected', 'unknown_code']) {
      const device = `d-${reason}`;
      await h.report(device, `tok-${reason}`, { vendor: 'vivo' });
      await h.advance(1000);
      for (let i = 0; i < 5; i++) await h.outcome(device, `t-${reason}-${i}`, 'FAILED', { vendor: 'vivo', reason });
      assert.equal((await h.tokenRow(device, 'vivo'))?.status, 1, `${reason}: the token stays valid after five`);
    }
    assert.deepEqual(h.invalidations(), []);
    await h.report('d-permanent', 'tok-permanent', { vendor: 'vivo' });
    await h.advance(1000);
    for (let i = 0; i < 3; i++) await h.outcome('d-permanent', `t-permanent-${i}`, 'FAILED', { vendor: 'vivo', reason: 'permanent' });
    assert.equal((await h.tokenRow('d-permanent', 'vivo'))?.invalid_reason, 'consecutive_failures', 'the control case invalidates');
  });
});
