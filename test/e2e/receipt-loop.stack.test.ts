import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import { kafkaClient } from '../../common/kafka-client.ts';
import { schemaRegistryClient } from '../../common/registry-client.ts';
import { createLogger } from '../../common/log.ts';
import { topicName } from '../../pipeline/topics.ts';
import { buildReceiptTopology, receiptsByMessageTopic, receiptsByUidTopic } from '../../pipeline/apps/receipts.ts';
import { registryValueSerdes } from '../../pipeline/serdes.ts';
import { compileReceiverConfig } from '../../receipts/config.ts';
import { ReceiptCounters } from '../../receipts/metrics.ts';
import { receiptParserFromRegistry, receiptParsersFromRegistry } from '../../receipts/parsers.ts';
import { MysqlNonceStore } from '../../receipts/nonces.ts';
import { KafkaReceiptPublisher } from '../../receipts/publisher.ts';
import { ReceiptReceiver } from '../../receipts/server.ts';
import { hmsCallbackHeader } from '../../sinks/vendors/hms/receipts.ts';
import { queryArrival } from '../../sinks/clickhouse/arrival-query.ts';
import type { PushOutcomeRecord, PushReceiptRecord } from '../../sinks/clickhouse/rows.ts';
import { buildClickhouseSinkTopology } from '../../pipeline/apps/clickhouse.ts';
import { PushEventWriter } from '../../sinks/clickhouse/writer.ts';
import { MysqlTaskStatusWriter } from '../../sinks/mysql/task-status.ts';
import { MysqlTokenWriter } from '../../sinks/mysql/tokens.ts';
import { StreamsApp } from '../../topology/runtime.ts';
import { stackEndpoints, uniqueName } from '../support/stack.ts';
import { buildWorkload, type ArrivalTruth } from '../sinks/clickhouse/fixtures.ts';
import { createTestDatabase, type TestDatabase } from '../sinks/clickhouse/support.ts';
import { freePort } from '../../demo/ports.ts';
import { startForwarder, type Forwarder } from '../sinks/clickhouse/forwarder.ts';
import { createTestMysql, type TestMysql } from '../support/test-mysql.ts';
import { RECEIPT_SECRETS, parsingRegistry, receiptApps, receiptBodies } from '../receipts/support.ts';
import { createTopicsWithLeaders } from '../../topology/create-topics.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The whole receipt loop on the real stack: outcomes on Kafka, vendor callbacks through the HTTP
 * receiver, the receipts application (parse, join, token health) and the ClickHouse sink
 * application on the topology runtime. The arrival rate read from ClickHouse must equal the ground
 * truth after duplicate callbacks, a ClickHouse outage mid-run and a replay of the outcomes.
 */
