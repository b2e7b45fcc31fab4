import { readKey } from '../../common/config.ts';
import { CONFIG_KEYS } from '../../common/config-keys.ts';
import { createLogger } from '../../common/log.ts';
import { startReceiptReceiver } from '../../pipeline/receiver.ts';
import { receiptPrometheusListener } from '../../receipts/prometheus.ts';
import { MetricsRegistry } from '../../sinks/metrics/prometheus.ts';
import { startMetricsServer } from '../../sinks/metrics/server.ts';
import { closeOnSignals } from '../../topology/shutdown.ts';

export const receiverHelp = `pushctl receiver

  serves vendor receipt callbacks in a process of its own, until SIGTERM/SIGINT, so that a flood of
  callbacks costs this process and not the pipeline workers (docs/operations.md).
  configuration: PUSH_RECEIPTS_* keys, PUSH_APPS_CONFIG, PUSH_KAFKA_BROKERS, PUSH_SCHEMA_REGISTRY_URL,
  PUSH_TOPIC_PREFIX, PUSH_MYSQL_URL (HMS nonces), see README; metrics and health on
  127.0.0.1:PUSH_RECEIPTS_METRICS_PORT (default 9474; 0 picks a free port)`;

export async function receiverCommand(): Promise<number> {
  const env = process.env;
  const logger = createLogger({ service: 'push-receipts' });
  const metricsPort = readKey(env, CONFIG_KEYS.PUSH_RECEIPTS_METRICS_PORT);
  const registry = new MetricsRegistry();
  const receiver = await startReceiptReceiver(env, receiptPrometheusListener(registry), logger);
  const metrics = await startMetricsServer(registry, { live: () => true, ready: () => true }, metricsPort);
  console.log(`receipt receiver on port ${receiver.port}, metrics http://127.0.0.1:${metrics.port}/metrics`);
  closeOnSignals([{ close: () => receiver.stop() }, metrics], { logger });
  await new Promise<never>(() => undefined);
  return 0;
}
