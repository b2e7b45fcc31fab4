import type { Admin, Batch, Consumer, EachBatchPayload, Kafka, Producer, RequestEvent } from 'kafkajs';
import { PushError, errorCode, errorMessage } from '../common/errors.ts';
import type { Logger } from '../common/log.ts';
import { sleep, withTimeout } from '../common/retry.ts';
import { StreamTask, TaskFailedError } from './task.ts';
import { changelogTopicName, restoreChangelogs, type RestoreTarget } from './changelog.ts';
import { AtLeastOnceCommitter, CommitFailedError, TransactionalCommitter, type TaskCommitter } from './eos.ts';
import { TaskCommits } from './task-commits.ts';
import { taskId, type TaskId } from './assignor.ts';
import type { MetricsListener } from './metrics.ts';
import { SerialExecutor } from './serial-executor.ts';
import { toInput, type TaskHandle } from './task-handle.ts';
import { fetchMarkOf, TaskInputQueue, type FetchMark } from './task-input.ts';
import { TaskLifecycle } from './task-state.ts';
import { isRebalancing, refusedForGood } from './kafka-errors.ts';
import type { TopicRules } from './topic-rules.ts';
import type { ResolvedStreamsAppOptions } from './runtime-options.ts';

/** Records a task processes in one turn of its executor before punctuators and commits get a turn. */
const RECORDS_PER_TURN = 500;

/**
 * The coarsest step of an application's timer grid, ms (TaskManager.armFor): a punctuation or a
 * commit runs up to this late, and every task's and application's due times in one step share a wake-up.
 */
const TIMER_GRID_MS = 50;

/** The mark of a consumed-through report that comes without its fetch (onFilteredBatch): changes no partition's fetch. */
const NO_FETCH: FetchMark = Object.freeze({ sent: 0, answered: 0, readable: 0 });

/** What the task manager needs from the application around it (StreamsApp and its ConsumerSupervisor). */
export interface TaskManagerContext {
  readonly options: ResolvedStreamsAppOptions;
  readonly kafka: Kafka;
  readonly log: Logger;
  readonly metrics: Required<MetricsListener>;
  readonly admin: () => Admin;
  /** The shared idempotent producer (at-least-once only). */
  readonly sharedProducer: () => Producer;
  /** The group's current consumer (at-least-once tasks commit their offsets through it). */
  readonly consumer: () => Consumer;
  /** Generation of the current consumer: each task records the one whose assignment created it. */
  readonly generation: () => number;
  readonly countRequest: (event: RequestEvent) => void;
  readonly topicRules: (topic: string) => TopicRules;
  /** The application is closing (or closed after a fatal error). */
  readonly closing: () => boolean;
  /** A restart is under way: every task is about to be closed. */
  readonly restarting: () => boolean;
  /** A fatal error stopped the application. */
  readonly failed: () => boolean;
  /** A task failed, or could not initialise or commit: restart from the last commits (ConsumerSupervisor.requestRestart). */
  readonly requestRestart: (reason: unknown, generations: readonly number[]) => void;
  /** A failure the processing error policy does not absorb: the application stops. */
  readonly fail: (error: unknown) => void;
}

/**
 * The tasks of one streams application: creates them on assignment (fence, offsets, restore,
 * init), hands fetched batches to their input queues, runs their processing turns, punctuators
 * and commits in each task's executor, and closes them on revocation, restart and shutdown.
 * The consumer and its restarts are ConsumerSupervisor's.
 *
 * The loop, step by step (what Kafka Streams' StreamThread.runOnce does in one thread, here spread
 * over the event loop, each task serialised by its own executor):
 * 1. kafkajs' fetch loop (ConsumerSupervisor) sends one Fetch per broker; the answer first reaches
 *    `onFetched`, which marks the partitions it found empty as caught up to that fetch.
 * 2. `onBatch` hands each partition's records to its task's input queue (TaskInputQueue), resolves
 *    the offsets with kafkajs (nothing is committed yet) and queues a processing turn (`schedule`);
 *    a full queue holds the fetch loop back, heartbeating, until the task has worked it down.
 * 3. A turn (`processInput`) takes up to RECORDS_PER_TURN records in timestamp order across the
 *    task's partitions; when a partition may still hold an earlier record, it stops and looks again
 *    at `waitUntil` (`wakeAt`) or as soon as that partition's next fetch is handed over.
 * 4. Each record goes through the task's processors (StreamTask.process: source → processors →
 *    sink nodes and stores); an error of the record's own goes to the DLQ and the turn goes on.
 * 5. At the end of the turn, a due commit starts (TaskCommits: flush the processors, produce the
 *    outputs and changelog records, commit the offsets in the task's transaction).
 * 6. The timer (`tick`, armed by `armFor` for the earliest wall-clock punctuation or commit of any
 *    task, on a grid the tasks share) queues punctuation and commits in the tasks' executors, so an
 *    idle task wakes only when something of it is due.
 * A failure in any step goes to `onTaskError`: one no retry can cure (a non-retriable
 * TaskFailedError) stops the application; any other (a fenced producer, a failed commit, a store
 * outage) restarts from the last commits (ConsumerSupervisor.requestRestart), with backoff.
 *
 * Rebalancing (kafkajs is eager and has no revocation callback): on every GROUP_JOIN, tasks no
 * longer assigned commit (best effort; a fenced commit is harmless) and close; new tasks fence the
 * previous owner's producer, read the committed offsets, restore their stores, then process.
 * Because kafkajs restarts every partition from its committed offset after a rejoin, each task
 * skips records below its own next offset, so nothing is processed twice into its state.
 */
