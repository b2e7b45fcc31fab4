import type { Admin, Kafka, Producer, RequestEvent } from 'kafkajs';
import { kafkaClient } from '../common/kafka-client.ts';
import { ConfigError, PushError, errorCode, errorMessage } from '../common/errors.ts';
import { createLogger, type Logger } from '../common/log.ts';
import { withTimeout } from '../common/retry.ts';
import { changelogTopicName, ensureTopics } from './changelog.ts';
import type { TaskId } from './assignor.ts';
import { safeMetrics } from './metrics.ts';
import { ConsumerSupervisor } from './consumer-supervisor.ts';
import { TaskManager } from './task-manager.ts';
import { DLQ_MAX_MESSAGE_BYTES, readTopicRules, type TopicRules } from './topic-rules.ts';
import { cacheCoordinatorLookups } from './coordinator-cache.ts';
import { resolveStreamsAppOptions, type ResolvedStreamsAppOptions, type StreamsAppOptions } from './runtime-options.ts';
import { KeyPartitioner } from './partitioner.ts';

export type { ProcessingGuarantee, StreamsAppOptions } from './runtime-options.ts';

/**
 * Runs a topology on Kafka: one task per input partition of each sub-topology, stores restored from
 * their changelogs before processing, exactly-once through one transactional producer per task.
 *
 * Composed of two parts: the TaskManager (task-manager.ts) creates, runs, commits and closes the
 * tasks, rebalancing included; the ConsumerSupervisor (consumer-supervisor.ts) owns the group
 * consumer, its crashes and the restarts with backoff. This class starts and stops them, and
 * stops everything on a fatal error.
 */
export class StreamsApp {
  private readonly options: ResolvedStreamsAppOptions;
  private readonly kafka: Kafka;
  private readonly log: Logger;
  private readonly metrics: ReturnType<typeof safeMetrics>;
  private admin?: Admin;
  private sharedProducer?: Producer;
  private readonly partitionsBySubtopology = new Map<number, number>();
  private tick?: NodeJS.Timeout;
  private closing = false;
  private fatal?: unknown;
  private readonly tasks: TaskManager;
  private readonly supervisor: ConsumerSupervisor;
  /** Record limits and key rules of the sink nodes' topics and the DLQ, read at start and at each restart. */
  private topicRules = new Map<string, TopicRules>();

