import { stackBrokers, stackDown, stackServices, stackStatus, stackUp } from '../../stack/index.ts';
import { clusterClientEnv, kafkaClusterService } from '../../stack/kafka-cluster.ts';
import { secureClientEnv, secureServices, secureStack } from '../../stack/secure.ts';
import type { StackService } from '../../stack/service.ts';
import { prometheusService } from '../../stack/prometheus.ts';
import { readPid } from '../../stack/process.ts';
import { UsageError } from '../args.ts';

export const stackHelp = `pushctl stack up|down|status [--brokers 1|3] [--secure] [--with-prometheus]

  up      start what is not running: Kafka (KRaft), Apicurio registry, MariaDB, ClickHouse;
          installs what is missing (Maven Central jars, Debian packages); idempotent
  down    stop only what 'up' started (PID files under .stack/run)
  status  each part with version, port and health

  --brokers 3   the 3-broker KRaft cluster (kafka-1..3, brokers on 19192-19194, controllers on
                19195-19197, data under .stack/kafka-1..3) in the single broker's place, beside
                it; 'down --brokers 3' stops only the cluster. Default PUSH_STACK_BROKERS or 1.
                Point the pipeline at it with the PUSH_* settings 'up' prints
                (docs/operations.md, "Cluster mode").
  --secure      the secured stack, beside the plain one: Kafka over SASL_SSL (SCRAM, PLAIN,
                OAUTHBEARER) and mutual TLS with ACLs, the registry over HTTPS with basic auth,
                a MariaDB requiring TLS and a ClickHouse over HTTPS, each with a password; a CA
                and random passwords under .stack/secure. Ports from PUSH_STACK_SECURE_PORT
                (default 19400-19406). 'up' prints the PUSH_* settings of its user 'push'
                (docs/operations.md, "Connecting to a secured cluster").
  --with-prometheus  also Prometheus (Debian's package) on 19090, scraping the workers, the
                receiver and the entry on this host's ports, with monitoring/alerts.yml loaded
                (docs/operations.md, "Prometheus and alerts"); 'status' and 'down' include it
                whenever this stack started it.`;

export async function stackCommand(args: string[]): Promise<number> {
  const i = args.indexOf('--brokers');
  const secure = args.includes('--secure');
  if (secure && i >= 0) throw new UsageError('--secure runs a single broker: leave out --brokers');
  const brokers = stackBrokers(i >= 0 ? { PUSH_STACK_BROKERS: args[i + 1] } : process.env);
  const secured = secure ? secureStack() : undefined;
  // Prometheus when asked for, and in `status` and `down` whenever this stack runs it.
  const prometheus = !secured && (args.includes('--with-prometheus') || readPid('prometheus') !== undefined) ? [prometheusService()] : [];
  const services: StackService[] = secured ? secureServices(secured) : [...stackServices(brokers), ...prometheus];
  switch (args[0]) {
    case 'up':
      await stackUp(services);
      if (secured) {
        console.log("[stack] the pipeline uses the secured stack, as its user 'push', with:");
        for (const [key, value] of Object.entries(secureClientEnv(secured))) console.log(`  export ${key}=${value}`);
      }
      if (brokers === 3 && !secured) {
        console.log('[stack] the pipeline uses the cluster with:');
        for (const [key, value] of Object.entries(clusterClientEnv())) console.log(`  export ${key}=${value}`);
      }
      return 0;
    case 'down':
      // The cluster alone: the registry, MariaDB and ClickHouse are shared with the single-broker stack.
      await stackDown(secured ? services : brokers === 3 ? [kafkaClusterService()] : [...stackServices(1), ...prometheus]);
      return 0;
    case 'status': {
      const statuses = await stackStatus(services);
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