export class TaskManager {
  private readonly handles = new Map<TaskId, TaskHandle>();
  private readonly commits: TaskCommits;
  private memberId?: string;
  /** The application's timer (`tick`), armed for the earliest punctuation or commit a task has due, and when it fires. */
  private timer?: NodeJS.Timeout;
  private timerAtMs = Infinity;
  /** The step of the timer's grid, ms: within the commit interval's half and the caught-up commit, 50 at most. */
  private readonly gridMs: number;

  constructor(private readonly ctx: TaskManagerContext) {
    const { applicationId, commitIntervalMs, caughtUpCommitMs } = ctx.options;
    this.gridMs = Math.max(5, Math.min(TIMER_GRID_MS, Math.floor(commitIntervalMs / 2), caughtUpCommitMs));
    this.commits = new TaskCommits(
      applicationId,
      commitIntervalMs,
      caughtUpCommitMs,
      ctx.metrics,
      (handle, error) => this.onTaskError(handle, error),
      (handle) => {
        if (this.commits.due(handle)) this.queueTurn(handle, false);
        else this.armFor(handle);
      },
    );
  }

  /** Task ids currently owned by this instance. */
  assignedTasks(): TaskId[] {
    return [...this.handles.keys()].sort();
  }

  /** The next join starts without tasks (a restart closed them all): nothing to drop then. */
  forgetMember(): void {
    this.memberId = undefined;
  }

  /** A GROUP_JOIN of the current consumer: revokes the tasks no longer assigned and creates the new ones. */
  onAssignment(memberId: string, assignment: Record<string, number[]>): void {
    const { options, log, metrics } = this.ctx;
    if (this.memberId !== undefined && this.memberId !== memberId) {
      // This member was expelled (session expired): its tasks may have run elsewhere since, so
      // none of the in-memory state can be trusted. Close everything; assigned tasks restart.
      log.warn('rejoined under a new member id; dropping all tasks', { previous: this.memberId, memberId });
      for (const handle of this.handles.values()) void this.revoke(handle, false);
      this.handles.clear();
    }
    this.memberId = memberId;
    const assigned = new Set<TaskId>();
    for (const [topic, partitions] of Object.entries(assignment)) {
      const sub = options.topology.subtopologyOfTopic(topic);
      if (sub) for (const p of partitions) assigned.add(taskId(sub.id, p));
    }
    for (const [id, handle] of this.handles) {
      if (assigned.has(id)) continue;
      this.handles.delete(id);
      void this.revoke(handle);
    }
    const created: TaskHandle[] = [];
    for (const id of assigned) if (!this.handles.has(id)) created.push(this.createHandle(id));
    metrics.onAssignment({ applicationId: options.applicationId, taskIds: this.assignedTasks() });
    log.info('assignment', { tasks: this.assignedTasks(), created: created.map((h) => h.id) });
    if (created.length === 0) return;
    const ready = withTimeout(
      this.initTasks(created),
      options.taskInitTimeoutMs,
      () =>
        new PushError('TASK_INIT_TIMEOUT', `tasks ${created.map((h) => h.id).join(',')} not ready after ${options.taskInitTimeoutMs} ms`, {
          retriable: true,
        }),
    );
    ready.catch((error) => this.ctx.requestRestart(error, this.generations(created)));
    for (const h of created) {
      h.ready = ready.then(() => {
        // A task closed meanwhile stays closed.
        if (h.lifecycle.state === 'restoring') h.lifecycle.to('running');
        this.armFor(h); // its punctuators (restored timers may be due)
      });
      h.ready.catch(() => undefined); // handled through requestRestart above
    }
  }

