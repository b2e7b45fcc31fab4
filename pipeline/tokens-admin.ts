/**
 * The token operations of `pushctl tokens` (cli/commands/tokens.ts): a user's rows of
 * im_push_token, and the operator's invalidation, published as INVALID token reports (source
 * OPERATOR) to push.tokens. Returns data; the command prints it, each token only as a fingerprint.
 */
import { kafkaClient } from '../common/kafka-client.ts';
import { schemaRegistryClient } from '../common/registry-client.ts';
import mysql from 'mysql2/promise';
import { ConfigError } from '../common/errors.ts';
import { readEndpoints } from '../common/endpoints.ts';
import { readKey } from '../common/config.ts';
import { CONFIG_KEYS } from '../common/config-keys.ts';
import type { TokenReport } from '../processors/model/records.ts';
import { registerSchemas } from './schemas.ts';
import { registryValueSerdes } from './serdes.ts';
import { topicName } from './topics.ts';
import { shardUrlOf } from '../sinks/mysql/shards.ts';
import { mysqlClientOptions } from '../common/mysql-url.ts';

/** A row of im_push_token (migrations/mysql/003_im_push_token.sql). `token` is a secret: never print it. */
export interface TokenRow {
  uid: string;
  device_id: string;
  vendor: string;
  platform: string;
  app_id: string;
  token: string;
  status: number;
  consecutive_failures: number;
  invalid_reason: string | null;
  refreshed_at: Date | null;
  invalidated_at: Date | null;
}

/** The user's tokens from im_push_token (on the user's shard, sinks/mysql/shards.ts), by device and vendor. */
export async function tokensOf(uid: string): Promise<TokenRow[]> {
  const endpoints = readEndpoints();
  const connection = await mysql.createConnection({ ...mysqlClientOptions(shardUrlOf(endpoints.mysqlShards, uid), endpoints.mysqlSecurity), timezone: 'Z' });
  try {
    const [rows] = await connection.query(
      'SELECT uid, device_id, vendor, platform, app_id, token, status, consecutive_failures, invalid_reason, refreshed_at, invalidated_at FROM im_push_token WHERE uid = ? ORDER BY device_id, vendor',
      [uid],
    );
    return rows as TokenRow[];
  } finally {
    await connection.end();
  }
}

export interface InvalidateOptions {
  /** Only this device's tokens. */
  readonly device?: string;
  /** Only this vendor's tokens. */
  readonly vendor?: string;
  /** The reason recorded with the invalidation. */
  readonly reason: string;
}

/**
 * Publishes an INVALID token report (source OPERATOR) to push.tokens for each valid token of
 * `rows` (the user's, from tokensOf) that matches the device and vendor: the policy stage stops
 * choosing them at once and the receipts stage records them in MySQL. Returns the rows invalidated;
 * throws a ConfigError when none matches.
 */
export async function invalidateTokens(uid: string, rows: readonly TokenRow[], options: InvalidateOptions): Promise<TokenRow[]> {
  const { device, vendor, reason } = options;
  const chosen = rows.filter((r) => r.status === 1 && (!device || r.device_id === device) && (!vendor || r.vendor === vendor));
  if (chosen.length === 0)
    throw new ConfigError('uid', `no valid token of ${uid} matches${device ? ` --device ${device}` : ''}${vendor ? ` --vendor ${vendor}` : ''}`);
  const now = Date.now();
  const reports: TokenReport[] = chosen.map((r) => ({
    uid: r.uid,
    device_id: r.device_id,
    platform: r.platform,
    vendor: r.vendor,
    app_id: r.app_id,
    token: r.token,
    reported_at: now,
    state: 'INVALID',
    source: 'OPERATOR',
    reason,
    manufacturer: null,
  }));
  await produceTokenReports(readKey(process.env, CONFIG_KEYS.PUSH_TOPIC_PREFIX), reports);
  return chosen;
}

/** Produces the reports to push.tokens (schemas registered first, as a fresh stack may not have them yet). */
async function produceTokenReports(prefix: string, reports: readonly TokenReport[]): Promise<void> {
  const endpoints = readEndpoints();
  const registry = schemaRegistryClient(endpoints);
  await registerSchemas(registry, { prefix });
  const serde = registryValueSerdes(registry, prefix)('tokens');
  const topic = topicName('tokens', prefix);
  const producer = kafkaClient(endpoints, { clientId: 'pushctl-tokens' }).producer({
    allowAutoTopicCreation: false,
  });
  await producer.connect();
  try {
    const messages = await Promise.all(reports.map(async (value) => ({ key: value.uid, value: await serde.serialize(topic, value) })));
    await producer.send({ topic, messages, acks: -1 });
  } finally {
    await producer.disconnect();
  }
}
