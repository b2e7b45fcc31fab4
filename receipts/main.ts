import { readString, type Env } from '../common/config.ts';
import { ConfigError } from '../common/errors.ts';
import { readEndpoints } from '../common/endpoints.ts';
import { createLogger, type Logger } from '../common/log.ts';
import { loadAppsConfig } from '../sinks/vendors/apps-config.ts';
import { createVendorRegistry } from '../sinks/vendors/registry.ts';
import { readReceiverConfig } from './config.ts';
import type { ReceiptMetricsListener } from './metrics.ts';
import { receiptParserFromRegistry } from './parsers.ts';
import { KafkaReceiptPublisher } from './publisher.ts';
import { ReceiptReceiver } from './server.ts';

export interface RunningReceiver {
  readonly port: number;
  stop(): Promise<void>;
}

/**
 * Starts the receipt receiver from the environment: PUSH_RECEIPTS_* (receipts/config.ts),
 * PUSH_APPS_CONFIG (the vendor apps file, whose adapters parse receipt bodies), PUSH_KAFKA_BROKERS,
 * PUSH_SCHEMA_REGISTRY_URL and PUSH_TOPIC_PREFIX.
 */
export async function startReceiptReceiver(env: Env = process.env, metrics?: ReceiptMetricsListener, logger: Logger = createLogger({ service: 'push-receipts' })): Promise<RunningReceiver> {
  const config = readReceiverConfig(env);
  const appsPath = readString(env, 'PUSH_APPS_CONFIG', '');
  if (appsPath === '') throw new ConfigError('PUSH_APPS_CONFIG', 'expected the path of the vendor apps JSON file');
  const registry = createVendorRegistry(loadAppsConfig(appsPath));
  const publisher = new KafkaReceiptPublisher({ endpoints: readEndpoints(env), topicPrefix: readString(env, 'PUSH_TOPIC_PREFIX', '') });
  const receiver = new ReceiptReceiver({ config, publisher, parse: receiptParserFromRegistry(registry), metrics, logger });
  const port = await receiver.listen();
  logger.info('receipt receiver listening', { host: config.host, port, apps: config.apps.size });
  return {
    port,
    async stop() {
      await receiver.close();
      await publisher.close();
      await registry.close();
    },
  };
}