  private createHandle(id: TaskId): TaskHandle {
    const { options, metrics, log } = this.ctx;
    const [sub, partition] = id.split('_').map(Number) as [number, number];
    const subtopology = options.topology.subtopologies[sub]!;
    const { applicationId } = options;
    const task = new StreamTask({
      applicationId,
      topology: options.topology,
      subtopology,
      partition,
      clock: Date.now,
      dlqTopic: options.dlqTopic,
      processingErrorPolicy: options.processingErrorPolicy,
      changelogTopic: (store) => changelogTopicName(applicationId, store),
      topicRules: this.ctx.topicRules,
      onOutputDeadLetter: ({ topic, code }) => metrics.onDeadLetter({ applicationId, topic, partition, code }),
      onUnpinned: () => this.armFor(handle),
      logger: log,
    });
    const committer: TaskCommitter =
      options.processingGuarantee === 'exactly_once'
        ? new TransactionalCommitter(this.ctx.kafka, {
            transactionalId: `${applicationId}-${id}`,
            groupId: applicationId,
            onProducer: (producer) => producer.on(producer.events.REQUEST, this.ctx.countRequest),
          })
        : new AtLeastOnceCommitter(this.ctx.sharedProducer(), this.ctx.consumer, () => this.handles.get(id) === handle, log);
    const handle: TaskHandle = {
      id,
      task,
      committer,
      sources: subtopology.sourceTopics,
      exec: new SerialExecutor(),
      nextOffsets: new Map(),
      lifecycle: new TaskLifecycle(id),
      ready: Promise.resolve(),
      generation: this.ctx.generation(),
      lastCommitMs: Date.now(),
      tickQueued: false,
      commitFailed: false,
      input: new TaskInputQueue(options.maxBufferedRecords, subtopology.sourceTopics, options.maxTaskIdleMs),
      processingQueued: false,
    };
    this.handles.set(id, handle);
    return handle;
  }

  /** Fence, read committed offsets, restore stores, init processors: in that order (see class doc). */
  private async initTasks(handles: TaskHandle[]): Promise<void> {
    const { options, metrics, log, kafka } = this.ctx;
    const { applicationId } = options;
    for (const h of handles) h.lifecycle.to('restoring');
    await Promise.all(handles.map((h) => h.committer.init()));
    const topics = [...new Set(handles.flatMap((h) => h.sources))];
    const committed = await this.ctx.admin().fetchOffsets({ groupId: applicationId, topics });
    for (const h of handles) {
      for (const t of committed) {
        if (!h.sources.includes(t.topic)) continue;
        const p = t.partitions.find((x) => x.partition === h.task.partition);
        if (p && Number(p.offset) >= 0) h.nextOffsets.set(t.topic, BigInt(p.offset));
      }
    }
    const targets: RestoreTarget[] = handles.flatMap((h) =>
      [...h.task.stores.values()]
        .filter((s) => s.changelogged)
        .map((store) => ({
          topic: changelogTopicName(applicationId, store.name),
          partition: h.task.partition,
          apply: (key: string, value: Buffer | null) => store.restore(key, value),
          progress: (restoredRecords: number, done: boolean) =>
            metrics.onRestoreProgress({ applicationId, taskId: h.id, store: store.name, restoredRecords, done }),
        })),
    );
    const started = Date.now();
    if (targets.length > 0) await restoreChangelogs(kafka, this.ctx.admin(), applicationId, targets, log);
    for (const h of handles) {
      if (h.lifecycle.state === 'closed') continue;
      await h.task.init();
      h.lastCommitMs = Date.now();
    }
    log.info('tasks ready', { tasks: handles.map((h) => h.id), restoreMs: Date.now() - started });
  }

  private async revoke(handle: TaskHandle, commit = true): Promise<void> {
    // A failed initialisation asked for a restart already (onAssignment); the task closes either way.
    await handle.ready.catch(() => undefined);
    await handle.exec.run(async () => {
      if (handle.lifecycle.state === 'closed') return;
      const ran = this.suspend(handle);
      if (commit && ran && this.ctx.options.processingGuarantee === 'exactly_once') {
        // Best effort: a task revoked because another instance took it over is fenced, which is harmless.
        await this.commits.commitNow(handle).catch((error) => this.ctx.log.info('commit on revocation skipped', { task: handle.id, code: errorCode(error) }));
      }
      await this.closeHandle(handle);
    });
  }

