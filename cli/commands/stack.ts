import { stackBrokers, stackDown, stackServices, stackStatus, stackUp } from '../../stack/index.ts';
import { clusterClientEnv, kafkaClusterService } from '../../stack/kafka-cluster.ts';

export const stackHelp = `pushctl stack up|down|status [--brokers 1|3]

  up      start what is not running: Kafka (KRaft), Apicurio registry, MariaDB, ClickHouse;
          installs what is missing (Maven Central jars, Debian packages); idempotent
  down    stop only what 'up' started (PID files under .stack/run)
  status  each part with version, port and health

  --brokers 3   the 3-broker KRaft cluster (kafka-1..3, brokers on 19192-19194, controllers on
                19195-19197, data under .stack/kafka-1..3) in the single broker's place, beside
                it; 'down --brokers 3' stops only the cluster. Default PUSH_STACK_BROKERS or 1.
                Point the pipeline at it with the PUSH_* settings 'up' prints
                (docs/operations.md, "Cluster mode").`;

export async function stackCommand(args: string[]): Promise<number> {
  const i = args.indexOf('--brokers');
  const brokers = stackBrokers(i >= 0 ? { PUSH_STACK_BROKERS: args[i + 1] } : process.env);
  switch (args[0]) {
    case 'up':
      await stackUp(stackServices(brokers));
      if (brokers === 3) {
        console.log('[stack] the pipeline uses the cluster with:');
        for (const [key, value] of Object.entries(clusterClientEnv())) console.log(`  export ${key}=${value}`);
      }
      return 0;
    case 'down':
      // The cluster alone: the registry, MariaDB and ClickHouse are shared with the single-broker stack.
      await stackDown(brokers === 3 ? [kafkaClusterService()] : stackServices(1));
      return 0;
    case 'status': {
      const statuses = await stackStatus(stackServices(brokers));
      for (const s of statuses) {
        console.log(
          `${s.name.padEnd(13)} ${(s.healthy ? 'healthy' : 'DOWN').padEnd(8)} port ${String(s.port).padEnd(6)} ${(s.version ?? '-').padEnd(28)} ${s.pid ? `pid ${s.pid}` : ''} ${s.detail ?? ''}`,
        );
      }
      return statuses.every((s) => s.healthy) ? 0 : 1;
    }
    default:
      console.error(stackHelp);
      return 2;
  }
}
