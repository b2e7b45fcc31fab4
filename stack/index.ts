import { clickhouseService } from './clickhouse.ts';
import { kafkaService } from './kafka.ts';
import { mariadbService } from './mariadb.ts';
import { registryService } from './registry.ts';
import type { ServiceStatus, StackService } from './service.ts';

/** The local stack in start order (the registry after Kafka; nothing depends on the order of the rest). */
export function stackServices(): StackService[] {
  return [kafkaService(), registryService(), mariadbService(), clickhouseService()];
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
