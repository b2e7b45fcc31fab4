/**
 * `npm run chaos` (tsx chaos/run.ts): the full fault-injection run on the embedded stack.
 *
 *   tsx chaos/run.ts [--users N] [--seconds S] [--kills N] [--malformed N] [--instances N]
 *                    [--mysql-down S] [--clickhouse-down S] [--no-broker-restart] [--no-storms]
 *                    [--brokers 1|3] [--broker-down S]
 *
 * Defaults: 1500 users × 3 messages over 240 s, 3 workers, 10 SIGKILLs, 10 000 malformed inputs,
 * MySQL cut off for 30 s, ClickHouse for 60 s, one restart of the stack's Kafka broker, vendor
 * storms. Writes .stack/chaos/chaos-<run>.json and .txt and prints the summary; exits 1 when a
 * verdict fails.
 *
 * --repartition N [--from M] [--users U] [--seconds S] runs the repartition runbook from M (default 6)
 * to N partitions under load instead (chaos/repartition.ts; default 600 users × 3 messages over 90 s).
 *
 * --brokers 3 runs on the 3-broker cluster (stack/kafka-cluster.ts, started if it is not running)
 * with replication factor 3 and min.insync.replicas 2, and replaces the broker restart with the
 * cluster's faults (chaos/cluster-faults.ts): a broker SIGKILLed and started again after
 * --broker-down seconds (default 20), and every partition of the run reassigned.
 */
import { readInt } from '../common/config.ts';
import { runChaos } from './chaos.ts';
import { stackBrokers } from '../stack/index.ts';
import { clusterClientEnv } from '../stack/kafka-cluster.ts';
import { formatChaosReport, writeChaosReport } from './report.ts';

const args = process.argv.slice(2);
const flag = (name: string, fallback: number, max: number) => {
  const i = args.indexOf(name);
  return readInt({ [name]: i >= 0 ? args[i + 1] : undefined }, name, fallback, { min: 0, max });
};

// --repartition N: the repartition runbook under load instead of the fault run (chaos/repartition.ts).
if (args.includes('--repartition')) {
  const { runRepartition } = await import('./repartition.ts');
  const report = await runRepartition({
    from: flag('--from', 6, 256),
    to: flag('--repartition', 12, 256),
    users: flag('--users', 600, 100_000),
    messagesPerUser: 3,
    durationMs: flag('--seconds', 90, 3600) * 1000,
    keepTopics: args.includes('--keep-topics'),
  });
  const summary = report.summary as Record<string, boolean>;
  console.log(JSON.stringify({ figures: report.figures, pushes: report.pushes, mergeWindows: report.mergeWindows, summary }, null, 2));
  process.exit(Object.values(summary).every(Boolean) ? 0 : 1);
}

const brokersAt = args.indexOf('--brokers');
const brokers = stackBrokers(brokersAt >= 0 ? { PUSH_STACK_BROKERS: args[brokersAt + 1] } : process.env);
// The run's own clients, the environment's stack and its workers all read these.
if (brokers === 3) Object.assign(process.env, { PUSH_STACK_BROKERS: '3', ...clusterClientEnv() });

const report = await runChaos({
  brokers,
  brokerDownMs: flag('--broker-down', 20, 600) * 1000,
  instances: flag('--instances', 3, 8),
  users: flag('--users', 1500, 100_000),
  messagesPerUser: 3,
  durationMs: flag('--seconds', 240, 3600) * 1000,
  kills: flag('--kills', 10, 100),
  malformed: flag('--malformed', 10_000, 1_000_000),
  mysqlOutageMs: flag('--mysql-down', 30, 600) * 1000,
  clickhouseOutageMs: flag('--clickhouse-down', 60, 600) * 1000,
  brokerRestart: !args.includes('--no-broker-restart'),
  storms: !args.includes('--no-storms'),
  verbose: true,
  onStarted: (stop) => {
    // Ctrl-C or a SIGTERM stops the run's workers and emulators before leaving.
    const leave = (signal: string) => {
      console.log(`\n[chaos] ${signal}: stopping the run's workers ...`);
      void stop()
        .catch((error: unknown) => console.error(`[chaos] stopping the run failed: ${error instanceof Error ? error.message : String(error)}`))
        .finally(() => process.exit(130));
    };
    process.once('SIGINT', () => leave('SIGINT'));
    process.once('SIGTERM', () => leave('SIGTERM'));
  },
});
const files = writeChaosReport(report);
console.log(`\n${formatChaosReport(report)}\n\nreport: ${files.json}\n        ${files.text}`);
process.exit(Object.values(report.summary).every(Boolean) ? 0 : 1);