  /** A running task stops processing (running → suspended); true when it had been running. */
  private suspend(handle: TaskHandle): boolean {
    if (handle.lifecycle.state !== 'running') return handle.lifecycle.state === 'suspended';
    handle.lifecycle.to('suspended');
    return true;
  }

  private async closeHandle(handle: TaskHandle): Promise<void> {
    if (handle.lifecycle.state === 'closed') return;
    this.suspend(handle);
    handle.lifecycle.to('closed');
    handle.input.clear();
    clearTimeout(handle.idleTimer);
    // Never rejects: a failed commit is reported through TaskCommits' onFailed (this.onTaskError).
    await handle.commitInFlight?.catch(() => undefined);
    await handle.task.close();
    await handle.committer.close();
  }

  /**
   * The fetch loop's part: hand the batch to its task's input queue and return, so the next fetch
   * does not wait for processing or commits (see TaskInputQueue). Waits only while the task's
   * queue is full.
   */
  async onBatch({ batch, resolveOffset, heartbeat, isRunning }: EachBatchPayload): Promise<void> {
    const { options, metrics } = this.ctx;
    if (this.halted()) return;
    const sub = options.topology.subtopologyOfTopic(batch.topic);
    const handle = sub && this.handles.get(taskId(sub.id, batch.partition));
    if (!handle) return;
    try {
      metrics.onLag({ applicationId: options.applicationId, topic: batch.topic, partition: batch.partition, lag: Number(batch.offsetLag()) });
      metrics.onFetch({ applicationId: options.applicationId, topic: batch.topic, partition: batch.partition, records: batch.messages.length });
      while (handle.lifecycle.is('created', 'restoring')) {
        // A task closed by a restart never becomes ready: leave, or the restart would wait for this batch forever.
        if (this.ctx.closing() || this.ctx.restarting()) return;
        // A failed initialisation asks for a restart (onAssignment), which ends this wait above.
        await Promise.race([handle.ready.catch(() => undefined), sleep(1000)]);
        if (handle.lifecycle.is('created', 'restoring')) await heartbeat();
      }
      if (handle.lifecycle.state === 'closed' || batch.messages.length === 0) return;
      const mark = fetchMarkOf(batch);
      for (const message of batch.messages) handle.input.append(batch.topic, toInput(batch.topic, batch.partition, message), mark);
      // Handed over: kafkajs fetches on from here. Nothing is committed until the task processed it.
      const last = batch.messages[batch.messages.length - 1]!.offset;
      const tail = batch.lastOffset();
      if (BigInt(tail) > BigInt(last)) this.enqueueConsumedThrough(handle, batch.topic, batch.partition, tail, mark);
      handle.input.handedOver(batch.topic, mark);
      resolveOffset(tail);
      this.schedule(handle);
      while (handle.input.full && !handle.lifecycle.is('closed') && isRunning() && !this.ctx.closing() && !this.ctx.restarting()) {
        await Promise.race([handle.input.belowHalf(), sleep(1000)]);
        await heartbeat();
      }
      await heartbeat();
    } catch (error) {
      // kafkajs rejoins the group by itself on these; tasks kept across it skip what they did.
      if (isRebalancing(error)) throw error;
      this.onTaskError(handle, error);
    }
  }

  /**
   * A fetch was answered, before its batches are handed over: each partition it found nothing new
   * in is caught up to that fetch (TaskInputQueue's time order), and a task waiting for it looks
   * again. Partitions with records catch up when onBatch hands them over.
   */
  onFetched(batches: readonly Batch[]): void {
    if (this.halted()) return;
    for (const batch of batches) {
      if (!batch.isEmpty()) continue;
      const sub = this.ctx.options.topology.subtopologyOfTopic(batch.topic);
      const handle = sub && this.handles.get(taskId(sub.id, batch.partition));
      if (handle && handle.input.handedOver(batch.topic, fetchMarkOf(batch)) && handle.lifecycle.state === 'running') this.schedule(handle);
    }
  }

