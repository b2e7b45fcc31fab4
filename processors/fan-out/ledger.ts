/**
 * The fan-out's view of `im_push_task` (docs/design.md, "At most one visible notification" and
 * "Stores"): what it needs to submit each task at most once. Injected, so the processor stays pure;
 * `sinks/mysql/tasks.ts` implements it on MySQL.
 */

import { PushError } from '../../common/errors.ts';
import { TASK_STATUS } from '../model/task-status.ts';
import type { TaskStatus } from '../model/task-status.ts';

/** Task status as stored (processors/model/task-status.ts), as the ledger's rows carry it. */
export { TASK_STATUS, type TaskStatus };

/** One task row as the claim writes it: the identifying columns and what is sent (docs/data.md). */
export interface TaskRow {
  readonly taskId: string;
  readonly uid: string;
  readonly convId: string;
  readonly seq: number;
  readonly deviceId: string;
  readonly msgId: string;
  readonly appId: string;
  readonly platform: string;
  /** The collapse id sent (stored as collapse_id and collapse_key). */
  readonly collapseId: string;
  /** The unread count (badge) sent. */
  readonly unreadCnt: number;
  /**
   * The title and summary handed to the vendor adapters: already the generic text for private-mode
   * users and sensitive conversations (the policy replaces them), never the message content.
   */
  readonly title: string;
  readonly body: string;
  /**
   * The vendor of the dispatch's first channel: the claim stores the text as that vendor's adapter
   * sends it (some cut the title and summary to their own lengths); the result write stores it as
   * the vendor that answered last sent it.
   */
  readonly firstVendor: string;
  /** The dispatch's merge kind: LEADING, TRAILING, IMMEDIATE or DEFERRED. */
  readonly kind: string;
}

/**
 * One outcome of a task other than ACCEPTED (a channel's dead token, failure or throttle, and a
 * failed task's final drop, failure or READ cancellation), recorded with its final result so that
 * a task re-dispatched after a crash re-emits exactly the outcomes it had, with their event ids
 * (the discriminator), and nothing else.
 */
export interface ChannelAnswer {
  /** Index of the channel in the dispatch; -1 for an outcome about the task as a whole. */
  readonly channel: number;
  readonly status: 'FAILED' | 'DEAD_TOKEN' | 'THROTTLED' | 'DROPPED' | 'SUPPRESSED';
  readonly vendor: string;
  readonly reason: string;
  readonly code: string;
  readonly attempts: number;
  readonly discriminator: string;
}

/**
 * What the task row records of a submission: how it ended (submitted, failed), or, while it goes on
 * (pending), the answers it has had so far, written before its next vendor call so that a takeover
 * resumes after them instead of calling again (docs/design.md, "Takeover").
 */
export interface TaskResult {
  readonly status: typeof TASK_STATUS.submitted | typeof TASK_STATUS.failed | typeof TASK_STATUS.pending;
  /** The vendor that answered last. */
  readonly vendor: string;
  /** The vendor's message id (accepted), else null. */
  readonly vendorMessageId: string | null;
  /** The vendor code of a failure (pending: of the last answer), else null. */
  readonly failCode: string | null;
  /** Vendor calls answered for this task. */
  readonly attempts: number;
  /** Every outcome of the task but ACCEPTED, in order (a failed task's final one included). */
  readonly trail: readonly ChannelAnswer[];
}

/** A task row as stored when the fan-out claims it. */
export interface StoredTask {
  readonly status: TaskStatus;
  /** Vendor, message id, failure code and attempts of an earlier submission (null while pending). */
  readonly vendor: string | null;
  readonly vendorMessageId: string | null;
  readonly failCode: string | null;
  readonly attempts: number;
  /** Answers of earlier channels recorded with the result; while pending, those recorded so far. */
  readonly trail: readonly ChannelAnswer[];
  /**
   * Claims of the task, this one included: 1 (or absent) for a first claim; more when a dispatch
   * claims it again while it is pending (a takeover, a restart, `pushctl replay`), so an earlier
   * owner may have called the vendor without its answer reaching the row.
   */
  readonly claims?: number;
}

export interface PushTaskLedger {
  /**
   * Records the task as pending (status 0) unless a row exists, counting the claim on a row still
   * pending, and resolves to the row now stored. Calls made close together are written in one
   * batch. Waits (retrying) while the store is unreachable; rejects only on errors a retry cannot
   * fix, or with a TaskStoreUnavailableError when only the task's part of a sharded store is
   * unreachable.
   */
  claim(task: TaskRow): Promise<StoredTask>;
  /**
   * Buffers the result of a task: 1 (submitted, never overriding delivered), 3 (failed, only over
   * pending) or its answers so far (0, only over a pending row that recorded no more answers). A
   * write is asked for at once (batched with the others of the same turn of the event loop);
   * `written` tells when it is durable, `flush` writes whatever is left.
   */
  record(task: TaskRow, result: TaskResult): void;
  /** Writes everything buffered; resolves when it is durable. Called before every commit. */
  flush(): Promise<void>;
  /**
   * Resolves once the result recorded for `taskId` is durable (at once when none is buffered or
   * being written), asking for a write soon; rejects if that write fails with an error a retry
   * cannot fix. The fan-out waits for it before a dispatch's next vendor call and before its
   * outcome goes out, so no commit waits on a MySQL write (a MySQL outage stalls the dispatches, not
   * the decisions) and no call is made while an earlier answer of its task is not yet recorded.
   */
  written(taskId: string): Promise<void>;
}

/**
 * The claim's store is unreachable for this task's user only (one MySQL shard of several is down,
 * docs/data.md "Shards"): the fan-out parks the dispatch and claims it again later, so that the
 * other users' pushes go on meanwhile. A ledger on a single store waits instead, never throwing it.
 */
export class TaskStoreUnavailableError extends PushError {
  constructor(shard: number, code: string) {
    super('TASK_STORE_UNAVAILABLE', `im_push_task shard ${shard} unavailable (${code})`, { retriable: true });
  }
}
