import { Kafka, logLevel, type Admin, type Consumer, type EachBatchPayload, type Producer, type RequestEvent } from 'kafkajs';
import { ConfigError, PushError, errorCode, errorMessage, isRetriable } from '../common/errors.ts';
import { createLogger, type Logger } from '../common/log.ts';
import { sleep, withTimeout } from '../common/retry.ts';
import { StreamTask } from './task.ts';
import { changelogTopicName, ensureTopics, restoreChangelogs, type RestoreTarget } from './changelog.ts';
import { AtLeastOnceCommitter, TransactionalCommitter, type TaskCommitter } from './eos.ts';
import { TaskCommits } from './task-commits.ts';
import { taskAssigner, taskId, type TaskId } from './assignor.ts';
import { safeMetrics } from './metrics.ts';
import { SerialExecutor } from './serial-executor.ts';
import { toInput, type TaskHandle } from './task-handle.ts';
import { TaskInputQueue } from './task-input.ts';
import { isRebalancing, refusedForGood } from './kafka-errors.ts';
import { RestartPacer } from './restart-backoff.ts';
import { DLQ_MAX_MESSAGE_BYTES, readTopicRules, type TopicRules } from './topic-rules.ts';
import { cacheCoordinatorLookups } from './coordinator-cache.ts';
import { resolveStreamsAppOptions, type ResolvedStreamsAppOptions, type StreamsAppOptions } from './runtime-options.ts';

export type { ProcessingGuarantee, StreamsAppOptions } from './runtime-options.ts';

/** Records a task processes in one turn of its executor before punctuators and commits get a turn. */
const RECORDS_PER_TURN = 500;

/**
 * Runs a topology on Kafka: one task per input partition of each sub-topology, stores restored from
 * their changelogs before processing, exactly-once through one transactional producer per task.
 *
 * Rebalancing (kafkajs is eager and has no revocation callback): on every GROUP_JOIN, tasks no
 * longer assigned commit (best effort; a fenced commit is harmless) and close; new tasks fence the
 * previous owner's producer, read the committed offsets, restore their stores, then process.
 * Because kafkajs restarts every partition from its committed offset after a rejoin, each task
 * skips records below its own next offset, so nothing is processed twice into its state.
 */
export class StreamsApp {
  private readonly options: ResolvedStreamsAppOptions;
  private readonly kafka: Kafka;
  private readonly log: Logger;
  private readonly metrics: ReturnType<typeof safeMetrics>;
  private admin?: Admin;
  private consumer?: Consumer;
  private sharedProducer?: Producer;
  private readonly handles = new Map<TaskId, TaskHandle>();
  private readonly partitionsBySubtopology = new Map<number, number>();
  private tick?: NodeJS.Timeout;
  private inFlightBatches = 0;
  private closing = false;
  private restarting?: Promise<void>;
  private fatal?: unknown;
  private memberId?: string;
  private readonly commits: TaskCommits;
  private readonly retired = new WeakSet<Consumer>();
  /** Counts the consumers created; each task records the one whose assignment created it. */
  private generation = 0;
  /** While a restart runs: the newest generation whose tasks it closes. */
  private restartCloses = -1;
  /** A restart asked for by a task the running restart does not close: runs after it. */
  private restartAgain?: { reason: unknown };
  private readonly restarts: RestartPacer;
  /** Record limits and key rules of the sink topics and the DLQ, read at start and at each restart. */
  private topicRules = new Map<string, TopicRules>();

  constructor(options: StreamsAppOptions) {
    this.options = resolveStreamsAppOptions(options);
    this.log = (options.logger ?? createLogger()).child({ app: options.applicationId });
    this.metrics = safeMetrics(options.metricsListener, this.log);
    const o = this.options;
    this.restarts = new RestartPacer({
      initialMs: o.restartBackoffInitialMs,
      maxMs: o.restartBackoffMaxMs,
      resetMs: o.restartBackoffResetMs,
      applicationId: o.applicationId,
      metrics: this.metrics,
      log: this.log,
    });
    this.commits = new TaskCommits(options.applicationId, this.options.commitIntervalMs, this.metrics, (handle, error) => this.onTaskError(handle, error));
    cacheCoordinatorLookups();
    this.kafka = new Kafka({
      clientId: options.clientId ?? options.applicationId,
      brokers: options.brokers,
      logLevel: logLevel.NOTHING,
      retry: { initialRetryTime: 50, retries: 10, maxRetryTime: 3000 },
    });
  }