  /**
   * A fetch whose records were all transaction markers or aborted records (kafkajs resolves those
   * without calling eachBatch, then reports them as a batch of size 0): the task may commit past them.
   */
  onFilteredBatch(payload: { topic: string; partition: number; batchSize: number; lastOffset: string }): void {
    if (payload.batchSize > 0 || this.halted()) return;
    const sub = this.ctx.options.topology.subtopologyOfTopic(payload.topic);
    const handle = sub && this.handles.get(taskId(sub.id, payload.partition));
    if (handle && handle.lifecycle.state === 'running') this.enqueueConsumedThrough(handle, payload.topic, payload.partition, payload.lastOffset, NO_FETCH);
  }

  private enqueueConsumedThrough(handle: TaskHandle, topic: string, partition: number, offset: string, mark: FetchMark): void {
    handle.input.append(topic, { consumedThrough: true, topic, partition, offset }, mark);
    this.schedule(handle);
  }

  /** Queues a turn of the task's input processing in its executor, unless one is queued already. */
  private schedule(handle: TaskHandle): void {
    if (handle.processingQueued) return;
    handle.processingQueued = true;
    handle.exec
      .run(() => {
        handle.processingQueued = false;
        return this.processInput(handle);
      })
      .then(
        () => {
          if (!this.owns(handle)) return;
          if (handle.input.waitUntil !== undefined) this.wakeAt(handle, handle.input.waitUntil);
          else if (handle.input.size > 0) this.schedule(handle);
          this.armFor(handle);
        },
        (error: unknown) => this.onTaskError(handle, error),
      );
  }

  /** The task waits for an input partition to catch up (TaskInputQueue.next): looks again at `atMs` at the latest. */
  private wakeAt(handle: TaskHandle, atMs: number): void {
    clearTimeout(handle.idleTimer);
    handle.idleTimer = setTimeout(
      () => {
        handle.idleTimer = undefined;
        if (this.owns(handle)) this.schedule(handle);
      },
      Math.max(0, atMs - Date.now()),
    );
  }

  /**
   * One turn: up to RECORDS_PER_TURN queued records through the task, in time order across its
   * input partitions (TaskInputQueue), then a commit if one is due. Turns are bounded so punctuators
   * and commits (tick) interleave with a long backlog.
   * Records below the task's next offset were processed already (kafkajs fetches again from the
   * committed offset after a rejoin) and are skipped.
   */
  private async processInput(handle: TaskHandle): Promise<void> {
    const { applicationId } = this.ctx.options;
    const enforcedBefore = handle.input.enforced;
    for (let n = 0; n < RECORDS_PER_TURN && this.owns(handle); n++) {
      const input = handle.input.next(Date.now());
      if (input === undefined) break;
      const offset = BigInt(input.offset);
      const next = handle.nextOffsets.get(input.topic);
      if (next !== undefined && offset < next) continue;
      if ('consumedThrough' in input) {
        handle.task.consumedThrough(input.topic, input.offset);
        handle.nextOffsets.set(input.topic, offset + 1n);
        continue;
      }
      const processing = handle.task.process(input);
      const outcome = processing instanceof Promise ? await processing : processing;
      handle.nextOffsets.set(input.topic, offset + 1n);
      if (outcome.kind === 'dead-lettered')
        this.ctx.metrics.onDeadLetter({ applicationId, topic: input.topic, partition: input.partition, code: outcome.code });
    }
    if (handle.input.enforced > enforcedBefore)
      this.ctx.metrics.onEnforcedProcessing({ applicationId, taskId: handle.id, records: handle.input.enforced - enforcedBefore });
    if (this.owns(handle) && this.commits.due(handle)) await this.commits.start(handle);
  }

  /** No task takes new work: the application is closing, restarting or stopped. */
  private halted(): boolean {
    return this.ctx.closing() || this.ctx.restarting() || this.ctx.failed();
  }

  /** The task is still this instance's to drive: running, assigned, and no restart or shutdown under way. */
  private owns(handle: TaskHandle): boolean {
    return handle.lifecycle.state === 'running' && !this.halted() && this.handles.get(handle.id) === handle;
  }

  /**
   * The runtime's timer: queues wall-clock punctuation and due commits of every running task, and
   * arms itself for the next. It fires when something is due, not on a fixed beat: an idle
   * application wakes only for its punctuators. Every turn re-arms it for its task (`armFor`); the
   * runtime also calls it on a slow beat as a backstop (StreamsApp.start).
   */
  tick(): void {
    if (this.halted()) return;
    const now = Date.now();
    for (const handle of this.handles.values()) {
      if (handle.lifecycle.state !== 'running') continue;
      const wallDue = (handle.task.nextWallClockMs() ?? Infinity) <= now;
      if (wallDue || this.commits.due(handle)) this.queueTurn(handle, wallDue);
      else this.armFor(handle);
    }
  }

