/**
 * The business lane's vendor gate counts a batch call's tokens, not the call: its rate is in pushes
 * (PUSH_BUSINESS_VENDOR_RATE_PERCENT of the vendor's rate, pipeline/apps/business.ts
 * `businessLaneVendors`), and a campaign's pushes go as multi-token calls of up to the adapter's
 * maxBatchSize (processors/fan-out/batcher.ts), larger than a second of the lane's rate. Through
 * the real HMS adapter and emulator, on the gate's clock in virtual time (sleeping advances it).
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { SubmitBatcher } from '../../../processors/fan-out/batcher.ts';
import { VendorGate, type GateClock } from '../../../processors/fan-out/vendor-gate.ts';
import type { StartedEmulators } from '../../../emulators/index.ts';
import type { VendorRegistry } from '../../../sinks/vendors/registry.ts';
import { message, useEmulators } from '../../sinks/vendors/support.ts';

/** Virtual time: `sleep` moves the clock on at once. */
class VirtualClock implements GateClock {
  at = 0;
  now(): number {
    return this.at;
  }
  sleep(ms: number): Promise<void> {
    this.at += ms;
    return Promise.resolve();
  }
}

describe('the business lane gate and batch calls', () => {
  let em: StartedEmulators;
  let registry: VendorRegistry;
  useEmulators((env) => ({ em, registry } = env));

  test('900 pushes in batch calls of 300 at 100/s: the third call waits until 6 s of the gate’s time', async () => {
    const clock = new VirtualClock();
    const batcher = new SubmitBatcher(registry.adapter('hms', 'app-1')!, new VendorGate(100, 4, clock));
    const same = { collapseId: 'campaign', data: { campaign_id: 'c' }, badge: 0 };
    for (let wave = 0; wave < 3; wave++) {
      const outcomes = await Promise.all(
        Array.from({ length: 300 }, (_, i) => batcher.submit(message(em, 'hms', `w${wave}-${i}`, { ...same, taskId: `t-${wave}-${i}` }))),
      );
      assert.ok(outcomes.every((o) => o.kind === 'accepted'));
    }
    assert.equal(batcher.calls, 3, 'one call per wave');
    assert.equal(em.hms.sendRequests, 3);
    // The bucket takes 100 and refills 100/s: the third call needs 100 tokens beyond the 600 the first two took, so it
    // cannot start before (600 + 100 - 100) / 100 = 6 s. A gate that took at most a second of tokens per call would let
    // all three go within 2 s: three times the lane's rate.
    assert.ok(clock.now() >= 6_000, `the three calls went within ${clock.now()} ms of gate time`);
  });
});
