/**
 * A worker process: runs the chosen stages of the pipeline (each a StreamsApp in its own consumer
 * group), the optional receipt receiver, and the /metrics, /healthz, /readyz endpoints. Start as
 * many as you like with the same PUSH_APPLICATION_ID: partitions (and their state, through the
 * changelogs) spread over them.
 */
import { kafkaClient, type KafkaAccess } from '../common/kafka-client.ts';
import { schemaRegistryClient } from '../common/registry-client.ts';
import { assertKafkajsPatched } from '../common/kafkajs-patch.ts';
import type { Env } from '../common/config.ts';
import { readEndpoints } from '../common/endpoints.ts';
import { createLogger, type Logger } from '../common/log.ts';
import { StreamsApp } from '../topology/runtime.ts';
import { PipelineMetrics } from '../sinks/metrics/pipeline-metrics.ts';
import { startMetricsServer } from '../sinks/metrics/server.ts';
import { readAppsFile } from '../sinks/vendors/apps-config.ts';
import { CredentialExpiryWatch } from '../sinks/vendors/credential-expiry.ts';
import { ReloadableVendorRegistry } from '../sinks/vendors/registry.ts';
import { AppsReloader } from './apps-reload.ts';
import { startReceiptReceiver, type RunningReceiver } from './receiver.ts';
import type { ReceiptMetricsListener } from '../receipts/metrics.ts';
import { receiptPrometheusListener } from '../receipts/prometheus.ts';
import { openShardedPools } from '../sinks/mysql/shards.ts';
import { createPipelineTopics } from './topics-admin.ts';
import { readWorkerConfig, type WorkerConfig } from './worker-config.ts';
import { createTopicsWithLeaders, replicatedTopic, type TopicReplication } from '../topology/create-topics.ts';
import { registerSchemas } from './schemas.ts';
import { buildStage, type Stage } from './apps/index.ts';
import { topicName } from './topics.ts';
import { checkServices, ServiceCheckError } from './service-checks.ts';

export interface RunningWorker {
  readonly config: WorkerConfig;
  readonly metrics: PipelineMetrics;
  readonly metricsPort: number;
  readonly receiverPort?: number;
  /** The apps file's reloader, when the worker has one (PUSH_APPS_CONFIG). */
  readonly apps?: AppsReloader;
  /** True once every stage has its tasks assigned. */
  ready(): boolean;
  /** Settles with the error when a stage stops on an error it cannot recover from. */
  readonly failed: Promise<unknown>;
  close(): Promise<void>;
}

/** The name the receipt receiver's Kafka requests are counted under in push_kafka_requests_total. */
const RECEIVER_REQUESTS_APP = 'receipt-receiver';

/**
 * The background lane is off every push's way to its vendor and commits every few seconds: its
 * consumers wait for 64 KiB (or a third of the commit interval, at most a second) per fetch instead
 * of asking again for every few records, so an idle one asks about once a second.
 */
function backgroundFetch(commitIntervalMs: number): { fetchMinBytes: number; fetchMaxWaitMs: number } {
  return { fetchMinBytes: 64 * 1024, fetchMaxWaitMs: Math.max(10, Math.min(1000, Math.round(commitIntervalMs / 3))) };
}

