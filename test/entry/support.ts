/**
 * The real stack for the entry's tests: a MySQL and a ClickHouse database of their own (migrated),
 * the pipeline topics under a fresh prefix, the HTTP entry on a free port, and the campaign
 * expansion application (in process, or as a worker process to kill). `cleanup` drops all of it.
 */
import { createHash } from 'node:crypto';
import mysql, { type Pool } from 'mysql2/promise';
import { type Producer } from 'kafkajs';
import { kafkaClient } from '../../common/kafka-client.ts';
import type { ClickHouseClient } from '@clickhouse/client';
import { migrate } from '../../migrations/migrate.ts';
import { clickhouseQuery } from '../../migrations/clickhouse-http.ts';
import { readEntryConfig } from '../../entry/config.ts';
import { ApiKeys } from '../../entry/keys.ts';
import { CampaignProgressReader } from '../../entry/progress.ts';
import { KafkaEntryPublisher } from '../../entry/publisher.ts';
import { EntryServer } from '../../entry/server.ts';
import { transferCheck } from '../../entry/validate.ts';
import { compileIngestRules } from '../../processors/model/ingest.ts';
import { buildCampaignsTopology } from '../../pipeline/apps/campaigns.ts';
import { MysqlCampaignProgress } from '../../sinks/mysql/campaign-progress.ts';
import { createClickhouseClient } from '../../sinks/clickhouse/client.ts';
import { StreamsApp } from '../../topology/runtime.ts';
import { registryValueSerdes } from '../../pipeline/serdes.ts';
import { topicName, type TopicKey } from '../../pipeline/topics.ts';
import type { Topology } from '../../topology/builder.ts';
import { createLogger } from '../../common/log.ts';
import { createTestTopics, endpoints, kafka, registry, type TestTopics } from '../pipeline/apps/stack-io.ts';
import { deleteRunTopics } from '../support/run-topics.ts';
import { uniqueName } from '../support/stack.ts';

export { endpoints, kafka, registry };

export interface EntryStack {
  readonly topics: TestTopics;
  readonly mysqlUrl: string;
  readonly clickhouseDatabase: string;
  readonly pool: Pool;
  readonly clickhouse: ClickHouseClient;
  readonly keys: ApiKeys;
  /** The entry's base URL, e.g. http://127.0.0.1:40123. */
  readonly url: string;
  cleanup(): Promise<void>;
}

export async function startEntryStack(env: Record<string, string> = {}): Promise<EntryStack> {
  const db = uniqueName('entry').replace(/-/g, '_');
  const url = new URL(endpoints.mysqlUrl);
  url.pathname = `/${db}`;
  const mysqlUrl = url.toString();
  const ch = { url: endpoints.clickhouseUrl, database: db, user: endpoints.clickhouseUser, password: endpoints.clickhousePassword };
  await migrate({ mysqlUrl, clickhouse: ch });
  const admin = kafka.admin();
  await admin.connect();
  const topics = await createTestTopics(admin, 4).finally(() => admin.disconnect());
  const pool = mysql.createPool({ uri: mysqlUrl, connectionLimit: 4, timezone: 'Z' });
  const clickhouse = createClickhouseClient({
    url: endpoints.clickhouseUrl,
    database: db,
    username: endpoints.clickhouseUser,
    password: endpoints.clickhousePassword,
  });
  const keys = new ApiKeys(pool, 0);
  const publisher = new KafkaEntryPublisher(endpoints, topics.prefix);
  const server = new EntryServer({
    config: readEntryConfig({ PUSH_ENTRY_PORT: '0', ...env }),
    keys,
    publisher,
    campaigns: new CampaignProgressReader(new MysqlCampaignProgress(pool), clickhouse),
    check: transferCheck({ order_shipped: { title: 'Order {order}', body: 'Order {order} is on its way' } }, compileIngestRules()),
    logger: createLogger({ service: 'entry-test' }, 'warn'),
  });
  const port = await server.listen();
  return {
    topics,
    mysqlUrl,
    clickhouseDatabase: db,
    pool,
    clickhouse,
    keys,
    url: `http://127.0.0.1:${port}`,
    async cleanup() {
      await server.close();
      await publisher.close();
      await clickhouse.close();
      await pool.query(`DROP DATABASE IF EXISTS \`${db}\``);
      await pool.end();
      await clickhouseQuery(ch, `DROP DATABASE IF EXISTS ${db}`, false);
      await deleteRunTopics(topics.prefix);
    },
  };
}

