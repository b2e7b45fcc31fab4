import { readInt, readString } from '../common/config.ts';
import { kafkaClient } from '../common/kafka-client.ts';
import { stackPath } from './paths.ts';
import { kafkaService, stopKafka, type KafkaInstance } from './kafka.ts';
import { readPid, waitFor } from './process.ts';
import type { ServiceStatus, StackService } from './service.ts';

/**
 * The local 3-broker KRaft cluster (`pushctl stack up --brokers 3`, docs/operations.md "Cluster
 * mode"): nodes kafka-1, kafka-2 and kafka-3, each a combined broker + controller (so any one may
 * be lost: the other two keep the controller quorum and every partition's ISR of 2), with its own
 * ports, PID file, log and data under .stack/kafka-<n>/. It runs beside the stack's single broker,
 * sharing only the Kafka jars; the registry, MariaDB and ClickHouse are the stack's.
 *
 * Ports: PUSH_STACK_KAFKA_CLUSTER_PORT (default 19192) and the next two for the brokers
 * (19192–19194), the three after them for the controllers (19195–19197).
 * PUSH_STACK_KAFKA_CLUSTER_HEAP: -Xmx of each node (default 384m: three JVMs share the machine).
 */
export const CLUSTER_SIZE = 3;
/** The replication the cluster's internal topics get and the pipeline's topics should use there. */
export const CLUSTER_REPLICATION = { factor: 3, minInsyncReplicas: 2 } as const;

export function clusterNodes(env: NodeJS.ProcessEnv = process.env): KafkaInstance[] {
  const base = readInt(env, 'PUSH_STACK_KAFKA_CLUSTER_PORT', 19192, { min: 1, max: 65535 - 2 * CLUSTER_SIZE });
  const heap = readString(env, 'PUSH_STACK_KAFKA_CLUSTER_HEAP', '384m');
  const ids = Array.from({ length: CLUSTER_SIZE }, (_, i) => i + 1);
  const voters = ids.map((id) => `${id}@127.0.0.1:${base + CLUSTER_SIZE + id - 1}`).join(',');
  return ids.map((id) => ({
    name: `kafka-${id}`,
    port: base + id - 1,
    controllerPort: base + CLUSTER_SIZE + id - 1,
    cluster: {
      nodeId: id,
      voters,
      replicationFactor: CLUSTER_REPLICATION.factor,
      minInsyncReplicas: CLUSTER_REPLICATION.minInsyncReplicas,
      clusterIdFile: stackPath('kafka-cluster', 'cluster-id'),
      heap,
    },
  }));
}

/** The cluster's bootstrap list, `host:port` per broker. */
export function clusterBrokers(env: NodeJS.ProcessEnv = process.env): string[] {
  return clusterNodes(env).map((n) => `127.0.0.1:${n.port}`);
}

/** The PUSH_* settings that point the pipeline (workers, pushctl, the chaos run) at the cluster. */
export function clusterClientEnv(env: NodeJS.ProcessEnv = process.env): Record<string, string> {
  return {
    PUSH_KAFKA_BROKERS: clusterBrokers(env).join(','),
    PUSH_REPLICATION_FACTOR: String(CLUSTER_REPLICATION.factor),
    PUSH_MIN_INSYNC_REPLICAS: String(CLUSTER_REPLICATION.minInsyncReplicas),
  };
}

/** Broker ids the cluster answers with as registered (an empty list when no node answers). */
export async function registeredBrokers(brokers: string[]): Promise<number[]> {
  const admin = kafkaClient({ kafkaBrokers: brokers }, { retry: { retries: 0 }, connectionTimeout: 1000 }).admin();
  try {
    await admin.connect();
    return (await admin.describeCluster()).brokers.map((b) => b.nodeId).sort((a, b) => a - b);
  } finally {
    await admin.disconnect().catch(() => undefined); // best-effort: the answer is already decided
  }
}

/**
 * The cluster as one part of the stack: `up` starts the nodes that do not answer (all at once: a
 * node waits for a controller quorum before it serves) and waits until all three are registered;
 * `down` stops only nodes this stack started.
 */
export function kafkaClusterService(env: NodeJS.ProcessEnv = process.env): StackService {
  const nodes = clusterNodes(env);
  const brokers = clusterBrokers(env);
  return {
    name: 'kafka-cluster',
    port: nodes[0]!.port,
    async up() {
      const how = await Promise.all(nodes.map((n) => kafkaService(n).up()));
      await waitFor('kafka-1', async () => (await registeredBrokers(brokers)).length === CLUSTER_SIZE, { timeoutMs: 120_000 });
      return how.every((h) => h === 'reused') ? 'reused' : 'started';
    },
    async down() {
      const stopped = await Promise.all(nodes.map((n) => kafkaService(n).down()));
      return stopped.some(Boolean);
    },
    async status(): Promise<ServiceStatus> {
      const ids = await registeredBrokers(brokers).catch(() => [] as number[]); // not answering: reported as not healthy
      const pids = nodes.map((n) => readPid(n.name));
      return {
        name: 'kafka-cluster',
        port: nodes[0]!.port,
        healthy: ids.length === CLUSTER_SIZE,
        ...(ids.length > 0 ? { version: `${ids.length}/${CLUSTER_SIZE} brokers` } : {}),
        detail: `brokers ${brokers.join(',')} registered [${ids.join(',')}] pids [${pids.map((p) => p ?? '-').join(',')}] data .stack/kafka-1..${CLUSTER_SIZE}`,
      };
    },
  };
}

/** SIGKILLs one node of the cluster (by its PID file) and waits until its process is gone. */
export async function killClusterNode(node: KafkaInstance): Promise<void> {
  await stopKafka(node, 'SIGKILL');
}

/** Starts a node of the cluster again (its data is kept) and waits until it answers. */
export async function startClusterNode(node: KafkaInstance): Promise<void> {
  await kafkaService(node).up();
}