export async function startWorker(env: Env = process.env, logger: Logger = createLogger({ service: 'push-worker' })): Promise<RunningWorker> {
  const config = readWorkerConfig(env);
  assertKafkajsPatched();
  const endpoints = readEndpoints(env);
  const metrics = new PipelineMetrics();
  const registry = schemaRegistryClient(endpoints);
  // One pool per uid shard (PUSH_MYSQL_SHARDS; PUSH_MYSQL_URL alone by default); shard 0 also holds the tables that are not per user.
  const shards = openShardedPools(endpoints.mysqlShards, endpoints.mysqlSecurity, { connectionLimit: 8 });
  // The apps file, validated before anything is opened; reloaded in place later (apps-reload.ts).
  const appsFile = config.appsConfigPath ? readAppsFile(config.appsConfigPath) : undefined;
  const vendors = appsFile && new ReloadableVendorRegistry(appsFile.config);
  const expiry =
    appsFile &&
    new CredentialExpiryWatch({ gauge: metrics.credentialExpiry, logger: logger.child({ service: 'push-apps' }), warnDays: config.credentialExpiryWarnDays });
  if (expiry) metrics.registry.onCollect(() => expiry.collect());
  const reloader =
    appsFile &&
    new AppsReloader({
      path: config.appsConfigPath,
      version: appsFile.version,
      registry: vendors!,
      metrics,
      logger: logger.child({ service: 'push-apps' }),
      debounceMs: config.appsReloadDebounceMs,
      ...(expiry ? { expiry } : {}),
    });
  const onHangup = () => {
    reloader?.reload('signal').catch((error: unknown) => logger.error('reloading the apps file failed', { error }));
  };

  // Building the stages validates every option, so a bad configuration fails before anything is touched.
  const stages: Stage[] = config.stages.map((name) =>
    buildStage(name, {
      env,
      endpoints,
      topicPrefix: config.topicPrefix,
      registry,
      mysql: shards.shard(0),
      mysqlShards: shards,
      vendors: vendors!,
      metrics,
      logger: logger.child({ stage: name }),
    }),
  );
  const apps: StreamsApp[] = [];
  let receiver: RunningReceiver | undefined;
  let server: Awaited<ReturnType<typeof startMetricsServer>> | undefined = undefined;
  const close = async () => {
    process.off('SIGHUP', onHangup);
    expiry?.stop();
    await reloader?.close();
    await receiver?.stop();
    for (const app of apps) await app.close();
    for (const stage of stages) await stage.close();
    await server?.close();
    await vendors?.close();
    await shards.end();
  };
  let fatal: unknown;
  let reportFailure!: (error: unknown) => void;
  const failed = new Promise<unknown>((resolve) => (reportFailure = resolve));
  try {
    // Every service as the stages' clients reach it: refused credentials, an untrusted certificate,
    // another security protocol or a missing ACL on an input topic fail here, named, not in a client's retries.
    await checkServices(config.stages.includes('clickhouse') ? ['kafka', 'registry', 'mysql', 'clickhouse'] : ['kafka', 'registry', 'mysql'], endpoints, {
      kafkaTopics: [...new Set(stages.flatMap((s) => s.topology.sourceTopics))],
    });
    await createPipelineTopics({ partitions: config.partitions, prefix: config.topicPrefix, replication: config.replication }, endpoints);
    await registerSchemas(registry, { prefix: config.topicPrefix });
    await ensureInternalTopics(
      endpoints,
      stages.flatMap((s) => s.internalTopics),
      config.partitions,
      config.replication,
    );
    const commitIntervals = { 'event-path': config.commitIntervalMs, business: config.businessCommitIntervalMs, background: config.backgroundCommitIntervalMs };
    for (const stage of stages) {
      const app = new StreamsApp({
        applicationId: `${config.applicationId}-${stage.name}`,
        topology: stage.topology,
        brokers: endpoints.kafkaBrokers,
        kafkaSecurity: endpoints.kafkaSecurity,
        processingGuarantee: stage.atLeastOnce ? 'at_least_once' : config.guarantee,
        commitIntervalMs: commitIntervals[stage.commitLane],
        ...(stage.commitLane === 'background' ? backgroundFetch(config.backgroundCommitIntervalMs) : {}),
        ...(stage.commitWhenCaughtUp ? { caughtUpCommitMs: config.caughtUpCommitMs } : {}),
        // Tasks commit transactions with several broker round trips each: working on every assigned
        // partition at once keeps the pipeline from being bound by one partition's latency.
        partitionsConsumedConcurrently: config.concurrentPartitions,
        maxTaskIdleMs: config.maxTaskIdleMs,
        dlqTopic: topicName('dlq', config.topicPrefix),
        maxRecordBytes: config.maxRecordBytes,
        restartBackoffInitialMs: config.restartBackoff.initialMs,
        restartBackoffMaxMs: config.restartBackoff.maxMs,
        restartBackoffResetMs: config.restartBackoff.resetMs,
        replication: config.replication,
        metricsListener: metrics.listener,
        logger: logger.child({ stage: stage.name }),
        onFatalError: (error) => {
          fatal = error;
          logger.error('stage stopped on an unrecoverable error', { stage: stage.name, error });
          reportFailure(error);
        },
      });
      apps.push(app);
      await app.start();
    }
    if (config.receiver) {
      // The receiver's counters join the worker's /metrics; its producer's requests count as the application `receipt-receiver`.
      const receiptMetrics: ReceiptMetricsListener = {
        ...receiptPrometheusListener(metrics.registry),
        kafkaRequest: (api) => metrics.listener.onKafkaRequest?.({ applicationId: RECEIVER_REQUESTS_APP, api }),
      };
      receiver = await startReceiptReceiver(env, receiptMetrics, logger.child({ service: 'push-receipts' }));
    }
  } catch (error) {
    // Leave nothing half-started behind: the caller may try again (e.g. while the broker restarts).
    await close().catch((closeError: unknown) => logger.warn('closing the half-started worker failed', { error: closeError }));
    throw error;
  }
  const ready = () => fatal === undefined && apps.every((a) => a.assignedTasks().length > 0);
  server = await startMetricsServer(
    metrics.registry,
    { live: () => fatal === undefined, ready },
    config.metricsPort,
    undefined,
    reloader ? { reload: () => reloader.reload('http') } : {},
  );
  // From here on the apps file may change under the worker: a change in its folder, SIGHUP, or POST /-/reload.
  reloader?.start();
  expiry?.start();
  if (reloader) process.on('SIGHUP', onHangup);
  logger.info('worker running', {
    stages: config.stages,
    metricsPort: server.port,
    receiverPort: receiver?.port,
    guarantee: config.guarantee,
    appsVersion: reloader?.version,
  });

  return {
    config,
    metrics,
    metricsPort: server.port,
    ...(receiver ? { receiverPort: receiver.port } : {}),
    ...(reloader ? { apps: reloader } : {}),
    ready,
    failed,
    close,
  };
}

/** Kafka (and network) errors another attempt may get past: a broker restarting, a leader moving. */
export function isTransientStartError(error: unknown): boolean {
  // A service that answered but cannot be used (credentials, certificates, protocol) will not change by itself.
  if (error instanceof ServiceCheckError) return false;
  if (error && typeof error === 'object' && (error as { retriable?: unknown }).retriable === true) return true;
  return /ECONNREFUSED|ECONNRESET|ETIMEDOUT|not the leader|does not host this topic-partition|Connection error|Connection timeout|Broker not connected|coordinator is (loading|not available)/i.test(
    String((error as Error)?.message ?? error),
  );
}

async function ensureInternalTopics(access: KafkaAccess, topics: readonly string[], partitions: number, replication: TopicReplication): Promise<void> {
  if (topics.length === 0) return;
  const admin = kafkaClient(access, { clientId: 'push-worker' }).admin();
  await admin.connect();
  try {
    const existing = new Set(await admin.listTopics());
    const missing = topics.filter((t) => !existing.has(t));
    await createTopicsWithLeaders(
      admin,
      missing.map((topic) => ({ topic, numPartitions: partitions, ...replicatedTopic({}, replication) })),
    );
  } finally {
    await admin.disconnect();
  }
}
