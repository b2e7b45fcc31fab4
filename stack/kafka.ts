import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { dirname, join } from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import { ROOT, ensureDir, stackPath } from './paths.ts';
import { delay, isAlive, logFile, portOpen, readPid, runLogged, startDetached, stopByPidFile, waitFor } from './process.ts';
import { stackPort, type ServiceStatus, type StackService } from './service.ts';

/**
 * A real KRaft broker (combined broker + controller) assembled from Maven Central jars
 * (stack/kafka/pom.xml): the stack's single node, or one node of the 3-broker cluster
 * (stack/kafka-cluster.ts). Storage is formatted once under .stack/<name>/data and kept across restarts.
 */
const KAFKA_VERSION = '3.9.1';
const NAME = 'kafka';

/** One broker: its name (PID file, log, and state under .stack/<name>) and its ports. */
export interface KafkaInstance {
  readonly name: string;
  readonly port: number;
  readonly controllerPort: number;
  /** A node of a cluster (stack/kafka-cluster.ts); absent for the stack's single node. */
  readonly cluster?: ClusterNode;
}

/** How one node of a multi-node cluster differs from the single node. */
export interface ClusterNode {
  readonly nodeId: number;
  /** Every controller, `id@host:port,...` (controller.quorum.voters). */
  readonly voters: string;
  /** Replication of the broker's defaults and internal topics (offsets, transaction state). */
  readonly replicationFactor: number;
  readonly minInsyncReplicas: number;
  /** Where the cluster id all nodes are formatted with is kept. */
  readonly clusterIdFile: string;
  /** -Xmx of this node. */
  readonly heap: string;
}

/** The stack's broker. Tests that must restart a broker start another instance beside it. */
export function stackKafka(): KafkaInstance {
  return { name: NAME, port: stackPort('kafka', 'KAFKA'), controllerPort: stackPort('kafkaController', 'KAFKA_CONTROLLER') };
}

const libDir = () => stackPath('kafka', 'lib');
const dataDir = (name: string) => stackPath(name, 'data');

function ensureJars(): void {
  const marker = join(libDir(), `.resolved-${KAFKA_VERSION}`);
  if (existsSync(marker)) return;
  console.log(`[stack] resolving Kafka ${KAFKA_VERSION} jars from Maven Central ...`);
  runLogged(NAME, 'mvn', [
    '-B',
    '-q',
    '-f',
    join(ROOT, 'stack', 'kafka', 'pom.xml'),
    'dependency:copy-dependencies',
    '-DincludeScope=runtime',
    `-DoutputDirectory=${ensureDir(libDir())}`,
  ]);
  if (!readdirSync(libDir()).some((f) => f.startsWith(`kafka_2.13-${KAFKA_VERSION}`))) throw new Error('Kafka jars missing after Maven resolution');
  writeFileSync(marker, new Date().toISOString());
}

/** The node's server.properties lines (exported for the stack test that checks the cluster's). */
export function serverProperties({ name, port, controllerPort, cluster }: KafkaInstance): string[] {
  const rf = cluster?.replicationFactor ?? 1;
  const isr = cluster?.minInsyncReplicas ?? 1;
  return [
    'process.roles=broker,controller',
    `node.id=${cluster?.nodeId ?? 1}`,
    `controller.quorum.voters=${cluster?.voters ?? `1@127.0.0.1:${controllerPort}`}`,
    `listeners=PLAINTEXT://127.0.0.1:${port},CONTROLLER://127.0.0.1:${controllerPort}`,
    `advertised.listeners=PLAINTEXT://127.0.0.1:${port}`,
    'controller.listener.names=CONTROLLER',
    'inter.broker.listener.name=PLAINTEXT',
    'listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT',
    `log.dirs=${dataDir(name)}`,
    'num.partitions=1',
    `default.replication.factor=${rf}`,
    `min.insync.replicas=${isr}`,
    `offsets.topic.replication.factor=${rf}`,
    'offsets.topic.num.partitions=4',
    `transaction.state.log.replication.factor=${rf}`,
    `transaction.state.log.min.isr=${isr}`,
    'transaction.state.log.num.partitions=4',
    'group.initial.rebalance.delay.ms=0',
    'auto.create.topics.enable=false',
    'num.network.threads=2',
    'num.io.threads=4',
    'log.retention.hours=48',
    'log.segment.bytes=104857600',
    'log.cleaner.dedupe.buffer.size=33554432',
    'transaction.max.timeout.ms=900000',
    // A cluster never elects an out-of-sync replica (Kafka's default, stated: it would lose
    // acknowledged records), and moves leadership back to each partition's preferred replica
    // within seconds after a broker returns or a reassignment reorders the replicas.
    ...(cluster
      ? ['unclean.leader.election.enable=false', 'auto.leader.rebalance.enable=true', 'leader.imbalance.check.interval.seconds=10', 'num.replica.fetchers=1']
      : []),
    '',
  ];
}

