import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import { ROOT, ensureDir, stackPath } from './paths.ts';
import { delay, isAlive, logFile, portOpen, readPid, runLogged, startDetached, stopByPidFile, waitFor } from './process.ts';
import { stackPort, type ServiceStatus, type StackService } from './service.ts';

/**
 * A real single-node KRaft broker (combined broker + controller) assembled from Maven Central jars
 * (stack/kafka/pom.xml). Storage is formatted once under .stack/<name>/data and kept across restarts.
 */
const KAFKA_VERSION = '3.9.1';
const NAME = 'kafka';

/** One broker: its name (PID file, log, and state under .stack/<name>) and its ports. */
export interface KafkaInstance {
  readonly name: string;
  readonly port: number;
  readonly controllerPort: number;
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

function writeConfig({ name, port, controllerPort }: KafkaInstance): { server: string; log4j: string } {
  const dir = ensureDir(stackPath(name, 'config'));
  const server = join(dir, 'server.properties');
  writeFileSync(
    server,
    [
      'process.roles=broker,controller',
      'node.id=1',
      `controller.quorum.voters=1@127.0.0.1:${controllerPort}`,
      `listeners=PLAINTEXT://127.0.0.1:${port},CONTROLLER://127.0.0.1:${controllerPort}`,
      `advertised.listeners=PLAINTEXT://127.0.0.1:${port}`,
      'controller.listener.names=CONTROLLER',
      'inter.broker.listener.name=PLAINTEXT',
      'listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT',
      `log.dirs=${dataDir(name)}`,
      'num.partitions=1',
      'default.replication.factor=1',
      'min.insync.replicas=1',
      'offsets.topic.replication.factor=1',
      'offsets.topic.num.partitions=4',
      'transaction.state.log.replication.factor=1',
      'transaction.state.log.min.isr=1',
      'transaction.state.log.num.partitions=4',
      'group.initial.rebalance.delay.ms=0',
      'auto.create.topics.enable=false',
      'num.network.threads=2',
      'num.io.threads=4',
      'log.retention.hours=48',
      'log.segment.bytes=104857600',
      'log.cleaner.dedupe.buffer.size=33554432',
      'transaction.max.timeout.ms=900000',
      '',
    ].join('\n'),
  );
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

function clusterId(name: string): string {
  const file = stackPath(name, 'cluster-id');
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
        runLogged(name, 'java', ['-cp', classpath, log4jFlag, 'kafka.tools.StorageTool', 'format', '-t', clusterId(name), '-c', server]);
      }
      const heap = process.env.PUSH_STACK_KAFKA_HEAP || '1g';
      const pid = startDetached(name, 'java', [
        `-Xms256m`,
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
 * Restarts a broker this stack started: the signal to the PID `up` recorded (SIGKILL after 30 s),
 * then `up()` again. Refuses a broker it did not start (no PID file).
 */
export async function restartKafka(instance: KafkaInstance = stackKafka(), signal: 'SIGTERM' | 'SIGKILL' = 'SIGTERM'): Promise<{ downMs: number }> {
  const pid = readPid(instance.name);
  if (pid === undefined) throw new Error(`the Kafka broker was not started by this stack (.stack/run/${instance.name}.pid); not restarting it`);
  const started = Date.now();
  process.kill(pid, signal);
  const deadline = Date.now() + 30_000;
  while (isAlive(pid) && Date.now() < deadline) await delay(200);
  if (isAlive(pid)) process.kill(pid, 'SIGKILL');
  while (isAlive(pid)) await delay(100);
  await kafkaService(instance).up();
  return { downMs: Date.now() - started };
}
