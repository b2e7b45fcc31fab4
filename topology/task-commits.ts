import { CommitFailedError, OffsetsRefusedError, type CommitBatch } from './eos.ts';
import type { safeMetrics } from './metrics.ts';
import type { TaskHandle } from './task-handle.ts';

/** A drained commit on its way to the broker. */
interface PreparedCommit {
  readonly batch: CommitBatch;
  readonly startedMs: number;
  readonly inputRecords: number;
}

/**
 * The commit path of the runtime's tasks. Every method runs inside the task's executor, so flush
 * and drain see no record half-processed and each commit is a consistent cut of outputs, changelog
 * records and input offsets.
 */
export class TaskCommits {
  constructor(
    private readonly applicationId: string,
    private readonly intervalMs: number,
    /** See StreamsAppOptions.caughtUpCommitMs. */
    private readonly caughtUpMs: number,
    private readonly metrics: ReturnType<typeof safeMetrics>,
    /** A background commit failed (the task is marked; the runtime restarts from the last commit). */
    private readonly onFailed: (handle: TaskHandle, error: unknown) => void,
    /** A commit of the task settled: the next one may be due already (outputs waited behind it). */
    private readonly onSettled: (handle: TaskHandle) => void,
  ) {}

  /**
   * The task has work, nothing stops a commit (one in flight, an earlier failure), and either the
   * interval has passed or the task has caught up with outputs waiting and caughtUpMs has passed.
   */
  due(handle: TaskHandle): boolean {
    return this.dueAtMs(handle) <= Date.now();
  }

  /**
   * When the task's next commit falls due as things stand (Infinity: not before something changes,
   * such as new work or the commit in flight settling).
   */
  dueAtMs(handle: TaskHandle): number {
    if (handle.commitInFlight || handle.commitFailed || !handle.task.hasUncommittedWork()) return Infinity;
    const caughtUp = handle.input.size === 0 && handle.task.hasOutputs();
    return handle.lastCommitMs + (caughtUp ? this.caughtUpMs : this.intervalMs);
  }

  /**
   * Starts a commit without waiting for the broker: the transaction is written in the background
   * while the task goes on processing into the next one (kafkajs fetches for all partitions in one
   * loop, so a commit awaited here would hold up every partition). One commit in flight per task.
   * A failed commit marks the task: no later commit of it is sent. Offsets the group refused while
   * rebalancing (at-least-once) go into the next commit instead.
   */
  async start(handle: TaskHandle): Promise<void> {
    const prepared = await this.prepare(handle);
    if (!prepared) return;
    const inFlight: Promise<void> = handle.committer
      .commit(prepared.batch)
      .then(
        () => this.committed(handle, prepared),
        (error: unknown) => {
          if (error instanceof OffsetsRefusedError) return handle.task.offsetsNotCommitted(prepared.batch.offsets.map((o) => o.topic));
          handle.commitFailed = true;
          this.onFailed(handle, error);
        },
      )
      .finally(() => {
        if (handle.commitInFlight !== inFlight) return;
        handle.commitInFlight = undefined;
        if (!handle.commitFailed) this.onSettled(handle);
      });
    handle.commitInFlight = inFlight;
  }

  /** Commits and waits for the broker (revocation, shutdown): after the commit in flight, if any. */
  async commitNow(handle: TaskHandle): Promise<void> {
    await handle.commitInFlight;
    if (handle.commitFailed) throw new CommitFailedError(`an earlier commit of task ${handle.id} failed`);
    const prepared = await this.prepare(handle, true);
    if (!prepared) return;
    await handle.committer.commit(prepared.batch);
    this.committed(handle, prepared);
  }

  /**
   * Flush, then drain: outputs, changelog records and input offsets, written in one transaction
   * under EOS. A periodic commit does not wait for records whose offsets a processor pinned (a
   * vendor call in flight): their offsets stay out until they are finished. `complete` (revocation,
   * shutdown) waits.
   */
  private async prepare(handle: TaskHandle, complete = false): Promise<PreparedCommit | undefined> {
    // Only a task that ran may commit: a running one, or a suspended one's final commit.
    if (!handle.lifecycle.is('running', 'suspended')) return undefined;
    const startedMs = Date.now();
    await handle.task.flush({ complete });
    const { records, changelog, offsets, inputRecords } = handle.task.drainOutputs();
    const offsetList = [...offsets].map(([topic, offset]) => ({ topic, partition: handle.task.partition, offset: (BigInt(offset) + 1n).toString() }));
    handle.lastCommitMs = Date.now();
    return { batch: { records, changelog, offsets: offsetList }, startedMs, inputRecords };
  }

  private committed(handle: TaskHandle, { batch, startedMs, inputRecords }: PreparedCommit): void {
    const { applicationId } = this;
    this.metrics.onCommit({
      applicationId,
      taskId: handle.id,
      latencyMs: Date.now() - startedMs,
      outputRecords: batch.records.length,
      changelogRecords: batch.changelog.length,
      inputRecords,
      recordsByTopic: countByTopic(batch),
    });
    for (const c of handle.task.drainNodeCounts()) this.metrics.onNodeRecords({ applicationId, taskId: handle.id, ...c });
  }
}

/** Records of a commit by topic: a few topics per task, so one small map per commit. */
function countByTopic({ records, changelog }: CommitBatch): Map<string, number> {
  const counts = new Map<string, number>();
  for (const list of [records, changelog]) for (const r of list) counts.set(r.topic, (counts.get(r.topic) ?? 0) + 1);
  return counts;
}