function writeConfig(instance: KafkaInstance): { server: string; log4j: string } {
  const dir = ensureDir(stackPath(instance.name, 'config'));
  const server = join(dir, 'server.properties');
  writeFileSync(server, serverProperties(instance).join('\n'));
  const log4j = join(dir, 'log4j.properties');
  writeFileSync(
    log4j,
    [
      'log4j.rootLogger=WARN, stdout',
      'log4j.appender.stdout=org.apache.log4j.ConsoleAppender',
      'log4j.appender.stdout.layout=org.apache.log4j.PatternLayout',
      'log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n',
      'log4j.logger.kafka.server.KafkaRaftServer=INFO',
      '',
    ].join('\n'),
  );
  return { server, log4j };
}

function clusterId(file: string): string {
  ensureDir(dirname(file));
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  let id: string;
  do id = randomBytes(16).toString('base64url');
  while (id.startsWith('-'));
  writeFileSync(file, id);
  return id;
}

export async function kafkaVersionAt(port: number): Promise<string | undefined> {
  const kafka = new Kafka({ brokers: [`127.0.0.1:${port}`], logLevel: logLevel.NOTHING, retry: { retries: 0 }, connectionTimeout: 1000 });
  const admin = kafka.admin();
  try {
    await admin.connect();
    const cluster = await admin.describeCluster();
    return cluster.brokers.length > 0 ? KAFKA_VERSION : undefined;
  } finally {
    await admin.disconnect().catch(() => undefined); // best-effort: the probe's answer is already decided
  }
}

export function kafkaService(instance: KafkaInstance = stackKafka()): StackService {
  const { name, port } = instance;
  return {
    name,
    port,
    async up() {
      if (await portOpen(port)) {
        await waitFor(name, async () => (await kafkaVersionAt(port)) !== undefined, { timeoutMs: 60_000 });
        return 'reused';
      }
      ensureJars();
      const { server, log4j } = writeConfig(instance);
      const classpath = join(libDir(), '*');
      const log4jFlag = `-Dlog4j.configuration=file:${log4j}`;
      if (!existsSync(join(dataDir(name), 'meta.properties'))) {
        console.log(`[stack] formatting ${name} storage ...`);
        ensureDir(dataDir(name));
        const idFile = instance.cluster?.clusterIdFile ?? stackPath(name, 'cluster-id');
        runLogged(name, 'java', ['-cp', classpath, log4jFlag, 'kafka.tools.StorageTool', 'format', '-t', clusterId(idFile), '-c', server]);
      }
      const heap = instance.cluster?.heap ?? (process.env.PUSH_STACK_KAFKA_HEAP || '1g');
      const pid = startDetached(name, 'java', [
        instance.cluster ? '-Xms128m' : '-Xms256m',
        `-Xmx${heap}`,
        '-XX:+UseG1GC',
        '-XX:MaxGCPauseMillis=20',
        '-Djava.awt.headless=true',
        log4jFlag,
        `-Dkafka.logs.dir=${ensureDir(stackPath('logs'))}`,
        '-cp',
        classpath,
        'kafka.Kafka',
        server,
      ]);
      console.log(`[stack] ${name} starting (pid ${pid}, port ${port}, log ${logFile(name)})`);
      await waitFor(name, async () => (await kafkaVersionAt(port)) !== undefined, { timeoutMs: 120_000, pid });
      return 'started';
    },
    down: () => stopByPidFile(name, 30_000),
    async status(): Promise<ServiceStatus> {
      const version = await kafkaVersionAt(port).catch(() => undefined); // not answering: reported as not healthy
      return { name, port, healthy: version !== undefined, version, pid: readPid(name), detail: `data ${dataDir(name)}` };
    },
  };
}

/**
 * Stops a broker this stack started with `signal` (SIGKILL after 30 s) and waits until its process
 * is gone. Refuses a broker it did not start (no PID file).
 */
export async function stopKafka(instance: KafkaInstance, signal: 'SIGTERM' | 'SIGKILL'): Promise<void> {
  const pid = readPid(instance.name);
  if (pid === undefined) throw new Error(`the Kafka broker was not started by this stack (.stack/run/${instance.name}.pid); not stopping it`);
  process.kill(pid, signal);
  const deadline = Date.now() + 30_000;
  while (isAlive(pid) && Date.now() < deadline) await delay(200);
  if (isAlive(pid)) process.kill(pid, 'SIGKILL');
  while (isAlive(pid)) await delay(100);
}

/**
 * Restarts a broker this stack started: stopKafka, `downForMs` of nothing, then `up()` again.
 */
export async function restartKafka(
  instance: KafkaInstance = stackKafka(),
  signal: 'SIGTERM' | 'SIGKILL' = 'SIGTERM',
  downForMs = 0,
): Promise<{ downMs: number }> {
  const started = Date.now();
  await stopKafka(instance, signal);
  if (downForMs > 0) await delay(downForMs);
  await kafkaService(instance).up();
  return { downMs: Date.now() - started };
}