/** The campaign expansion application (not started) on the topics of `prefix`, its progress in `pool`. */
export function expansionApp(o: { prefix: string; pool: Pool; ratePerSecond: number; applicationId: string; sessionTimeoutMs?: number }): StreamsApp {
  return new StreamsApp({
    applicationId: o.applicationId,
    topology: buildCampaignsTopology({
      valueSerdes: registryValueSerdes(registry, o.prefix),
      topicPrefix: o.prefix,
      expansion: { ratePerSecond: o.ratePerSecond, maxUids: 1_000_000 },
      progress: new MysqlCampaignProgress(o.pool),
    }),
    brokers: endpoints.kafkaBrokers,
    dlqTopic: topicName('dlq', o.prefix),
    commitIntervalMs: 200,
    ...(o.sessionTimeoutMs ? { sessionTimeoutMs: o.sessionTimeoutMs } : {}),
    logger: createLogger({ service: 'campaigns-test' }, 'warn'),
  });
}

/** The campaign expansion application on the stack, in this process. */
export async function startExpansion(stack: EntryStack, ratePerSecond: number, applicationId = uniqueName('campaigns')): Promise<StreamsApp> {
  const app = expansionApp({ prefix: stack.topics.prefix, pool: stack.pool, ratePerSecond, applicationId });
  await app.start();
  return app;
}

/** An application `<prefix><stage>` on the stack's topics (not started): exactly-once, or at-least-once as the ClickHouse sink runs. */
export function stageApp(stack: EntryStack, stage: string, topology: Topology, atLeastOnce = false): StreamsApp {
  return new StreamsApp({
    applicationId: `${stack.topics.prefix}${stage}`,
    topology,
    brokers: endpoints.kafkaBrokers,
    processingGuarantee: atLeastOnce ? 'at_least_once' : 'exactly_once',
    commitIntervalMs: atLeastOnce ? 500 : 100,
    dlqTopic: topicName('dlq', stack.topics.prefix),
    sessionTimeoutMs: 6000,
    logger: createLogger({ stage }, 'warn'),
  });
}

/** Produces values to one of the stack's topics, Avro through the registry, 1,000 to a request. */
export async function produceTo(stack: EntryStack, producer: Producer, key: TopicKey, records: ReadonlyArray<{ key: string; value: unknown }>): Promise<void> {
  const topic = stack.topics.name(key);
  const messages = await Promise.all(records.map(async (r) => ({ key: r.key, value: await stack.topics.serdes(key).serialize(topic, r.value) })));
  for (let i = 0; i < messages.length; i += 1000) await producer.send({ topic, acks: -1, messages: messages.slice(i, i + 1000) });
}

export interface Answer {
  readonly status: number;
  readonly headers: Headers;
  readonly body: Record<string, unknown>;
}

/** One request to the entry with an API key (or none). */
export async function call(
  stack: EntryStack,
  method: string,
  path: string,
  key: string | undefined,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<Answer> {
  const res = await fetch(stack.url + path, {
    method,
    headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as Record<string, unknown> };
}

export const sha256 = (text: string) => createHash('sha256').update(text).digest();

/** Every record of a topic under read_committed, with its key and timestamp, read until the end offsets seen at the call. */
export async function readAll<V>(
  stack: EntryStack,
  key: 'requests' | 'campaigns' | 'campaignControl',
): Promise<Array<{ key: string; value: V; timestamp: number }>> {
  const topic = stack.topics.name(key);
  const serde = stack.topics.serdes(key);
  const admin = kafka.admin();
  await admin.connect();
  const ends = await admin.fetchTopicOffsets(topic).finally(() => admin.disconnect());
  const pending = new Map(ends.filter((p) => Number(p.high) > Number(p.low)).map((p) => [p.partition, Number(p.high)]));
  const out: Array<{ key: string; value: V; timestamp: number }> = [];
  if (pending.size === 0) return out;
  const consumer = kafkaClient(endpoints, { clientId: 'entry-test-reader' }).consumer({
    groupId: uniqueName('entry-reader'),
    maxWaitTimeInMs: 100,
    readUncommitted: false,
  });
  let done!: () => void;
  const finished = new Promise<void>((resolve) => (done = resolve));
  consumer.on(consumer.events.END_BATCH_PROCESS, ({ payload }) => {
    const end = pending.get(payload.partition);
    if (end !== undefined && Number(payload.lastOffset) + 1 >= end) pending.delete(payload.partition);
    if (pending.size === 0) done();
  });
  await consumer.connect();
  await consumer.subscribe({ topics: [topic], fromBeginning: true });
  await consumer.run({
    eachBatch: async ({ batch }) => {
      for (const m of batch.messages) {
        if (m.value === null) continue;
        out.push({ key: m.key?.toString('utf8') ?? '', value: (await serde.deserialize(topic, m.value)) as V, timestamp: Number(m.timestamp) });
      }
    },
  });
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    done();
  }, 30_000);
  await finished;
  clearTimeout(timer);
  await consumer.disconnect();
  if (timedOut) throw new Error(`${topic}: the end offsets were not reached within 30 s (${out.length} records read)`);
  return out;
}