  /**
   * Arms the timer for the task's next punctuation or commit, unless it fires sooner already. The
   * time is rounded up to the application's timer grid (`gridMs`), on the wall clock, so what
   * falls due within one step of it (other tasks' punctuators, other applications' in the process)
   * shares one wake-up.
   */
  private armFor(handle: TaskHandle): void {
    if (!this.owns(handle)) return;
    const dueMs = Math.min(handle.task.nextWallClockMs() ?? Infinity, this.commits.dueAtMs(handle));
    const atMs = Math.ceil(dueMs / this.gridMs) * this.gridMs;
    if (atMs >= this.timerAtMs) return;
    clearTimeout(this.timer);
    this.timerAtMs = atMs;
    this.timer = setTimeout(
      () => {
        this.timer = undefined;
        this.timerAtMs = Infinity;
        this.tick();
      },
      Math.max(0, atMs - Date.now()),
    );
  }

  /** Shutdown: the timer stops. */
  stopTimer(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAtMs = Infinity;
  }

  /** Queues a turn of wall-clock punctuation (when `wallDue`) and a due commit in the task's executor. */
  private queueTurn(handle: TaskHandle, wallDue: boolean): void {
    if (this.halted() || handle.lifecycle.state !== 'running' || handle.tickQueued) return;
    handle.tickQueued = true;
    handle.exec
      .run(async () => {
        handle.tickQueued = false;
        if (handle.lifecycle.state !== 'running' || this.ctx.restarting()) return;
        if (wallDue) await handle.task.punctuateWallClock(Date.now());
        if (this.commits.due(handle)) await this.commits.start(handle);
      })
      .then(
        () => this.armFor(handle),
        (error) => this.onTaskError(handle, error),
      );
  }

  private onTaskError(handle: TaskHandle, error: unknown): void {
    if (this.ctx.closing()) return;
    const { log } = this.ctx;
    // A processing failure that the error policy does not absorb, and that no retry can cure, stops
    // the application. Anything else (a fenced producer, a failed commit, a store outage) restarts
    // from the last commit.
    if (error instanceof TaskFailedError && !error.retriable) {
      this.ctx.fail(error);
      return;
    }
    const refused = error instanceof CommitFailedError ? refusedForGood(error) : undefined;
    if (refused !== undefined) {
      // Refused again after the restart, which backs off: a slow loop that metrics and pushctl status
      // show. Sink nodes check sizes and keys against the topic configs (re-read at each restart) first.
      log.error('the broker refused a commit; restarting with backoff', { task: handle.id, refusal: refused, error: errorMessage(error) });
      this.ctx.requestRestart(
        new PushError('COMMIT_REFUSED', `the broker refused the commit of task ${handle.id}: ${refused}`, { retriable: true, cause: error }),
        [handle.generation],
      );
      return;
    }
    log.warn('task failed; restarting from the last commit', { task: handle.id, code: errorCode(error), error: errorMessage(error) });
    this.ctx.requestRestart(error, [handle.generation]);
  }

  /** Shutdown: every task stops processing and commits what it did (after its commit in flight). */
  async commitAll(): Promise<void> {
    for (const handle of this.handles.values()) {
      await handle.exec
        .run(() => {
          this.suspend(handle);
          return this.commits.commitNow(handle);
        })
        .catch((error) => this.ctx.log.warn('final commit failed', { task: handle.id, code: errorCode(error), error }));
    }
  }

  /** Closes every task (uncommitted work is discarded: state and positions go back to the last commit). */
  async closeAll(): Promise<void> {
    const handles = [...this.handles.values()];
    this.handles.clear();
    await Promise.all(
      handles.map((h) =>
        h.ready
          // A failed initialisation asked for a restart already; the task closes either way.
          .catch(() => undefined)
          .then(() => h.exec.run(() => this.closeHandle(h)))
          .catch((error) => this.ctx.log.warn('closing a task failed', { task: h.id, code: errorCode(error), error: errorMessage(error) })),
      ),
    );
  }

  private generations(handles: readonly TaskHandle[]): number[] {
    return handles.map((h) => h.generation);
  }
}
