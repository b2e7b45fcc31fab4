import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { dirname, join } from 'node:path';
import { kafkaClient, type KafkaSecurity } from '../common/kafka-client.ts';
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
  /** Clients only over TLS with SASL or a client certificate, and ACLs (the secured stack, stack/secure.ts); absent: plain text. */
  readonly secured?: SecuredBroker;
}

/** A user of a secured broker and its password. */
export interface BrokerUser {
  readonly name: string;
  readonly password: string;
}

/**
 * How a secured broker differs: its client listener is SASL_SSL (SCRAM-SHA-256, SCRAM-SHA-512,
 * PLAIN and OAUTHBEARER with Kafka's unsecured JWT validator), a second one is SSL requiring a client
 * certificate whose common name is the principal, the controller listener is SASL_SSL (PLAIN), and
 * the StandardAuthorizer refuses every principal without ACLs but the super user.
 */
export interface SecuredBroker {
  /** The mutual-TLS listener. */
  readonly mtlsPort: number;
  /** PEM file of the broker's private key followed by its certificate. */
  readonly keystore: string;
  /** PEM file of the authority that signs the broker's and the clients' certificates. */
  readonly truststore: string;
  /** The super user: inter-broker and controller traffic, and whoever sets ACLs up. */
  readonly admin: BrokerUser;
  /** Every other user, with SCRAM credentials (both hashes) from the storage format on, and as a PLAIN user. */
  readonly users: readonly BrokerUser[];
}

/** Security properties of a secured broker's server.properties. */
function securedProperties(port: number, controllerPort: number, s: SecuredBroker): string[] {
  const jaas = (module: string, options: string) => `org.apache.kafka.common.security.${module} required${options ? ` ${options}` : ''};`;
  const admin = `username="${s.admin.name}" password="${s.admin.password}"`;
  return [
    `listeners=SASL_SSL://127.0.0.1:${port},MTLS://127.0.0.1:${s.mtlsPort},CONTROLLER://127.0.0.1:${controllerPort}`,
    `advertised.listeners=SASL_SSL://127.0.0.1:${port},MTLS://127.0.0.1:${s.mtlsPort}`,
    'controller.listener.names=CONTROLLER',
    'inter.broker.listener.name=SASL_SSL',
    'listener.security.protocol.map=CONTROLLER:SASL_SSL,SASL_SSL:SASL_SSL,MTLS:SSL',
    'sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512',
    'sasl.mechanism.controller.protocol=PLAIN',
    'listener.name.controller.sasl.enabled.mechanisms=PLAIN',
    `listener.name.controller.plain.sasl.jaas.config=${jaas('plain.PlainLoginModule', `${admin} user_${s.admin.name}="${s.admin.password}"`)}`,
    'listener.name.sasl_ssl.sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512,PLAIN,OAUTHBEARER',
    `listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=${jaas('scram.ScramLoginModule', admin)}`,
    `listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config=${jaas('scram.ScramLoginModule', '')}`,
    `listener.name.sasl_ssl.plain.sasl.jaas.config=${jaas('plain.PlainLoginModule', s.users.map((u) => `user_${u.name}="${u.password}"`).join(' '))}`,
    // Unsigned tokens, their `sub` the principal: a stand-in for an identity provider (docs/operations.md).
    `listener.name.sasl_ssl.oauthbearer.sasl.jaas.config=${jaas('oauthbearer.OAuthBearerLoginModule', '')}`,
    'listener.name.mtls.ssl.client.auth=required',
    'listener.name.mtls.ssl.principal.mapping.rules=RULE:^CN=([^,]+),.*$/$1/,DEFAULT',
    'ssl.keystore.type=PEM',
    `ssl.keystore.location=${s.keystore}`,
    'ssl.truststore.type=PEM',
    `ssl.truststore.location=${s.truststore}`,
    'authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer',
    `super.users=User:${s.admin.name}`,
    'allow.everyone.if.no.acl.found=false',
  ];
}

/** The storage format's arguments that create the SCRAM users of a secured broker. */
function scramUsers(s: SecuredBroker): string[] {
  return [s.admin, ...s.users].flatMap((u) =>
    ['SCRAM-SHA-256', 'SCRAM-SHA-512'].flatMap((mechanism) => ['--add-scram', `${mechanism}=[name=${u.name},password=${u.password}]`]),
  );
}

/** How the stack itself reaches a broker: plain text, or as a secured broker's super user. */
export function brokerAdminSecurity(secured: SecuredBroker | undefined): KafkaSecurity | undefined {
  if (!secured) return undefined;
  return {
    protocol: 'SASL_SSL',
    tls: { ca: readFileSync(secured.truststore) },
    sasl: { mechanism: 'SCRAM-SHA-512', username: secured.admin.name, password: secured.admin.password },
    connectTimeoutMs: 5000,
  };
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
export function serverProperties({ name, port, controllerPort, cluster, secured }: KafkaInstance): string[] {
  const rf = cluster?.replicationFactor ?? 1;
  const isr = cluster?.minInsyncReplicas ?? 1;
  return [
    'process.roles=broker,controller',
    `node.id=${cluster?.nodeId ?? 1}`,
    `controller.quorum.voters=${cluster?.voters ?? `1@127.0.0.1:${controllerPort}`}`,
    ...(secured
      ? securedProperties(port, controllerPort, secured)
      : [
          `listeners=PLAINTEXT://127.0.0.1:${port},CONTROLLER://127.0.0.1:${controllerPort}`,
          `advertised.listeners=PLAINTEXT://127.0.0.1:${port}`,
          'controller.listener.names=CONTROLLER',
          'inter.broker.listener.name=PLAINTEXT',
          'listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT',
        ]),
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
  // A secured broker's holds its users' passwords: readable by this user only.
  writeFileSync(server, serverProperties(instance).join('\n'), { mode: 0o600 });
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

export async function kafkaVersionAt(port: number, secured?: SecuredBroker): Promise<string | undefined> {
  const security = brokerAdminSecurity(secured);
  const kafka = kafkaClient(
    { kafkaBrokers: [`127.0.0.1:${port}`], ...(security ? { kafkaSecurity: security } : {}) },
    { retry: { retries: 0 }, connectionTimeout: 1000 },
  );
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
  const { name, port, secured } = instance;
  const answers = async () => (await kafkaVersionAt(port, secured)) !== undefined;
  return {
    name,
    port,
    async up() {
      if (await portOpen(port)) {
        await waitFor(name, answers, { timeoutMs: 60_000 });
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
        // The SCRAM users' passwords are arguments: a failure names the command, not them.
        runLogged(
          name,
          'java',
          ['-cp', classpath, log4jFlag, 'kafka.tools.StorageTool', 'format', '-t', clusterId(idFile), '-c', server, ...(secured ? scramUsers(secured) : [])],
          {
            hideArgs: secured !== undefined,
          },
        );
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
      await waitFor(name, answers, { timeoutMs: 120_000, pid });
      return 'started';
    },
    down: () => stopByPidFile(name, 30_000),
    async status(): Promise<ServiceStatus> {
      const version = await kafkaVersionAt(port, secured).catch(() => undefined); // not answering: reported as not healthy
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
