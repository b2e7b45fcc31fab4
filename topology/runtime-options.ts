import { ConfigError } from '../common/errors.ts';
import { checkRange } from '../common/config.ts';
import type { KafkaSecurity } from '../common/kafka-client.ts';
import type { Logger } from '../common/log.ts';
import type { Topology } from './builder.ts';
import type { TopicReplication } from './create-topics.ts';
import type { MetricsListener } from './metrics.ts';
import type { ProcessingErrorPolicy } from './task.ts';
import { DEFAULT_MAX_RECORD_BYTES } from './record-size.ts';

export type ProcessingGuarantee = 'at_least_once' | 'exactly_once';

/** Options of a streams application instance. Instances with the same applicationId share the work. */
export interface StreamsAppOptions {
  /** Consumer group id, prefix of changelog topics and transactional ids. Kebab-case recommended. */
  applicationId: string;
  topology: Topology;
  /** host:port list. */
  brokers: string[];
  /** TLS and SASL of every client of the instance (common/kafka-client.ts). Default plain text. */
  kafkaSecurity?: KafkaSecurity;
  /** Default `exactly_once`. */
  processingGuarantee?: ProcessingGuarantee;
  /** Commit interval in ms. Default 100 under exactly_once, 5000 under at_least_once. Range 10–600 000. */
  commitIntervalMs?: number;
  /**
   * A task that has caught up (no fetched record waiting) and holds output records commits this
   * long after its previous commit instead of waiting out the whole interval, so a lone record's
   * outputs reach their readers in about one transaction's time. Under a backlog the interval
   * applies and batches records into few transactions. For applications whose outputs are on a
   * latency path (the decisions feeding fan-out). Default: the commit interval (off).
   * Range 1–commitIntervalMs.
   */
  caughtUpCommitMs?: number;
  /** DLQ topic for undecodable records (and processing errors under policy `dlq`); the application's wiring names it. */
  dlqTopic: string;
  /** What a non-retriable processing error does: `fail` stops the app, `dlq` dead-letters the record. Default `dlq`. */
  processingErrorPolicy?: ProcessingErrorPolicy;
  /** Where a new application starts reading. Default `earliest`. */
  autoOffsetReset?: 'earliest' | 'latest';
  /** Consumer session timeout in ms (how long a dead instance keeps its tasks). Default 10 000. */
  sessionTimeoutMs?: number;
  /**
   * Longest time newly assigned tasks may take to fence, read offsets and restore, in ms. Past it
   * the instance restarts its consumer and rejoins, so a task stuck behind a broker that was
   * restarting (coordinator loading, leaders moving) never holds its partitions without
   * processing them. Default 120 000.
   */
  taskInitTimeoutMs?: number;
  /**
   * Least data a fetch waits for (Kafka's fetch.min.bytes), and how long the broker may hold a fetch
   * short of it or empty (fetch.max.wait.ms). With 1 byte a record ends the fetch at once, so a
   * consumer on a latency path asks as often as records come; an application off that path (receipts,
   * the ClickHouse sink) gathers larger fetches for at most the wait, in fewer requests.
   * Defaults 1 and 500. Ranges 1–10,485,760 and 10–30,000.
   */
  fetchMinBytes?: number;
  fetchMaxWaitMs?: number;
  /** Input partitions processed at once (each in its own task). Default 4. */
  partitionsConsumedConcurrently?: number;
  /**
   * Fetched records that may wait in one task's input queue before the fetch loop waits for that
   * task (Kafka Streams' buffered.records.per.partition). Default 1000.
   */
  maxBufferedRecords?: number;
  /**
   * How long a task with several input partitions waits, in ms, for one of them to catch up before
   * it processes a buffered record stamped later than what that partition may still hold (Kafka
   * Streams' max.task.idle.ms; topology/task-input.ts). Records are taken in timestamp order across
   * the task's partitions either way; 0 never waits. Default 100. Range 0–60 000.
   */
  maxTaskIdleMs?: number;
  /**
   * Largest output record, in bytes: key + value + headers (topology/record-size.ts). A larger
   * output is a production error: its input record goes to the DLQ with `RECORD_TOO_LARGE` and the
   * task goes on, instead of the broker refusing the whole transaction. Lowered per topic to the
   * topic's own `max.message.bytes` less batch overhead where that is smaller. Default 1,048,460
   * (the broker's default `message.max.bytes`, 1,048,588, less 128 bytes of batch overhead).
   * Range 1,024–104,857,600.
   */
  maxRecordBytes?: number;
  /**
   * Delay before the first of a run of restarts (a failed commit, a fenced producer, a consumer
   * crash), in ms; each consecutive restart doubles it, up to restartBackoffMaxMs, with jitter
   * (each delay is uniform in [½, 1] × its step). Default 200. Range 10–60 000.
   */
  restartBackoffInitialMs?: number;
  /** Longest delay between two restarts, in ms. Default 30 000. Range restartBackoffInitialMs–600 000. */
  restartBackoffMaxMs?: number;
  /**
   * Running this long (ms) after a restart without another one ends the run: the next restart
   * waits restartBackoffInitialMs again. Default 60 000. Range 1 000–3 600 000.
   */
  restartBackoffResetMs?: number;
  /** Replication of the changelog and DLQ topics the app creates when missing. Default the broker's defaults. */
  replication?: TopicReplication;
  /** kafkajs client id. Default `<applicationId>`. */
  clientId?: string;
  metricsListener?: MetricsListener;
  logger?: Logger;
  /** Called once when the app stops because of an error it cannot recover from (after cleanup). */
  onFatalError?: (error: unknown) => void;
}

