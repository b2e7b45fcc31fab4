/**
 * The campaign expansion's pace (processors/campaigns/pace.ts): a LEDBAT-like controller over one
 * broker round trip a second and whether IM pushes were under way. Expected shares are worked out
 * from the rule (halve above the target while IM is under way, else add 0.02 a second, 0.1 while
 * IM is idle; floor 0.02, ceiling 1; back to the floor when no campaign was expanded; a failed
 * probe as contention), not read
 * back from the code.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DelayYield } from '../../../processors/campaigns/pace.ts';

const T0 = 1_800_000_000_000; // a minute boundary
/** One second of expanding a campaign, then its sample. */
const second = (pace: DelayYield, delayMs: number | null, now: number, imActive: boolean) => {
  pace.expanding();
  pace.observe(delayMs, now, imActive);
};
const close = (actual: number, expected: number, what: string) => assert.ok(Math.abs(actual - expected) < 1e-9, `${what}: ${actual} ≠ ${expected}`);

test('a campaign starts at the floor and ramps to its full rate: in ten quiet seconds with IM idle, in fifty beside IM', () => {
  const idle = new DelayYield({ targetDelayMs: 3 });
  const beside = new DelayYield({ targetDelayMs: 3 });
  assert.equal(idle.share(), 0.02, 'no burst before the first sample');
  const idleShares: number[] = [];
  const besideShares: number[] = [];
  for (let s = 0; s <= 55; s++) {
    const delay = 2 + (s % 2) * 0.5; // 2–2.5 ms: within the target of the base (2)
    second(idle, delay, T0 + s * 1000, false);
    second(beside, delay, T0 + s * 1000, true);
    idleShares.push(idle.share());
    besideShares.push(beside.share());
  }
  close(idleShares[0]!, 0.02, 'the first sample only sets the base');
  close(idleShares[5]!, 0.52, 'five quiet seconds, IM idle');
  assert.equal(idleShares[10], 1);
  close(besideShares[10]!, 0.22, 'ten quiet seconds beside IM');
  close(besideShares[45]!, 0.92, 'forty-five quiet seconds beside IM');
  assert.equal(besideShares[49], 1);
  assert.equal(besideShares[55], 1, 'never above the configured rate');
});

test('queueing over the target while IM is under way halves the share each second down to the floor; without IM it is the campaign’s own', () => {
  const pace = new DelayYield({ targetDelayMs: 3 });
  let t = T0;
  for (let s = 0; s < 12; s++) second(pace, 2, (t += 1000), false);
  assert.equal(pace.share(), 1);
  second(pace, 2 + 10, (t += 1000), false); // 10 ms over the base with no IM push under way
  assert.equal(pace.share(), 1, 'no yielding to itself');
  const busy: number[] = [];
  for (let s = 0; s < 8; s++) {
    second(pace, 2 + 3.5, (t += 1000), true); // 3.5 ms over the base beside IM
    busy.push(pace.share());
  }
  assert.deepEqual(busy, [0.5, 0.25, 0.125, 0.0625, 0.03125, 0.02, 0.02, 0.02]);
  close(pace.queueingMs(), 3.5, 'the reported queueing');
  second(pace, 2 + 3, (t += 1000), true); // exactly at the target: not contention
  close(pace.share(), 0.04, 'one second at the target');
  second(pace, 40, (t += 1000), true);
  close(pace.share(), 0.02, 'one more busy second');
  second(pace, 2, (t += 1000), false);
  close(pace.share(), 0.12, 'IM idle again');
});

test('the base is the lowest delay of the last five minutes: a path that got slower for good is the new normal', () => {
  const pace = new DelayYield({ targetDelayMs: 3 });
  let t = T0;
  second(pace, 2, t, true);
  for (let s = 0; s < 4 * 60; s++) second(pace, 20, (t += 1000), true); // 18 ms over the base for four minutes
  assert.equal(pace.share(), 0.02);
  for (let s = 0; s < 80; s++) second(pace, 20, (t += 1000), true); // up to T0 + 320 s: the 2 ms minute left at T0 + 300 s
  close(pace.queueingMs(), 0, 'the base is 20 ms now');
  close(pace.share(), 0.02 + 21 * 0.02, 'the 21 quiet samples from T0 + 300 s to T0 + 320 s, beside IM');
});

test('with no campaign to expand the share goes back to the floor, so the next campaign starts without a burst', () => {
  const pace = new DelayYield({ targetDelayMs: 3 });
  let t = T0;
  for (let s = 0; s < 12; s++) second(pace, 2, (t += 1000), false);
  assert.equal(pace.share(), 1);
  pace.observe(2, (t += 1000), false); // a second without a campaign
  assert.equal(pace.share(), 0.02);
  second(pace, 2, (t += 1000), false);
  close(pace.share(), 0.12, 'growing again from the floor');
});

test('a failed probe counts as contention beside IM and never becomes the base', () => {
  const pace = new DelayYield({ targetDelayMs: 3 });
  let t = T0;
  for (let s = 0; s < 12; s++) second(pace, 2, (t += 1000), false);
  assert.equal(pace.share(), 1);
  const failed: number[] = [];
  for (let s = 0; s < 3; s++) {
    second(pace, null, (t += 1000), true);
    failed.push(pace.share());
  }
  assert.deepEqual(failed, [0.5, 0.25, 0.125]);
  second(pace, 2, (t += 1000), true); // answering again at the old base
  close(pace.queueingMs(), 0, 'the base is still 2 ms');
  close(pace.share(), 0.145, 'growing again');
});

test('a target of 0 or less is refused', () => {
  assert.throws(() => new DelayYield({ targetDelayMs: 0 }), /targetDelayMs must be > 0/);
});
