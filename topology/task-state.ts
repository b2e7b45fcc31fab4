import { PushError } from '../common/errors.ts';

/**
 * Where a task of the runtime is in its life (after Kafka Streams' Task.State):
 *
 * - `created`: assigned to this instance; nothing done yet.
 * - `restoring`: fencing the previous owner's producer, reading the committed offsets, restoring
 *   its stores from their changelogs and initialising its processors.
 * - `running`: processes input, fires punctuators and commits.
 * - `suspended`: processes nothing more (revoked, or the application is closing); only a final
 *   commit and the close are left.
 * - `closed`: processors closed, producer closed; the handle is dropped.
 *
 * A task is never resumed: a revoked task that is assigned again starts over as a new one. A task
 * whose initialisation failed stays `restoring` until the restart it asked for closes it.
 */
export type TaskState = 'created' | 'restoring' | 'running' | 'suspended' | 'closed';

/** The transitions a task may make; anything else is a bug in the runtime. */
export const TASK_TRANSITIONS: Readonly<Record<TaskState, readonly TaskState[]>> = Object.freeze({
  created: ['restoring', 'closed'],
  restoring: ['running', 'closed'],
  running: ['suspended'],
  suspended: ['closed'],
  closed: [],
});

/** One task's state, changed only along TASK_TRANSITIONS. */
export class TaskLifecycle {
  private current: TaskState = 'created';

  /** A new task's lifecycle, `created`; `taskId` names the task in refused transitions. */
  constructor(readonly taskId: string) {}

  /** The current state. */
  get state(): TaskState {
    return this.current;
  }

  /** Moves to `next`; throws ILLEGAL_TASK_STATE (naming the task and both states) when the table does not allow it. */
  to(next: TaskState): void {
    if (!TASK_TRANSITIONS[this.current].includes(next)) {
      throw new PushError('ILLEGAL_TASK_STATE', `task ${this.taskId} cannot go from ${this.current} to ${next}`);
    }
    this.current = next;
  }

  /** True in any of `states`. */
  is(...states: readonly TaskState[]): boolean {
    return states.includes(this.current);
  }
}
