import type { KafkaMessage } from 'kafkajs';
import type { TaskId } from './assignor.ts';
import type { TaskCommitter } from './eos.ts';
import type { TaskInputQueue } from './task-input.ts';
import type { SerialExecutor } from './serial-executor.ts';
import type { InputRecord, StreamTask } from './task.ts';
import type { TaskLifecycle } from './task-state.ts';

/** The runtime's bookkeeping around one task it owns. */
export interface TaskHandle {
  readonly id: TaskId;
  readonly task: StreamTask;
  readonly committer: TaskCommitter;
  readonly sources: readonly string[];
  readonly exec: SerialExecutor;
  /** Next offset to process per source topic; records below it were already processed. */
  readonly nextOffsets: Map<string, bigint>;
  /** created → restoring → running → suspended → closed (task-state.ts). */
  readonly lifecycle: TaskLifecycle;
  /** Settles when initialisation (fence, offsets, restore, processors' init) ends; rejects when it failed. */
  ready: Promise<void>;
  /** Generation of the consumer whose assignment created the task (see ConsumerSupervisor.requestRestart). */
  readonly generation: number;
  lastCommitMs: number;
  /** A turn of punctuation and commit is queued in `exec`. */
  tickQueued: boolean;
  /** The commit being written to the broker while the task goes on processing (at most one). */
  commitInFlight?: Promise<void> | undefined;
  /**
   * A commit of this task failed: no later one may be sent (it would cover the lost one's offsets).
   * Not a state: the task runs on until the restart that the failure asked for closes it.
   */
  commitFailed: boolean;
  /** Fetched records waiting to be processed. */
  readonly input: TaskInputQueue;
  /** A turn of input processing is queued in `exec`. */
  processingQueued: boolean;
  /** Ends the task's wait for an input partition to catch up (TaskManager.wakeAt). */
  idleTimer?: NodeJS.Timeout | undefined;
}

/** A fetched Kafka message as a task input; header values decoded to UTF-8 (first value of a repeated header). */
export function toInput(topic: string, partition: number, m: KafkaMessage): InputRecord {
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(m.headers ?? {})) {
    const first = Array.isArray(v) ? v[0] : v;
    if (first !== undefined) headers[k] = first.toString();
  }
  return { topic, partition, offset: m.offset, key: m.key ?? null, value: m.value ?? null, timestamp: Number(m.timestamp), headers };
}
