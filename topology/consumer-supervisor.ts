import type { Batch, Consumer, EachBatchPayload, Kafka, RequestEvent } from 'kafkajs';
import { PushError, errorCode, errorMessage } from '../common/errors.ts';
import type { Logger } from '../common/log.ts';
import { sleep } from '../common/retry.ts';
import { taskAssigner, type TaskId } from './assignor.ts';
import type { MetricsListener } from './metrics.ts';
import { RestartPacer } from './restart-backoff.ts';
import type { ResolvedStreamsAppOptions } from './runtime-options.ts';

/** What the supervisor drives: the application's tasks (TaskManager) and its start-up state. */
export interface ConsumerSupervisorContext {
  readonly options: ResolvedStreamsAppOptions;
  readonly kafka: Kafka;
  readonly log: Logger;
  readonly metrics: Required<MetricsListener>;
  readonly countRequest: (event: RequestEvent) => void;
  /** Partition count of each sub-topology's source topics (read at start). */
  readonly partitionsOf: (subtopology: number) => number;
  /** The application is closing (or closed after a fatal error). */
  readonly closing: () => boolean;
  /** A fatal error stopped the application. */
  readonly failed: () => boolean;
  /** The tasks: what the consumer's joins and fetches are handed to, and what a restart closes. */
  readonly tasks: {
    assignedTasks(): TaskId[];
    onAssignment(memberId: string, assignment: Record<string, number[]>): void;
    onBatch(payload: EachBatchPayload): Promise<void>;
    onFilteredBatch(payload: { topic: string; partition: number; batchSize: number; lastOffset: string }): void;
    onFetched(batches: readonly Batch[]): void;
    closeAll(): Promise<void>;
    forgetMember(): void;
  };
  /** Before each rejoin of a restart (re-reads the topics' record limits; never rejects). */
  readonly beforeRejoin: () => Promise<void>;
}

/**
 * The group consumer of one streams application and its restarts: creates the consumer, hands its
 * joins and fetched batches to the tasks, retires a crashed consumer, and restarts with backoff
 * (restart-backoff.ts) on a crash or when a task asks for it.
 *
 * Only the current consumer drives tasks, and restarts are ours alone: kafkajs restarts a crashed
 * consumer on a timer that a disconnect during the crash does not cancel, which left an old
 * consumer rejoining as a second member of this process, holding partitions that no task
 * processed. So kafkajs never restarts a consumer (restartOnFailure), a crash retires the consumer
 * and asks for a restart, and a retired consumer that joins or fetches anyway is disconnected
 * again (see retire).
 */
export class ConsumerSupervisor {
  private consumer?: Consumer;
  private readonly retired = new WeakSet<Consumer>();
  /** Counts the consumers created; each task records the one whose assignment created it. */
  private generationCount = 0;
  private inFlightBatches = 0;
  private restartRun?: Promise<void>;
  /** While a restart runs: the newest generation whose tasks it closes. */
  private restartCloses = -1;
  /** A restart asked for by a task the running restart does not close: runs after it. */
  private restartAgain?: { reason: unknown };
  private readonly restarts: RestartPacer;

  constructor(private readonly ctx: ConsumerSupervisorContext) {
    const o = ctx.options;
    this.restarts = new RestartPacer({
      initialMs: o.restartBackoffInitialMs,
      maxMs: o.restartBackoffMaxMs,
      resetMs: o.restartBackoffResetMs,
      applicationId: o.applicationId,
      metrics: ctx.metrics,
      log: ctx.log,
    });
  }

  /** The current consumer. */
  current(): Consumer {
    return this.consumer!;
  }

  /** Generation of the current consumer. */
  get generation(): number {
    return this.generationCount;
  }

  /** A restart is under way. */
  get restarting(): boolean {
    return this.restartRun !== undefined;
  }

  /** Creates the first consumer: joins the group and starts fetching. */
  async start(): Promise<void> {
    await this.startConsumer();
  }

  /** Shutdown, first part: cuts a restart's backoff short, waits for it and for the batches being handed over. */
  async quiesce(): Promise<void> {
    this.restarts.close();
    // The restart loop catches its own failures: this never rejects.
    await this.restartRun;
    await this.batchesHandedOver();
  }

  /** Shutdown, last part (after the final commits): leaves the group, so the partitions move at once. */
  async disconnect(): Promise<void> {
    await this.consumer?.disconnect().catch((error) => this.ctx.log.warn('consumer disconnect failed', { code: errorCode(error), error: errorMessage(error) }));
  }

  private async batchesHandedOver(): Promise<void> {
    while (this.inFlightBatches > 0) await sleep(5);
  }

