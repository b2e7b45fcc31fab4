/**
 * Where a walk resumes after a takeover (processors/fan-out/walk.ts `resumedFrom`): from the answers
 * the task row recorded, by the walk's own rules. A table: each case is a dispatch's channels, the
 * recorded trail, and the channel and call the new owner makes next, with the last failure it
 * carries into the task's final outcome.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ChannelAnswer } from '../../../processors/fan-out/ledger.ts';
import type { DispatchProgress } from '../../../processors/fan-out/parked.ts';
import { recordedBeyond, resumedFrom } from '../../../processors/fan-out/walk.ts';
import type { PushDispatch } from '../../../processors/model/records.ts';

const dead = (channel: number, vendor: string): ChannelAnswer => ({
  channel,
  status: 'DEAD_TOKEN',
  vendor,
  reason: 'dead_token',
  code: 'GONE',
  attempts: channel + 1,
  discriminator: `${channel}:${vendor}:DEAD_TOKEN`,
});
const throttled = (channel: number, vendor: string, reason: 'quota' | 'rate_limited', call = 1): ChannelAnswer => ({
  channel,
  status: 'THROTTLED',
  vendor,
  reason,
  code: reason === 'quota' ? 'QUOTA' : '429',
  attempts: call,
  discriminator: `${channel}:${vendor}:throttled:${call}`,
});

function fresh(vendors: string[]): DispatchProgress {
  // Only the channels matter here.
  const d = { task_id: 't1', uid: 'u1', channels: vendors.map((vendor) => ({ vendor, token: `t-${vendor}`, classification: {} })) } as unknown as PushDispatch;
  return { dispatch: d, key: d.uid, timestamp: 0, channel: 0, call: 1, attempts: 0, last: { vendor: '', code: '', quotaOnly: true, throttled: false } };
}

const cases: Array<{ name: string; vendors: string[]; trail: ChannelAnswer[]; next: [number, number]; quotaOnly: boolean; throttled: boolean }> = [
  { name: 'nothing recorded: the first call again', vendors: ['hms', 'fcm'], trail: [], next: [0, 1], quotaOnly: true, throttled: false },
  { name: 'a dead token ends its channel', vendors: ['hms', 'fcm'], trail: [dead(0, 'hms')], next: [1, 1], quotaOnly: false, throttled: false },
  {
    name: 'quota moves on and keeps "quota only"',
    vendors: ['hms', 'fcm'],
    trail: [throttled(0, 'hms', 'quota')],
    next: [1, 1],
    quotaOnly: true,
    throttled: false,
  },
  {
    name: 'a 429 with another channel left moves on',
    vendors: ['hms', 'fcm'],
    trail: [throttled(0, 'hms', 'rate_limited')],
    next: [1, 1],
    quotaOnly: false,
    throttled: true,
  },
  {
    name: '429s on the last channel: the next call on it',
    vendors: ['fcm'],
    trail: [throttled(0, 'fcm', 'rate_limited', 1), throttled(0, 'fcm', 'rate_limited', 2)],
    next: [0, 3],
    quotaOnly: false,
    throttled: true,
  },
  {
    name: 'a 429 on the last channel after a dead first one: its second call',
    vendors: ['hms', 'fcm'],
    trail: [dead(0, 'hms'), throttled(1, 'fcm', 'rate_limited')],
    next: [1, 2],
    quotaOnly: false,
    throttled: true,
  },
  {
    name: 'every channel ended: no call left (the task ends)',
    vendors: ['hms', 'fcm'],
    trail: [dead(0, 'hms'), dead(1, 'fcm')],
    next: [2, 1],
    quotaOnly: false,
    throttled: false,
  },
];

for (const c of cases) {
  test(`resumedFrom: ${c.name}`, () => {
    const p = resumedFrom(fresh(c.vendors), c.trail, c.trail.length);
    assert.deepEqual([p.channel, p.call], c.next);
    assert.deepEqual([p.last.quotaOnly, p.last.throttled], [c.quotaOnly, c.throttled]);
    assert.deepEqual(p.trail, c.trail);
    assert.equal(p.attempts, c.trail.length);
  });
}

test('recordedBeyond: the row is used only when it recorded more than the progress in hand', () => {
  const p = fresh(['hms', 'fcm']);
  assert.equal(recordedBeyond(p, 0, []), false, 'a new row');
  assert.equal(recordedBeyond(p, 1, [dead(0, 'hms')]), true, 'an answer recorded by an earlier owner');
  const resumed = resumedFrom(p, [dead(0, 'hms')], 1);
  assert.equal(recordedBeyond(resumed, 1, [dead(0, 'hms')]), false, 'a checkpointed progress as far as the row');
  assert.equal(recordedBeyond(resumed, 2, [dead(0, 'hms')]), true, 'the row counted a call more');
});
