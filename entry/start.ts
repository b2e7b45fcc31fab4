/**
 * Starting the HTTP entry from the environment, and the operator's campaign and key operations
 * behind `pushctl entry` and `pushctl campaigns` (cli/ only parses and prints).
 */
import mysql, { type Pool } from 'mysql2/promise';
import { assertKafkajsPatched } from '../common/kafkajs-patch.ts';
import { readKey, type Env } from '../common/config.ts';
import { CONFIG_KEYS } from '../common/config-keys.ts';
import { readEndpoints, type Endpoints } from '../common/endpoints.ts';
import { createLogger, type Logger } from '../common/log.ts';
import { ConfigError } from '../common/errors.ts';
import { cancelRecord } from '../processors/campaigns/records.ts';
import { connectionFromEndpoints, createClickhouseClient } from '../sinks/clickhouse/client.ts';
import { MysqlCampaignProgress } from '../sinks/mysql/campaign-progress.ts';
import { readEntryConfig } from './config.ts';
import { ApiKeys } from './keys.ts';
import { CampaignProgressReader, type CampaignReport } from './progress.ts';
import { KafkaEntryPublisher } from './publisher.ts';
import { EntryServer } from './server.ts';
import { transferCheck } from './validate.ts';
import { businessOptionsFromEnv } from '../pipeline/apps/business-config.ts';
import { compileIngestRules, ingestOptionsFromEnv } from '../processors/model/ingest.ts';
import { mysqlClientOptions } from '../common/mysql-url.ts';
import { checkServices } from '../pipeline/service-checks.ts';
import { topicName } from '../pipeline/topics.ts';

export interface RunningEntry {
  readonly port: number;
  stop(): Promise<void>;
}

/**
 * The MySQL of the API keys and the campaign progress: tables that are not per user live on shard 0
 * (the first of PUSH_MYSQL_SHARDS, else PUSH_MYSQL_URL), where the campaigns stage writes progress.
 */
function pool(endpoints: Endpoints): Pool {
  return mysql.createPool({ ...mysqlClientOptions(endpoints.mysqlShards[0]!, endpoints.mysqlSecurity), connectionLimit: 4, timezone: 'Z' });
}

/**
 * Starts the entry: PUSH_ENTRY_* (entry/config.ts), PUSH_KAFKA_BROKERS, PUSH_SCHEMA_REGISTRY_URL,
 * PUSH_TOPIC_PREFIX, PUSH_MYSQL_URL or shard 0 of PUSH_MYSQL_SHARDS (API keys, campaign progress), PUSH_CLICKHOUSE_* (campaign
 * accounting). Every key is validated before anything is opened.
 */
export async function startEntry(env: Env = process.env, logger: Logger = createLogger({ service: 'push-entry' })): Promise<RunningEntry> {
  const config = readEntryConfig(env);
  assertKafkajsPatched();
  const endpoints = readEndpoints(env);
  const topicPrefix = readKey(env, CONFIG_KEYS.PUSH_TOPIC_PREFIX);
  await checkServices(['kafka', 'registry', 'mysql', 'clickhouse'], endpoints, {
    kafkaTopics: [topicName('requests', topicPrefix), topicName('campaigns', topicPrefix)],
  });
  const db = pool(endpoints);
  const clickhouse = createClickhouseClient(connectionFromEndpoints(endpoints));
  const publisher = new KafkaEntryPublisher(endpoints, topicPrefix);
  const campaigns = new CampaignProgressReader(new MysqlCampaignProgress(db), clickhouse);
  // What the business transfer checks (templates, lengths, times) is answered 400 here, not dead-lettered later.
  const check = transferCheck(businessOptionsFromEnv(env)?.templates ?? {}, compileIngestRules(ingestOptionsFromEnv(env)));
  const server = new EntryServer({ config, keys: new ApiKeys(db), publisher, campaigns, check, logger });
  const release = () => Promise.allSettled([publisher.close(), clickhouse.close(), db.end()]);
  let port: number;
  try {
    port = await server.listen();
  } catch (error) {
    await release(); // best-effort cleanup: the listen error is the one to report
    throw error;
  }
  logger.info('entry listening', { host: config.host, port });
  return {
    port,
    async stop() {
      await server.close();
      await release();
    },
  };
}

/** Runs `work` with a pool of shard 0, closed after. */
async function withMysql<T>(work: (db: Pool) => Promise<T>, env: Env): Promise<T> {
  const db = pool(readEndpoints(env));
  try {
    return await work(db);
  } finally {
    await db.end();
  }
}

/** Runs `work` with the API keys (on shard 0). */
export function withApiKeys<T>(work: (keys: ApiKeys) => Promise<T>, env: Env = process.env): Promise<T> {
  return withMysql((db) => work(new ApiKeys(db)), env);
}

/** A campaign's report as its sender sees it (GET /v1/campaigns/{id}); undefined when the expansion has not seen it. */
export async function campaignReport(campaignId: string, env: Env = process.env): Promise<CampaignReport | undefined> {
  const endpoints = readEndpoints(env);
  const db = pool(endpoints);
  const clickhouse = createClickhouseClient(connectionFromEndpoints(endpoints));
  try {
    const progress = new MysqlCampaignProgress(db);
    const row = await progress.read(campaignId);
    return row && (await new CampaignProgressReader(progress, clickhouse).report(campaignId, row.sender));
  } finally {
    await Promise.allSettled([clickhouse.close(), db.end()]);
  }
}

/**
 * The operator's cancel (`pushctl campaigns cancel`): a CANCEL in push.campaigns for the campaign's
 * sender (from its progress row, or `sender` when the expansion has not seen it yet). Resolves with
 * the report as it was before the cancel, once Kafka acknowledged the record.
 */
export async function cancelCampaign(campaignId: string, sender: string | undefined, env: Env = process.env): Promise<CampaignReport | undefined> {
  const before = await campaignReport(campaignId, env);
  const owner = sender ?? (await withMysql((db) => new MysqlCampaignProgress(db).read(campaignId), env))?.sender;
  if (owner === undefined) throw new ConfigError('--sender', `campaign ${campaignId} is not known yet: name its sender`);
  const publisher = new KafkaEntryPublisher(readEndpoints(env), readKey(env, CONFIG_KEYS.PUSH_TOPIC_PREFIX));
  try {
    await publisher.campaign(cancelRecord(campaignId, owner, Date.now()));
  } finally {
    await publisher.close();
  }
  return before;
}