  private async startConsumer(): Promise<void> {
    const { options, log, tasks } = this.ctx;
    const retired = () => this.consumer !== consumer || this.retired.has(consumer);
    const consumer: Consumer = this.ctx.kafka.consumer({
      groupId: options.applicationId,
      partitionAssigners: [taskAssigner(options.topology, this.ctx.partitionsOf, () => tasks.assignedTasks())],
      sessionTimeout: options.sessionTimeoutMs,
      // A third of the session, as Kafka's own clients advise: every heartbeat is a request the
      // worker and the broker pay for, idle or not, and a member learns of a rebalance at its next one.
      heartbeatInterval: Math.floor(options.sessionTimeoutMs / 3),
      // StreamsAppOptions.fetchMinBytes: 1 by default, so records end a fetch at once and the wait
      // only sets how often an idle consumer asks.
      minBytes: options.fetchMinBytes,
      maxWaitTimeInMs: options.fetchMaxWaitMs,
      readUncommitted: false,
      retry: { initialRetryTime: 100, retries: 10, restartOnFailure: async () => false },
    });
    this.consumer = consumer;
    this.generationCount++;
    consumer.on(consumer.events.REQUEST, this.ctx.countRequest);
    consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => {
      if (retired()) {
        log.warn('a retired consumer rejoined; disconnecting it', { memberId: payload.memberId });
        // kafkajs' stop() does nothing until the join returns (the runner counts as running only
        // after it), so disconnect once the join has returned.
        setTimeout(() => void this.retire(consumer), 0);
        return;
      }
      if (this.ctx.closing()) return;
      tasks.onAssignment(payload.memberId, payload.memberAssignment);
    });
    consumer.on(consumer.events.FETCH, ({ payload }) => {
      // Every batch of the fetch, empty ones included (stack/kafkajs-patch/fetch-order.patch).
      const { batches } = payload as { batches?: Batch[] };
      if (batches && !retired()) tasks.onFetched(batches);
    });
    consumer.on(consumer.events.END_BATCH_PROCESS, ({ payload }) => {
      if (!retired()) tasks.onFilteredBatch(payload);
    });
    consumer.on(consumer.events.CRASH, ({ payload }) => {
      if (retired() || this.ctx.closing()) return;
      log.warn('consumer crashed', { code: errorCode(payload.error), error: payload.error });
      this.retired.add(consumer); // kafkajs has disconnected it
      this.requestRestart(payload.error);
    });
    await consumer.connect();
    await consumer.subscribe({ topics: options.topology.sourceTopics, fromBeginning: options.autoOffsetReset === 'earliest' });
    await consumer.run({
      autoCommit: false,
      eachBatchAutoResolve: false,
      partitionsConsumedConcurrently: options.partitionsConsumedConcurrently,
      eachBatch: async (payload) => {
        if (retired())
          void this.retire(consumer); // it is fetching: still a member holding partitions
        else if (!this.ctx.closing()) await this.handOver(payload);
      },
    });
  }

  /** A batch to the tasks, counted so that a restart or shutdown waits until it is handed over. */
  private async handOver(payload: EachBatchPayload): Promise<void> {
    this.inFlightBatches++;
    try {
      await this.ctx.tasks.onBatch(payload);
    } finally {
      this.inFlightBatches--;
    }
  }

  /**
   * Drops every task (their uncommitted work is discarded: state and positions go back to the last
   * commit) and rejoins the group with a fresh consumer. A request while a restart runs is covered
   * by it when it comes from the consumer or from tasks that restart closes (`generations`: those of
   * the consumers that created the asking tasks); one from a task its new consumer created
   * (initialisation or commit failed meanwhile) restarts again afterwards, so a task that can never
   * become ready or commit does not keep its partition.
   */
  requestRestart(reason: unknown, generations: readonly number[] = []): void {
    if (this.ctx.closing() || this.ctx.failed()) return;
    if (this.restartRun) {
      if (generations.some((g) => g > this.restartCloses)) this.restartAgain = { reason };
      return;
    }
    this.restartRun = this.restart(reason).finally(() => {
      this.restartRun = undefined;
      const again = this.restartAgain;
      this.restartAgain = undefined;
      if (again) this.requestRestart(again.reason);
    });
  }

  /** Attempts a restart until one rejoins or the application closes; never rejects. */
  private async restart(reason: unknown): Promise<void> {
    let cause = reason;
    for (let attempt = 1; !this.ctx.closing(); attempt++) {
      const backoffMs = this.restarts.begin(cause, attempt);
      // This attempt closes every task there is now; what earlier attempts' consumers created too.
      this.restartCloses = this.generationCount;
      this.restartAgain = undefined;
      try {
        if (this.consumer) await this.retire(this.consumer);
        await this.batchesHandedOver();
        await this.ctx.tasks.closeAll();
        this.ctx.tasks.forgetMember(); // the next join starts without tasks: nothing to drop then
        // Out of the group while waiting, so another instance may take the partitions meanwhile.
        await this.restarts.wait(backoffMs);
        if (this.ctx.closing()) return;
        await this.ctx.beforeRejoin();
        await this.startConsumer();
        // A crash while joining happens inside startConsumer, while this restart still holds the flag.
        if (!this.retired.has(this.consumer!)) return this.restarts.rejoined();
        throw new PushError('CONSUMER_CRASHED', 'the consumer crashed while joining the group', { retriable: true });
      } catch (error) {
        cause = error;
      }
    }
  }

  /**
   * Takes a consumer out of the group for good: from now on it drives no task, never restarts
   * itself, and is disconnected again whenever it shows up as a member (a join or a fetch), so its
   * partitions move to a live member instead of staying with one that processes nothing.
   */
  private async retire(consumer: Consumer): Promise<void> {
    this.retired.add(consumer);
    // Usually disconnected already (a crash); failing to disconnect again changes nothing: it stays retired.
    await consumer
      .disconnect()
      .catch((error) => this.ctx.log.debug('retired consumer disconnect failed', { code: errorCode(error), error: errorMessage(error) }));
  }
}
