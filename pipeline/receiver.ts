import mysql from 'mysql2/promise';
import { readKey, type Env } from '../common/config.ts';
import { CONFIG_KEYS } from '../common/config-keys.ts';
import { ConfigError } from '../common/errors.ts';
import { readEndpoints } from '../common/endpoints.ts';
import { createLogger, type Logger } from '../common/log.ts';
import { loadAppsConfig } from '../sinks/vendors/apps-config.ts';
import { createVendorRegistry } from '../sinks/vendors/registry.ts';
import { readReceiverConfig } from '../receipts/config.ts';
import type { ReceiptMetricsListener } from '../receipts/metrics.ts';
import { MysqlNonceStore } from '../receipts/nonces.ts';
import { receiptParserFromRegistry } from '../receipts/parsers.ts';
import { KafkaReceiptPublisher } from '../receipts/publisher.ts';
import { ReceiptReceiver } from '../receipts/server.ts';
import { topicName } from './topics.ts';
import { mysqlClientOptions } from '../common/mysql-url.ts';
import { checkServices } from './service-checks.ts';

export interface RunningReceiver {
  readonly port: number;
  stop(): Promise<void>;
}

/**
 * Starts the receipt receiver from the environment: PUSH_RECEIPTS_* (receipts/config.ts),
 * PUSH_APPS_CONFIG (the vendor apps file, whose adapters parse receipt bodies), PUSH_KAFKA_BROKERS,
 * PUSH_SCHEMA_REGISTRY_URL, PUSH_TOPIC_PREFIX and PUSH_MYSQL_URL (the HMS nonce table,
 * migrations/mysql/005_push_receipt_nonce.sql, shared by every receiver; with PUSH_MYSQL_SHARDS
 * it lives on shard 0, docs/data.md "Shards"). Every key is validated
 * before anything is opened.
 */
export async function startReceiptReceiver(
  env: Env = process.env,
  metrics?: ReceiptMetricsListener,
  logger: Logger = createLogger({ service: 'push-receipts' }),
): Promise<RunningReceiver> {
  const config = readReceiverConfig(env);
  const appsPath = readKey(env, CONFIG_KEYS.PUSH_APPS_CONFIG);
  if (appsPath === '') throw new ConfigError('PUSH_APPS_CONFIG', 'expected the path of the vendor apps JSON file');
  const endpoints = readEndpoints(env);
  const topic = topicName('receiptsRaw', readKey(env, CONFIG_KEYS.PUSH_TOPIC_PREFIX));
  await checkServices(['kafka', 'registry', 'mysql'], endpoints, { kafkaTopics: [topic] });
  const registry = createVendorRegistry(loadAppsConfig(appsPath));
  // The nonce table is not per user: shard 0 holds it (the first of PUSH_MYSQL_SHARDS, else PUSH_MYSQL_URL).
  const pool = mysql.createPool({ ...mysqlClientOptions(endpoints.mysqlShards[0]!, endpoints.mysqlSecurity), connectionLimit: 4, timezone: 'Z' });
  const nonces = new MysqlNonceStore({ pool, ttlMs: 2 * config.hmsMaxSkewMs });
  const publisher = new KafkaReceiptPublisher({
    endpoints,
    topic,
    ...(metrics?.kafkaRequest ? { onRequest: (api: string) => metrics.kafkaRequest!(api) } : {}),
  });
  const receiver = new ReceiptReceiver({ config, publisher, parse: receiptParserFromRegistry(registry), nonces, metrics, logger });
  let port: number;
  try {
    port = await receiver.listen();
  } catch (error) {
    // Best-effort cleanup of what was opened: the listen error is the one to report.
    await Promise.allSettled([publisher.close(), registry.close(), nonces.close(), pool.end()]);
    throw error;
  }
  logger.info('receipt receiver listening', { host: config.host, port, apps: config.apps.size });
  return {
    port,
    async stop() {
      await receiver.close();
      await publisher.close();
      await registry.close();
      await pool.end();
    },
  };
}