  constructor(options: StreamsAppOptions) {
    this.options = resolveStreamsAppOptions(options);
    this.log = (options.logger ?? createLogger()).child({ app: options.applicationId });
    this.metrics = safeMetrics(options.metricsListener, this.log);
    cacheCoordinatorLookups();
    this.kafka = kafkaClient(
      { kafkaBrokers: options.brokers, ...(options.kafkaSecurity ? { kafkaSecurity: options.kafkaSecurity } : {}) },
      { clientId: options.clientId ?? options.applicationId, retry: { initialRetryTime: 50, retries: 10, maxRetryTime: 3000 } },
    );
    const common = { options: this.options, kafka: this.kafka, log: this.log, metrics: this.metrics, countRequest: this.countRequest };
    const closing = () => this.closing;
    const failed = () => this.fatal !== undefined;
    this.tasks = new TaskManager({
      ...common,
      admin: () => this.admin!,
      sharedProducer: () => this.sharedProducer!,
      consumer: () => this.supervisor.current(),
      generation: () => this.supervisor.generation,
      topicRules: (topic) => this.topicRules.get(topic) ?? { maxRecordBytes: this.options.maxRecordBytes, keyRequired: false },
      closing,
      restarting: () => this.supervisor.restarting,
      failed,
      requestRestart: (reason, generations) => this.supervisor.requestRestart(reason, generations),
      fail: (error) => void this.failFatally(error),
    });
    this.supervisor = new ConsumerSupervisor({
      ...common,
      partitionsOf: (s) => this.partitionsBySubtopology.get(s)!,
      closing,
      failed,
      tasks: this.tasks,
      beforeRejoin: () => this.readTopicRules(),
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
    await ensureTopics(
      this.admin,
      [
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
      ],
      this.options.replication,
    );
    await this.readTopicRules();
    if (this.options.processingGuarantee === 'at_least_once') {
      this.sharedProducer = this.kafka.producer({ idempotent: true, maxInFlightRequests: 1, createPartitioner: KeyPartitioner });
      this.sharedProducer.on(this.sharedProducer.events.REQUEST, this.countRequest);
      await this.sharedProducer.connect();
    }
    await this.supervisor.start();
    this.armBackstop();
    this.log.info('streams app started', { guarantee: this.options.processingGuarantee, subtopologies: topology.subtopologies.length });
  }

  /**
   * The tasks arm their own timer for what falls due (TaskManager.tick); this slow beat is a
   * backstop for work that became due without a turn of its task. It beats on the wall clock's
   * multiples of its period, so the applications of one process share its wake-ups.
   */
  private armBackstop(): void {
    const periodMs = Math.max(1000, this.options.commitIntervalMs);
    this.tick = setTimeout(
      () => {
        this.tasks.tick();
        if (!this.closing && !this.fatal) this.armBackstop();
      },
      periodMs - (Date.now() % periodMs),
    );
  }

  /**
   * Graceful shutdown: stops taking new batches, finishes the in-flight ones, commits every task,
   * then leaves the group (so the partitions move at once) and closes processors and producers.
   */
  async close(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    clearTimeout(this.tick);
    this.tasks.stopTimer();
    await this.supervisor.quiesce();
    await this.tasks.commitAll();
    await this.supervisor.disconnect();
    await this.tasks.closeAll();
    await this.disconnectClients();
    this.log.info('streams app closed');
  }

  /** Counts each request a client sends, by API (the bench reads them per message). */
  private readonly countRequest = ({ payload }: RequestEvent): void =>
    this.metrics.onKafkaRequest({ applicationId: this.options.applicationId, api: payload.apiName });

  /** Task ids currently owned by this instance. */
  assignedTasks(): TaskId[] {
    return this.tasks.assignedTasks();
  }

  /** Reads the limits of the sink nodes' topics and the DLQ; a failure or a broker slower than 5 s keeps the last ones (a restart must not wait on it). */
  private async readTopicRules(): Promise<void> {
    const reading = readTopicRules(
      this.admin!,
      this.options.topology.subtopologies.flatMap((s) => s.sinkTopics),
      this.options.dlqTopic,
      this.options.maxRecordBytes,
      this.log,
    );
    const rules = await withTimeout(reading, 5000, () => new PushError('TOPIC_RULES_TIMEOUT', 'topic configs not read in 5 s')).catch((error) => {
      this.log.warn('topic configs not read; keeping the last ones', { code: errorCode(error), error: errorMessage(error) });
      return new Map<string, TopicRules>();
    });
    for (const [topic, r] of rules) this.topicRules.set(topic, r);
  }

  private async failFatally(error: unknown): Promise<void> {
    if (this.fatal) return;
    this.fatal = error;
    this.log.error('processing failed; stopping (processingErrorPolicy=fail)', { code: errorCode(error), error: errorMessage(error) });
    clearTimeout(this.tick);
    this.tasks.stopTimer();
    await this.supervisor.disconnect();
    await this.tasks.closeAll();
    await this.disconnectClients();
    this.closing = true;
    this.options.onFatalError?.(error instanceof PushError ? error : new PushError('FATAL', errorMessage(error), { cause: error }));
  }

  /** The shared producer and the admin client, last; a failure to disconnect is logged (the process is leaving them anyway). */
  private async disconnectClients(): Promise<void> {
    const warn = (client: string) => (error: unknown) => this.log.warn(`${client} disconnect failed`, { code: errorCode(error), error: errorMessage(error) });
    await this.sharedProducer?.disconnect().catch(warn('producer'));
    await this.admin?.disconnect().catch(warn('admin'));
  }
}