describe('receipts end to end', { timeout: 240_000 }, () => {
  const endpoints = stackEndpoints();
  const prefix = `${uniqueName('rcpt-e2e')}.`;
  const topics = {
    receiptsRaw: topicName('receiptsRaw', prefix),
    outcomes: topicName('outcomes', prefix),
    tokens: topicName('tokens', prefix),
    receipts: topicName('receipts', prefix),
    byMessage: receiptsByMessageTopic(prefix),
    byUid: receiptsByUidTopic(prefix),
  };
  const dlq = topicName('dlq', prefix);
  const kafka = kafkaClient(endpoints, { clientId: 'receipts-e2e' });
  const schemaRegistry = schemaRegistryClient(endpoints);
  const valueSerdes = registryValueSerdes(schemaRegistry, prefix);

  const vendorRegistry = parsingRegistry();
  const metrics = new ReceiptCounters();
  const apps: StreamsApp[] = [];
  const writers: PushEventWriter[] = [];
  let ch: TestDatabase;
  let mysql: TestMysql;
  let forwarder: Forwarder | undefined;
  let chPort: number;
  let receiver: ReceiptReceiver;
  let receiverPort: number;
  let publisher: KafkaReceiptPublisher;

  // Two hours of pushes ending an hour ago: receipt times must lie within the ingest skews of now
  // (docs/design.md, "Ingest validation"), which a fixed calendar date stops doing after 7 days.
  const workload = buildWorkload(240, 31, Math.floor(Date.now() / 3_600_000) * 3_600_000 - 3 * 3_600_000);

  function startSinkApp(): StreamsApp {
    const writer = new PushEventWriter({
      connection: { ...ch.connection, url: `http://127.0.0.1:${chPort}` },
      retryInitialDelayMs: 100,
      retryMaxDelayMs: 1000,
    });
    writers.push(writer);
    const app = new StreamsApp({
      applicationId: uniqueName('ch-sink'),
      topology: buildClickhouseSinkTopology({
        valueSerdes,
        topicPrefix: prefix,
        writer,
      }),
      brokers: endpoints.kafkaBrokers,
      processingGuarantee: 'at_least_once',
      commitIntervalMs: 500,
      dlqTopic: dlq,
      logger: createLogger({}, 'error'),
    });
    apps.push(app);
    return app;
  }

  before(async () => {
    const admin = kafka.admin();
    await admin.connect();
    await createTopicsWithLeaders(
      admin,
      [...Object.values(topics), dlq].map((topic) => ({ topic, numPartitions: 2, replicationFactor: 1 })),
    );
    await admin.disconnect();
    [ch, mysql] = await Promise.all([createTestDatabase('e2e'), createTestMysql('e2e')]);
    chPort = await freePort();
    forwarder = await startForwarder(chPort, new URL(ch.connection.url));

    const receiptsApp = new StreamsApp({
      applicationId: uniqueName('receipts-app'),
      topology: buildReceiptTopology({
        valueSerdes,
        topicPrefix: prefix,
        parsers: receiptParsersFromRegistry(vendorRegistry),
        join: { taskStatus: new MysqlTaskStatusWriter({ pool: mysql.pool }) },
        tokens: { tokens: new MysqlTokenWriter({ pool: mysql.pool }) },
      }),
      brokers: endpoints.kafkaBrokers,
      processingGuarantee: 'exactly_once',
      dlqTopic: dlq,
      logger: createLogger({}, 'error'),
    });
    apps.push(receiptsApp);
    await receiptsApp.start();
    await startSinkApp().start();

    publisher = new KafkaReceiptPublisher({ endpoints, topic: topicName('receiptsRaw', prefix) });
    receiver = new ReceiptReceiver({
      config: compileReceiverConfig({ port: 0, apps: receiptApps(['app-a', 'app-b']) }),
      publisher,
      parse: receiptParserFromRegistry(vendorRegistry),
      nonces: new MysqlNonceStore({ pool: mysql.pool, ttlMs: 600_000 }),
      metrics,
    });
    receiverPort = await receiver.listen();
  });

  after(async () => {
    await forwarder?.close();
    // Best-effort: the ClickHouse path back so the writers can flush as they close; without it they close all the same.
    forwarder = await startForwarder(chPort, new URL(ch.connection.url)).catch(() => undefined);
    for (const app of apps) await app.close();
    for (const w of writers) await w.close();
    await receiver?.close();
    await publisher?.close();
    await vendorRegistry.close();
    await forwarder?.close();
    await ch?.drop();
    await mysql?.drop();
  });

  async function produceOutcomes(outcomes: readonly PushOutcomeRecord[]): Promise<void> {
    const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    const messages = await Promise.all(outcomes.map(async (o) => ({ key: o.uid, value: await valueSerdes('outcomes').serialize(topics.outcomes, o) })));
    await producer.send({ topic: topics.outcomes, acks: -1, messages });
    await producer.disconnect();
  }

  /** Posts one receipt the way the vendor would (HMS signed, Xiaomi form with the shared secret), to its app's receipt URL. */
  async function postReceipt(r: PushReceiptRecord): Promise<void> {
    const token = `tok-${r.device_id}`;
    let path: string;
    let body: string;
    const headers: Record<string, string> = {};
    if (r.vendor === 'hms') {
      body = receiptBodies.hms(r.vendor_message_id, token, r.status === 'DELIVERED' ? 0 : r.status === 'DEAD_TOKEN' ? 5 : 6, r.at);
      path = `/receipts/hms/${r.app_id}`;
      headers['content-type'] = 'application/json';
      headers['x-huawei-callback-id'] = hmsCallbackHeader(RECEIPT_SECRETS.hms, Date.now(), randomUUID());
    } else {
      body = receiptBodies.xiaomi(r.vendor_message_id, token, r.status === 'DELIVERED' ? 1 : r.status === 'DEAD_TOKEN' ? 16 : 32, r.at);
      path = `/receipts/xiaomi/${r.app_id}?key=${RECEIPT_SECRETS.xiaomi}`;
      headers['content-type'] = 'application/x-www-form-urlencoded';
    }
    const answer = await fetch(`http://127.0.0.1:${receiverPort}${path}`, { method: 'POST', headers, body });
    assert.equal(answer.status, 200, await answer.text());
  }

  async function arrivalByVendor(): Promise<Record<string, ArrivalTruth>> {
    const rows = await queryArrival(ch.client, 'vendor', 0);
    return Object.fromEntries(rows.map((r) => [r.key, { submitted: r.submitted, arrived: r.arrived, delivered: r.delivered, unknown: r.unknown }]));
  }

  const expectedByVendor = (): Record<string, ArrivalTruth> => {
    const out: Record<string, ArrivalTruth> = {};
    for (const [key, t] of workload.truth) {
      const v = key.split('|')[0]!;
      const e = (out[v] ??= { submitted: 0, arrived: 0, delivered: 0, unknown: 0 });
      e.submitted += t.submitted;
      e.arrived += t.arrived;
      e.delivered += t.delivered;
      e.unknown += t.unknown;
    }
    return out;
  };

  async function eventually(what: string, check: () => Promise<boolean>, timeoutMs = 90_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!(await check())) {
      if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
      await sleep(500);
    }
  }

  async function rowCount(): Promise<number> {
    const rs = await ch.client.query({ query: 'SELECT count() AS c FROM push_events', format: 'JSONEachRow' });
    return Number((await rs.json<{ c: string }>())[0]!.c);
  }

  test('arrival per vendor equals the ground truth after duplicate callbacks and a ClickHouse outage', async () => {
    const expected = expectedByVendor();
    const half = Math.floor(workload.outcomes.length / 2);
    const receiptsOf = (outcomes: readonly PushOutcomeRecord[]) => {
      const tasks = new Set(outcomes.map((o) => o.task_id));
      return workload.receipts.filter((r) => tasks.has(r.task_id!));
    };
    const first = workload.outcomes.slice(0, half);
    const second = workload.outcomes.slice(half);

    await produceOutcomes(first);
    for (const r of receiptsOf(first)) await postReceipt(r);
    await eventually('the first half in ClickHouse', async () => (await rowCount()) >= first.length);

    // ClickHouse becomes unreachable for the ClickHouse sink (the shared server keeps running).
    await forwarder!.close();
    forwarder = undefined;
    await produceOutcomes(second);
    for (const r of receiptsOf(second)) await postReceipt(r);
    for (const r of workload.receipts) await postReceipt(r); // every callback delivered twice
    await sleep(5000);
    const duringOutage = await rowCount();
    await sleep(1000);
    assert.equal(await rowCount(), duringOutage, 'nothing is written while ClickHouse is unreachable');
    forwarder = await startForwarder(chPort, new URL(ch.connection.url));

    await eventually('the arrival figures', async () => isDeepStrictEqual(await arrivalByVendor(), expected));
    assert.deepEqual(await arrivalByVendor(), expected);
    assert.equal(metrics.rejectedCount('bad_signature'), 0);
  });

  test('replaying the outcomes (and re-reading both topics from the beginning) changes no figure', async () => {
    const expected = expectedByVendor();
    await produceOutcomes(workload.outcomes);
    await startSinkApp().start(); // a new consumer group reads push.outcomes and push.receipts from the beginning
    const replayWriter = writers.at(-1)!;
    const replayed = 2 * workload.outcomes.length + workload.receipts.length;
    await eventually('the replaying sink to store both topics', async () => replayWriter.storedRows >= replayed);
    await sleep(1000);
    assert.deepEqual(await arrivalByVendor(), expected);
  });
});
