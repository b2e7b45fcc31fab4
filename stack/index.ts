import { clickhouseService } from './clickhouse.ts';
import { kafkaService } from './kafka.ts';
import { kafkaClusterService } from './kafka-cluster.ts';
import { readInt } from '../common/config.ts';
import { ConfigError } from '../common/errors.ts';
import { mariadbService } from './mariadb.ts';
import { registryService } from './registry.ts';
import type { ServiceStatus, StackService } from './service.ts';

/**
 * How many brokers the local stack's Kafka has: 1 (the single node, default) or 3 (the cluster of
 * stack/kafka-cluster.ts). PUSH_STACK_BROKERS, or `--brokers` of `pushctl stack` and `npm run chaos`.
 */
export function stackBrokers(env: NodeJS.ProcessEnv = process.env): 1 | 3 {
  const n = readInt(env, 'PUSH_STACK_BROKERS', 1, { min: 1, max: 3 });
  if (n === 2) throw new ConfigError('PUSH_STACK_BROKERS', 'expected 1 or 3, got 2');
  return n as 1 | 3;
}

/**
 * The local stack in start order (the registry after Kafka; nothing depends on the order of the
 * rest). With 3 brokers, the cluster takes the single broker's place; the registry keeps its
 * schemas in its own database, not in Kafka, so both modes share it, MariaDB and ClickHouse.
 */
export function stackServices(brokers: 1 | 3 = stackBrokers()): StackService[] {
  return [brokers === 3 ? kafkaClusterService() : kafkaService(), registryService(), mariadbService(), clickhouseService()];
}

export async function stackUp(services: StackService[] = stackServices()): Promise<void> {
  const started = Date.now();
  // Kafka and the registry are the slow JVMs: start both, then the rest while they warm up.
  await Promise.all(
    services.map(async (service) => {
      const t0 = Date.now();
      const how = await service.up();
      console.log(`[stack] ${service.name} ${how} on port ${service.port} (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
    }),
  );
  console.log(`[stack] up in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}

export async function stackDown(services: StackService[] = stackServices()): Promise<void> {
  for (const service of [...services].reverse()) {
    const stopped = await service.down();
    console.log(`[stack] ${service.name}: ${stopped ? 'stopped' : 'not started by this stack, left running'}`);
  }
}

export async function stackStatus(services: StackService[] = stackServices()): Promise<ServiceStatus[]> {
  return Promise.all(services.map((service) => service.status()));
}