  /** Creates changelog and DLQ topics if needed, joins the group and starts processing. */
  async start(): Promise<void> {
    const { topology, applicationId } = this.options;
    this.admin = this.kafka.admin();
    await this.admin.connect();
    const metadata = await this.admin.fetchTopicMetadata({ topics: topology.sourceTopics });
    const partitionsOfTopic = new Map(metadata.topics.map((t) => [t.name, t.partitions.length]));
    for (const sub of topology.subtopologies) {
      const counts = new Set(sub.sourceTopics.map((t) => partitionsOfTopic.get(t)!));
      if (counts.size !== 1)
        throw new ConfigError(
          `sub-topology ${sub.id}`,
          `source topics ${sub.sourceTopics.join(', ')} are not co-partitioned (partition counts ${[...counts].join(', ')})`,
        );
      this.partitionsBySubtopology.set(sub.id, [...counts][0]!);
    }
    const maxPartitions = Math.max(...this.partitionsBySubtopology.values());
    await ensureTopics(this.admin, [
      ...topology.subtopologies.flatMap((sub) =>
        sub.stores
          .filter((s) => s.changelog !== false)
          .map((s) => ({
            topic: changelogTopicName(applicationId, s.name),
            numPartitions: this.partitionsBySubtopology.get(sub.id)!,
            configs: { 'cleanup.policy': 'compact' },
          })),
      ),
      // The DLQ must take records a little over any other topic's limit (topic-rules.ts).
      { topic: this.options.dlqTopic, numPartitions: maxPartitions, configs: { 'max.message.bytes': String(DLQ_MAX_MESSAGE_BYTES) } },
    ]);
    await this.readTopicRules();
    if (this.options.processingGuarantee === 'at_least_once') {
      this.sharedProducer = this.kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
      this.sharedProducer.on(this.sharedProducer.events.REQUEST, this.countRequest);
      await this.sharedProducer.connect();
    }
    await this.startConsumer();
    const tickMs = Math.max(5, Math.min(50, Math.floor(this.options.commitIntervalMs / 2)));
    this.tick = setInterval(() => this.onTick(), tickMs);
    this.log.info('streams app started', { guarantee: this.options.processingGuarantee, subtopologies: topology.subtopologies.length });
  }

  /**
   * Graceful shutdown: stops taking new batches, finishes the in-flight ones, commits every task,
   * then leaves the group (so the partitions move at once) and closes processors and producers.
   */
  async close(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    if (this.tick) clearInterval(this.tick);
    this.restarts.close();
    await this.restarting?.catch(() => undefined);
    while (this.inFlightBatches > 0) await sleep(5);
    for (const handle of this.handles.values()) {
      await handle.exec.run(() => this.commits.commitNow(handle)).catch((error) => this.log.warn('final commit failed', { task: handle.id, error }));
    }
    await this.consumer?.disconnect().catch(() => undefined);
    await this.closeAllTasks();
    await this.sharedProducer?.disconnect().catch(() => undefined);
    await this.admin?.disconnect().catch(() => undefined);
    this.log.info('streams app closed');
  }

  /** Counts each request a client sends, by API (the bench reads them per message). */
  private readonly countRequest = ({ payload }: RequestEvent): void =>
    this.metrics.onKafkaRequest({ applicationId: this.options.applicationId, api: payload.apiName });

  /** Task ids currently owned by this instance. */
  assignedTasks(): TaskId[] {
    return [...this.handles.keys()].sort();
  }