export type ResolvedStreamsAppOptions = Required<
  Omit<StreamsAppOptions, 'metricsListener' | 'logger' | 'onFatalError' | 'clientId' | 'replication' | 'kafkaSecurity'>
> &
  StreamsAppOptions;

/** The options with their defaults, validated (a bad value throws a ConfigError naming it). */
export function resolveStreamsAppOptions(options: StreamsAppOptions): ResolvedStreamsAppOptions {
  const eos = (options.processingGuarantee ?? 'exactly_once') === 'exactly_once';
  if (!/^[a-zA-Z0-9._-]+$/.test(options.applicationId)) throw new ConfigError('applicationId', 'must be a valid Kafka topic and group name');
  if (options.brokers.length === 0) throw new ConfigError('brokers', 'at least one broker is required');
  const commitIntervalMs = checkRange('commitIntervalMs', options.commitIntervalMs ?? (eos ? 100 : 5000), { min: 10, max: 600_000 });
  const initialMs = checkRange('restartBackoffInitialMs', options.restartBackoffInitialMs ?? 200, { min: 10, max: 60_000 });
  return {
    processingGuarantee: 'exactly_once',
    processingErrorPolicy: 'dlq',
    autoOffsetReset: 'earliest',
    sessionTimeoutMs: 10_000,
    taskInitTimeoutMs: 120_000,
    partitionsConsumedConcurrently: 4,
    maxBufferedRecords: 1000,
    ...options,
    commitIntervalMs,
    caughtUpCommitMs: checkRange('caughtUpCommitMs', options.caughtUpCommitMs ?? commitIntervalMs, { min: 1, max: commitIntervalMs }),
    ...(options.maxBufferedRecords === undefined
      ? {}
      : { maxBufferedRecords: checkRange('maxBufferedRecords', options.maxBufferedRecords, { min: 1, max: 1_000_000 }) }),
    fetchMinBytes: checkRange('fetchMinBytes', options.fetchMinBytes ?? 1, { min: 1, max: 10 * 1024 * 1024 }),
    maxTaskIdleMs: checkRange('maxTaskIdleMs', options.maxTaskIdleMs ?? 100, { min: 0, max: 60_000 }),
    fetchMaxWaitMs: checkRange('fetchMaxWaitMs', options.fetchMaxWaitMs ?? 500, { min: 10, max: 30_000 }),
    maxRecordBytes: checkRange('maxRecordBytes', options.maxRecordBytes ?? DEFAULT_MAX_RECORD_BYTES, { min: 1024, max: 100 * 1024 * 1024 }),
    restartBackoffInitialMs: initialMs,
    restartBackoffMaxMs: checkRange('restartBackoffMaxMs', options.restartBackoffMaxMs ?? Math.max(initialMs, 30_000), { min: initialMs, max: 600_000 }),
    restartBackoffResetMs: checkRange('restartBackoffResetMs', options.restartBackoffResetMs ?? 60_000, { min: 1000, max: 3_600_000 }),
  };
}
