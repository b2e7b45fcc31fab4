import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { TASK_TRANSITIONS, TaskLifecycle, type TaskState } from '../../topology/task-state.ts';
import { errorCode } from '../../common/errors.ts';

const STATES: readonly TaskState[] = ['created', 'restoring', 'running', 'suspended', 'closed'];

/** A lifecycle brought to `state` along the allowed path. */
function at(state: TaskState): TaskLifecycle {
  const path: Record<TaskState, TaskState[]> = {
    created: [],
    restoring: ['restoring'],
    running: ['restoring', 'running'],
    suspended: ['restoring', 'running', 'suspended'],
    closed: ['closed'],
  };
  const lifecycle = new TaskLifecycle('1_4');
  for (const s of path[state]) lifecycle.to(s);
  assert.equal(lifecycle.state, state);
  return lifecycle;
}

describe('task lifecycle', () => {
  test('the transition table: created → restoring → running → suspended → closed, closing early from created and restoring', () => {
    assert.deepEqual(TASK_TRANSITIONS, {
      created: ['restoring', 'closed'],
      restoring: ['running', 'closed'],
      running: ['suspended'],
      suspended: ['closed'],
      closed: [],
    });
  });

  test('a new task is created; every allowed transition is made', () => {
    assert.equal(new TaskLifecycle('0_0').state, 'created');
    for (const from of STATES) {
      for (const to of TASK_TRANSITIONS[from]) {
        const lifecycle = at(from);
        lifecycle.to(to);
        assert.equal(lifecycle.state, to, `${from} → ${to}`);
      }
    }
  });

  test('every other transition is refused with ILLEGAL_TASK_STATE naming the task and both states, and the state stays', () => {
    let refused = 0;
    for (const from of STATES) {
      for (const to of STATES) {
        if (TASK_TRANSITIONS[from].includes(to)) continue;
        const lifecycle = at(from);
        assert.throws(
          () => lifecycle.to(to),
          (error: unknown) => {
            assert.equal(errorCode(error), 'ILLEGAL_TASK_STATE');
            assert.equal((error as Error).message, `task 1_4 cannot go from ${from} to ${to}`);
            return true;
          },
          `${from} → ${to}`,
        );
        assert.equal(lifecycle.state, from);
        refused++;
      }
    }
    // 25 pairs, 6 allowed: a running task cannot be closed without suspending, nor resumed, nor closed twice.
    assert.equal(refused, 19);
  });

  test('is() tells whether the task is in any of the given states', () => {
    const lifecycle = at('running');
    assert.ok(lifecycle.is('running', 'suspended'));
    assert.ok(!lifecycle.is('created', 'restoring'));
  });
});
