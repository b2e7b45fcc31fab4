/**
 * A push's states in the fan-out (processors/fan-out/dispatch-state.ts). A table: each row is a
 * transition the fan-out makes and why; the transition table contains exactly these, each is made
 * from a lifecycle brought to its state along the table, and every other pair is refused.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { errorCode } from '../../../common/errors.ts';
import { DISPATCH_TRANSITIONS, DispatchLifecycle, type DispatchState } from '../../../processors/fan-out/dispatch-state.ts';

const STATES: readonly DispatchState[] = ['received', 'parked', 'claiming', 'calling', 'waiting', 'accepted', 'failed', 'dropped', 'replayed', 'skipped'];

const LEGAL: ReadonlyArray<[from: DispatchState, to: DispatchState, why: string]> = [
  ['received', 'claiming', 'a dispatch record with channels, its task not parked'],
  ['received', 'dropped', 'a business push past its expiry, or a dispatch without channel'],
  ['received', 'skipped', 'its task is parked: that dispatch finishes it'],
  ['parked', 'claiming', 'parked unclaimed while its shard was down, or checkpointed in flight by a process that stopped'],
  ['parked', 'calling', 'due after a long backoff or the vendor pause'],
  ['parked', 'dropped', 'expired while parked'],
  ['parked', 'failed', 'a READ, an eviction over the cap, or checkpointed ended and resumed after a restart'],
  ['claiming', 'calling', 'the task is pending'],
  ['claiming', 'replayed', 'the task is final already'],
  ['claiming', 'parked', 'the MySQL shard of its user is down'],
  ['calling', 'waiting', 'a short backoff, waited in place'],
  ['calling', 'parked', 'a long backoff, or the vendor paused on the last channel'],
  ['calling', 'accepted', 'a vendor accepted'],
  ['calling', 'failed', 'every channel failed, a READ, or its campaign cancelled'],
  ['waiting', 'calling', 'the backoff is over: the same channel again'],
  ['waiting', 'failed', 'a READ during the backoff'],
];

/** A lifecycle brought to `state` along legal transitions. */
function at(state: DispatchState): DispatchLifecycle {
  const path: Record<DispatchState, [start: 'received' | 'parked', ...DispatchState[]]> = {
    received: ['received'],
    parked: ['parked'],
    claiming: ['received', 'claiming'],
    calling: ['parked', 'calling'],
    waiting: ['parked', 'calling', 'waiting'],
    accepted: ['parked', 'calling', 'accepted'],
    failed: ['parked', 'failed'],
    dropped: ['received', 'dropped'],
    replayed: ['received', 'claiming', 'replayed'],
    skipped: ['received', 'skipped'],
  };
  const [start, ...steps] = path[state];
  const lifecycle = new DispatchLifecycle('t1', start);
  for (const s of steps) lifecycle.to(s);
  assert.equal(lifecycle.state, state);
  return lifecycle;
}

describe('dispatch lifecycle', () => {
  test('the transition table contains exactly the transitions listed, and final states have none', () => {
    const table = Object.fromEntries(STATES.map((s) => [s, LEGAL.filter(([from]) => from === s).map(([, to]) => to)]));
    assert.deepEqual(
      Object.fromEntries(Object.entries(DISPATCH_TRANSITIONS).map(([s, to]) => [s, [...to].sort()])),
      Object.fromEntries(Object.entries(table).map(([s, to]) => [s, to.sort()])),
    );
    for (const final of ['accepted', 'failed', 'dropped', 'replayed', 'skipped'] as const) assert.deepEqual(DISPATCH_TRANSITIONS[final], []);
  });

  for (const [from, to, why] of LEGAL) {
    test(`${from} → ${to}: ${why}`, () => {
      const lifecycle = at(from);
      lifecycle.to(to);
      assert.equal(lifecycle.state, to);
    });
  }

  test('every other transition is refused with ILLEGAL_DISPATCH_STATE naming the task and both states, and the state stays', () => {
    let refused = 0;
    for (const from of STATES) {
      for (const to of STATES) {
        if (LEGAL.some(([f, t]) => f === from && t === to)) continue;
        const lifecycle = at(from);
        assert.throws(
          () => lifecycle.to(to),
          (error: unknown) => {
            assert.equal(errorCode(error), 'ILLEGAL_DISPATCH_STATE');
            assert.equal((error as Error).message, `dispatch of task t1 cannot go from ${from} to ${to}`);
            return true;
          },
          `${from} → ${to}`,
        );
        assert.equal(lifecycle.state, from);
        refused++;
      }
    }
    assert.equal(refused, STATES.length ** 2 - LEGAL.length);
  });
});