  /**
   * A fresh consumer for the group. Only the current one drives tasks, and restarts are ours alone:
   * kafkajs restarts a crashed consumer on a timer that a disconnect during the crash does not
   * cancel, which left an old consumer rejoining as a second member of this process, holding
   * partitions that no task processed. So kafkajs never restarts a consumer (restartOnFailure), a
   * crash retires the consumer and asks for a restart, and a retired consumer that joins or
   * fetches anyway is disconnected again (see retire).
   */
  private async startConsumer(): Promise<void> {
    const { topology, applicationId } = this.options;
    const retired = () => this.consumer !== consumer || this.retired.has(consumer);
    const consumer: Consumer = this.kafka.consumer({
      groupId: applicationId,
      partitionAssigners: [
        taskAssigner(
          topology,
          (s) => this.partitionsBySubtopology.get(s)!,
          () => this.assignedTasks(),
        ),
      ],
      sessionTimeout: this.options.sessionTimeoutMs,
      heartbeatInterval: Math.min(1000, Math.floor(this.options.sessionTimeoutMs / 4)),
      // How long the broker may hold a fetch with nothing to return (Kafka's default). Records end it
      // at once (minBytes 1), so this costs no latency; it only sets how often an idle consumer asks.
      maxWaitTimeInMs: 500,
      readUncommitted: false,
      retry: { initialRetryTime: 100, retries: 10, restartOnFailure: async () => false },
    });
    this.consumer = consumer;
    this.generation++;
    consumer.on(consumer.events.REQUEST, this.countRequest);
    consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => {
      if (retired()) {
        this.log.warn('a retired consumer rejoined; disconnecting it', { memberId: payload.memberId });
        // kafkajs' stop() does nothing until the join returns (the runner counts as running only
        // after it), so disconnect once the join has returned.
        setTimeout(() => void this.retire(consumer), 0);
        return;
      }
      if (this.closing) return;
      this.onAssignment(payload.memberId, payload.memberAssignment);
    });
    consumer.on(consumer.events.END_BATCH_PROCESS, ({ payload }) => {
      if (!retired()) this.onFilteredBatch(payload);
    });
    consumer.on(consumer.events.CRASH, ({ payload }) => {
      if (retired() || this.closing) return;
      this.log.warn('consumer crashed', { error: payload.error });
      this.retired.add(consumer); // kafkajs has disconnected it
      this.requestRestart(payload.error);
    });
    await consumer.connect();
    await consumer.subscribe({ topics: topology.sourceTopics, fromBeginning: this.options.autoOffsetReset === 'earliest' });
    await consumer.run({
      autoCommit: false,
      eachBatchAutoResolve: false,
      partitionsConsumedConcurrently: this.options.partitionsConsumedConcurrently,
      eachBatch: async (payload) => {
        if (retired())
          void this.retire(consumer); // it is fetching: still a member holding partitions
        else if (!this.closing) await this.onBatch(payload);
      },
    });
  }

  private onAssignment(memberId: string, assignment: Record<string, number[]>): void {
    if (this.memberId !== undefined && this.memberId !== memberId) {
      // This member was expelled (session expired): its tasks may have run elsewhere since, so
      // none of the in-memory state can be trusted. Close everything; assigned tasks restart.
      this.log.warn('rejoined under a new member id; dropping all tasks', { previous: this.memberId, memberId });
      for (const handle of this.handles.values()) void this.revoke(handle, false);
      this.handles.clear();
    }
    this.memberId = memberId;
    const assigned = new Set<TaskId>();
    for (const [topic, partitions] of Object.entries(assignment)) {
      const sub = this.options.topology.subtopologyOfTopic(topic);
      if (sub) for (const p of partitions) assigned.add(taskId(sub.id, p));
    }
    for (const [id, handle] of this.handles) {
      if (assigned.has(id)) continue;
      this.handles.delete(id);
      void this.revoke(handle);
    }
    const created: TaskHandle[] = [];
    for (const id of assigned) if (!this.handles.has(id)) created.push(this.createHandle(id));
    this.metrics.onAssignment({ applicationId: this.options.applicationId, taskIds: this.assignedTasks() });
    this.log.info('assignment', { tasks: this.assignedTasks(), created: created.map((h) => h.id) });
    if (created.length === 0) return;
    const ready = withTimeout(
      this.initTasks(created),
      this.options.taskInitTimeoutMs,
      () =>
        new PushError('TASK_INIT_TIMEOUT', `tasks ${created.map((h) => h.id).join(',')} not ready after ${this.options.taskInitTimeoutMs} ms`, {
          retriable: true,
        }),
    );
    ready.catch((error) => this.requestRestart(error, created));
    for (const h of created) {
      h.ready = ready.then(() => void (h.isReady = true));
      h.ready.catch(() => undefined); // handled through requestRestart above
    }
  }

  private createHandle(id: TaskId): TaskHandle {
    const [sub, partition] = id.split('_').map(Number) as [number, number];
    const subtopology = this.options.topology.subtopologies[sub]!;
    const { applicationId } = this.options;
    const task = new StreamTask({
      applicationId,
      topology: this.options.topology,
      subtopology,
      partition,
      clock: Date.now,
      dlqTopic: this.options.dlqTopic,
      processingErrorPolicy: this.options.processingErrorPolicy,
      changelogTopic: (store) => changelogTopicName(applicationId, store),
      topicRules: (topic) => this.topicRules.get(topic) ?? { maxRecordBytes: this.options.maxRecordBytes, keyRequired: false },
      onOutputDeadLetter: ({ topic, code }) => this.metrics.onDeadLetter({ applicationId, topic, partition, code }),
      logger: this.log,
    });
    const committer: TaskCommitter =
      this.options.processingGuarantee === 'exactly_once'
        ? new TransactionalCommitter(this.kafka, {
            transactionalId: `${applicationId}-${id}`,
            groupId: applicationId,
            onProducer: (producer) => producer.on(producer.events.REQUEST, this.countRequest),
          })
        : new AtLeastOnceCommitter(this.sharedProducer!, () => this.consumer!, this.log);
    const handle: TaskHandle = {
      id,
      task,
      committer,
      sources: subtopology.sourceTopics,
      exec: new SerialExecutor(),
      nextOffsets: new Map(),
      ready: Promise.resolve(),
      isReady: false,
      generation: this.generation,
      closed: false,
      lastCommitMs: Date.now(),
      tickQueued: false,
      commitFailed: false,
      input: new TaskInputQueue(this.options.maxBufferedRecords),
      processingQueued: false,
    };
    this.handles.set(id, handle);
    return handle;
  }

  /** Fence, read committed offsets, restore stores, init processors: in that order (see class doc). */
  private async initTasks(handles: TaskHandle[]): Promise<void> {
    const { applicationId } = this.options;
    await Promise.all(handles.map((h) => h.committer.init()));
    const topics = [...new Set(handles.flatMap((h) => h.sources))];
    const committed = await this.admin!.fetchOffsets({ groupId: applicationId, topics });
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
            this.metrics.onRestoreProgress({ applicationId, taskId: h.id, store: store.name, restoredRecords, done }),
        })),
    );
    const started = Date.now();
    if (targets.length > 0) await restoreChangelogs(this.kafka, this.admin!, applicationId, targets, this.log);
    for (const h of handles) {
      if (h.closed) continue;
      await h.task.init();
      h.lastCommitMs = Date.now();
    }
    this.log.info('tasks ready', { tasks: handles.map((h) => h.id), restoreMs: Date.now() - started });
  }

  private async revoke(handle: TaskHandle, commit = true): Promise<void> {
    await handle.ready.catch(() => undefined);
    await handle.exec.run(async () => {
      if (handle.closed) return;
      if (commit && handle.isReady && this.options.processingGuarantee === 'exactly_once') {
        await this.commits.commitNow(handle).catch((error) => this.log.info('commit on revocation skipped', { task: handle.id, code: errorCode(error) }));
      }
      await this.closeHandle(handle);
    });
  }

  private async closeHandle(handle: TaskHandle): Promise<void> {
    if (handle.closed) return;
    handle.closed = true;
    handle.input.clear();
    await handle.commitInFlight?.catch(() => undefined);
    await handle.task.close();
    await handle.committer.close();
  }

  /**
   * The fetch loop's part: hand the batch to its task's input queue and return, so the next fetch
   * does not wait for processing or commits (see TaskInputQueue). Waits only while the task's
   * queue is full.
   */
  private async onBatch({ batch, resolveOffset, heartbeat, isRunning }: EachBatchPayload): Promise<void> {
    if (this.closing || this.restarting || this.fatal) return;
    const sub = this.options.topology.subtopologyOfTopic(batch.topic);
    const handle = sub && this.handles.get(taskId(sub.id, batch.partition));
    if (!handle) return;
    this.inFlightBatches++;
    try {
      this.metrics.onLag({ applicationId: this.options.applicationId, topic: batch.topic, partition: batch.partition, lag: Number(batch.offsetLag()) });
      this.metrics.onFetch({ applicationId: this.options.applicationId, topic: batch.topic, partition: batch.partition, records: batch.messages.length });
      while (!handle.isReady) {
        // A task closed by a restart never becomes ready: leave, or the restart would wait for this batch forever.
        if (handle.closed || this.closing || this.restarting) return;
        await Promise.race([handle.ready.catch(() => undefined), sleep(1000)]);
        if (!handle.isReady) await heartbeat();
      }
      if (handle.closed || batch.messages.length === 0) return;
      for (const message of batch.messages) handle.input.push(toInput(batch.topic, batch.partition, message));
      // Handed over: kafkajs fetches on from here. Nothing is committed until the task processed it.
      const last = batch.messages[batch.messages.length - 1]!.offset;
      const tail = batch.lastOffset();
      if (BigInt(tail) > BigInt(last)) this.enqueueConsumedThrough(handle, batch.topic, batch.partition, tail);
      resolveOffset(tail);
      this.schedule(handle);
      while (handle.input.full && !handle.closed && isRunning() && !this.closing && !this.restarting) {
        await Promise.race([handle.input.belowHalf(), sleep(1000)]);
        await heartbeat();
      }
      await heartbeat();
    } catch (error) {
      // kafkajs rejoins the group by itself on these; tasks kept across it skip what they did.
      if (isRebalancing(error)) throw error;
      this.onTaskError(handle, error);
    } finally {
      this.inFlightBatches--;
    }
  }

  /**
   * A fetch whose records were all transaction markers or aborted records (kafkajs resolves those
   * without calling eachBatch, then reports them as a batch of size 0): the task may commit past them.
   */
  private onFilteredBatch(payload: { topic: string; partition: number; batchSize: number; lastOffset: string }): void {
    if (payload.batchSize > 0 || this.closing || this.restarting || this.fatal) return;
    const sub = this.options.topology.subtopologyOfTopic(payload.topic);
    const handle = sub && this.handles.get(taskId(sub.id, payload.partition));
    if (handle && handle.isReady && !handle.closed) this.enqueueConsumedThrough(handle, payload.topic, payload.partition, payload.lastOffset);
  }

  private enqueueConsumedThrough(handle: TaskHandle, topic: string, partition: number, offset: string): void {
    handle.input.push({ consumedThrough: true, topic, partition, offset });
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
          if (handle.input.size > 0 && this.owns(handle)) this.schedule(handle);
        },
        (error: unknown) => this.onTaskError(handle, error),
      );
  }

  /**
   * One turn: up to RECORDS_PER_TURN queued records through the task, then a commit if one is due.
   * Turns are bounded so punctuators and commits (onTick) interleave with a long backlog.
   * Records below the task's next offset were processed already (kafkajs fetches again from the
   * committed offset after a rejoin) and are skipped.
   */
  private async processInput(handle: TaskHandle): Promise<void> {
    const { applicationId } = this.options;
    for (let n = 0; n < RECORDS_PER_TURN && this.owns(handle); n++) {
      const input = handle.input.shift();
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
      if (outcome.kind === 'dead-lettered') this.metrics.onDeadLetter({ applicationId, topic: input.topic, partition: input.partition, code: outcome.code });
    }
    if (this.owns(handle) && this.commits.due(handle)) await this.commits.start(handle);
  }

  /** The task is still this instance's to drive: open, ready, assigned, and no restart or shutdown under way. */
  private owns(handle: TaskHandle): boolean {
    return handle.isReady && !handle.closed && !this.closing && !this.restarting && !this.fatal && this.handles.get(handle.id) === handle;
  }

  private onTick(): void {
    if (this.closing || this.restarting || this.fatal) return;
    const now = Date.now();
    for (const handle of this.handles.values()) {
      if (!handle.isReady || handle.closed || handle.tickQueued) continue;
      const wallDue = (handle.task.nextWallClockMs() ?? Infinity) <= now;
      if (!wallDue && !this.commits.due(handle)) continue;
      handle.tickQueued = true;
      handle.exec
        .run(async () => {
          handle.tickQueued = false;
          if (handle.closed || this.restarting) return;
          if (wallDue) await handle.task.punctuateWallClock(Date.now());
          if (this.commits.due(handle)) await this.commits.start(handle);
        })
        .catch((error) => this.onTaskError(handle, error));
    }
  }

  private onTaskError(handle: TaskHandle, error: unknown): void {
    if (this.closing) return;
    const retriable = isRetriable(error) || errorCode(error) === 'TASK_FENCED' || errorCode(error) === 'COMMIT_FAILED';
    if (!retriable && errorCode(error) === 'TASK_FAILED') {
      void this.failFatally(error);
      return;
    }
    const refused = errorCode(error) === 'COMMIT_FAILED' ? refusedForGood(error) : undefined;
    if (refused !== undefined) {
      // Refused again after the restart, which backs off: a slow loop that metrics and pushctl status
      // show. Sinks check sizes and keys against the topic configs (re-read at each restart) first.
      this.log.error('the broker refused a commit; restarting with backoff', { task: handle.id, refusal: refused, error: errorMessage(error) });
      this.requestRestart(
        new PushError('COMMIT_REFUSED', `the broker refused the commit of task ${handle.id}: ${refused}`, { retriable: true, cause: error }),
        [handle],
      );
      return;
    }
    this.log.warn('task failed; restarting from the last commit', { task: handle.id, code: errorCode(error), error: errorMessage(error) });
    this.requestRestart(error, [handle]);
  }

  /** Reads the sink topics' and the DLQ's limits; a failure or a broker slower than 5 s keeps the last ones (a restart must not wait on it). */
  private async readTopicRules(): Promise<void> {
    const reading = readTopicRules(
      this.admin!,
      this.options.topology.subtopologies.flatMap((s) => s.sinkTopics),
      this.options.dlqTopic,
      this.options.maxRecordBytes,
      this.log,
    );
    const rules = await withTimeout(reading, 5000, () => new PushError('TOPIC_RULES_TIMEOUT', 'topic configs not read in 5 s')).catch(
      () => new Map<string, TopicRules>(),
    );
    for (const [topic, r] of rules) this.topicRules.set(topic, r);
  }

  /**
   * Drops every task (their uncommitted work is discarded: state and positions go back to the last
   * commit) and rejoins the group with a fresh consumer. A request while a restart runs is covered
   * by it when it comes from the consumer or from tasks that restart closes; one from a task its
   * new consumer created (initialisation or commit failed meanwhile) restarts again afterwards, so
   * a task that can never become ready or commit does not keep its partition.
   */
  private requestRestart(reason: unknown, from: readonly TaskHandle[] = []): void {
    if (this.closing || this.fatal) return;
    if (this.restarting) {
      if (from.some((h) => h.generation > this.restartCloses)) this.restartAgain = { reason };
      return;
    }
    this.restarting = (async () => {
      let cause = reason;
      for (let attempt = 1; !this.closing; attempt++) {
        const backoffMs = this.restarts.begin(cause, attempt);
        // This attempt closes every task there is now; what earlier attempts' consumers created too.
        this.restartCloses = this.generation;
        this.restartAgain = undefined;
        try {
          if (this.consumer) await this.retire(this.consumer);
          while (this.inFlightBatches > 0) await sleep(5);
          await this.closeAllTasks();
          this.memberId = undefined; // the next join starts without tasks: nothing to drop then
          // Out of the group while waiting, so another instance may take the partitions meanwhile.
          await this.restarts.wait(backoffMs);
          if (this.closing) return;
          await this.readTopicRules();
          await this.startConsumer();
          // A crash while joining happens inside startConsumer, while this restart still holds the flag.
          if (!this.retired.has(this.consumer!)) return this.restarts.rejoined();
          throw new PushError('CONSUMER_CRASHED', 'the consumer crashed while joining the group', { retriable: true });
        } catch (error) {
          cause = error;
        }
      }
    })().finally(() => {
      this.restarting = undefined;
      const again = this.restartAgain;
      this.restartAgain = undefined;
      if (again) this.requestRestart(again.reason);
    });
  }

  /**
   * Takes a consumer out of the group for good: from now on it drives no task, never restarts
   * itself, and is disconnected again whenever it shows up as a member (a join or a fetch), so its
   * partitions move to a live member instead of staying with one that processes nothing.
   */
  private async retire(consumer: Consumer): Promise<void> {
    this.retired.add(consumer);
    await consumer.disconnect().catch(() => undefined);
  }

  private async failFatally(error: unknown): Promise<void> {
    if (this.fatal) return;
    this.fatal = error;
    this.log.error('processing failed; stopping (processingErrorPolicy=fail)', { code: errorCode(error), error: errorMessage(error) });
    if (this.tick) clearInterval(this.tick);
    await this.consumer?.disconnect().catch(() => undefined);
    await this.closeAllTasks();
    await this.sharedProducer?.disconnect().catch(() => undefined);
    await this.admin?.disconnect().catch(() => undefined);
    this.closing = true;
    this.options.onFatalError?.(error instanceof PushError ? error : new PushError('FATAL', errorMessage(error), { cause: error }));
  }

  private async closeAllTasks(): Promise<void> {
    const handles = [...this.handles.values()];
    this.handles.clear();
    await Promise.all(
      handles.map((h) =>
        h.ready
          .catch(() => undefined)
          .then(() => h.exec.run(() => this.closeHandle(h)))
          .catch(() => undefined),
      ),
    );
  }
}
