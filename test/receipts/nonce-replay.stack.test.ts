import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { kafkaClient } from '../../common/kafka-client.ts';
import { schemaRegistryClient } from '../../common/registry-client.ts';
import { createPool, type Pool } from 'mysql2/promise';
import { compileReceiverConfig } from '../../receipts/config.ts';
import { ReceiptCounters } from '../../receipts/metrics.ts';
import { MysqlNonceStore } from '../../receipts/nonces.ts';
import { receiptParserFromRegistry } from '../../receipts/parsers.ts';
import { KafkaReceiptPublisher, type ReceiptRawRecord } from '../../receipts/publisher.ts';
import { ReceiptReceiver } from '../../receipts/server.ts';
import { hmsCallbackHeader } from '../../sinks/vendors/hms/receipts.ts';
import { topicName } from '../../pipeline/topics.ts';
import type { VendorRegistry } from '../../sinks/vendors/registry.ts';
import { stackEndpoints, uniqueName } from '../support/stack.ts';
import { createTestMysql, type TestMysql } from '../support/test-mysql.ts';
import { postHead, rawRequest } from './raw-http.ts';
import { RECEIPT_SECRETS, TEST_APP, parsingRegistry, receiptApps, receiptBodies } from './support.ts';
import { createTopicsWithLeaders } from '../../topology/create-topics.ts';

/**
 * HMS nonces are remembered in MySQL (migrations/mysql/005_push_receipt_nonce.sql), so a captured
 * signature header replayed with a forged body is refused by another replica and after a restart;
 * the vendor's own retry (same header, same body) is still accepted.
 */
describe('HMS nonce memory across receivers', () => {
  const endpoints = stackEndpoints();
  const prefix = `${uniqueName('rcv-nonce')}.`;
  const topic = topicName('receiptsRaw', prefix);
  const kafka = kafkaClient(endpoints, { clientId: 'nonce-replay-test' });
  const path = `/receipts/hms/${TEST_APP}`;
  let mysql: TestMysql;
  let registry: VendorRegistry;
  let publisher: KafkaReceiptPublisher;
  const running: Array<{ receiver: ReceiptReceiver; pool: Pool }> = [];

  before(async () => {
    const admin = kafka.admin();
    await admin.connect();
    await createTopicsWithLeaders(admin, [{ topic, numPartitions: 1, replicationFactor: 1 }]);
    await admin.disconnect();
    mysql = await createTestMysql('nonces');
    registry = parsingRegistry();
    publisher = new KafkaReceiptPublisher({ endpoints, topic: topicName('receiptsRaw', prefix) });
  });

  after(async () => {
    for (const r of [...running]) await stop(r);
    await publisher?.close();
    await registry?.close();
    await mysql?.drop();
  });

  /** One receiver replica: its own MySQL pool on the shared database, as a separate process would have. */
  async function replica(): Promise<{ port: number; metrics: ReceiptCounters; instance: { receiver: ReceiptReceiver; pool: Pool } }> {
    const url = new URL(endpoints.mysqlUrl);
    url.pathname = `/${mysql.database}`;
    const pool = createPool({ uri: url.toString(), connectionLimit: 2, timezone: 'Z' });
    const metrics = new ReceiptCounters();
    const receiver = new ReceiptReceiver({
      config: compileReceiverConfig({ port: 0, apps: receiptApps() }),
      publisher,
      parse: receiptParserFromRegistry(registry),
      nonces: new MysqlNonceStore({ pool, ttlMs: 600_000 }),
      metrics,
    });
    const instance = { receiver, pool };
    running.push(instance);
    return { port: await receiver.listen(), metrics, instance };
  }

  async function stop(instance: { receiver: ReceiptReceiver; pool: Pool }): Promise<void> {
    const i = running.indexOf(instance);
    if (i < 0) return;
    running.splice(i, 1);
    await instance.receiver.close();
    await instance.pool.end();
  }

  const send = (port: number, body: string, header: string) =>
    rawRequest({ port, head: postHead(path, Buffer.byteLength(body), { 'content-type': 'application/json', 'x-huawei-callback-id': header }), body });

  const genuine: string[] = [];
  const forged: string[] = [];

  test('a header replayed with a forged body is refused by a second receiver and after a restart; the vendor retry is accepted', async () => {
    const a = await replica();
    const b = await replica();
    const now = Date.now();
    const header = hmsCallbackHeader(RECEIPT_SECRETS.hms, now, randomUUID());
    const body = receiptBodies.hms('req-genuine', 'hms-token-1', 0, now);
    assert.equal((await send(a.port, body, header)).status, 200);
    genuine.push(body);

    const forgedBody = receiptBodies.hms('req-victim', 'victim-token', 2, now);
    forged.push(forgedBody);
    assert.equal((await send(b.port, forgedBody, header)).status, 401, 'the second receiver refuses the replay');
    assert.equal(b.metrics.rejectedCount('replayed_nonce'), 1);
    assert.equal((await send(b.port, body, header)).status, 200, 'the same callback again is a vendor retry');
    genuine.push(body);

    // Restart: every receiver gone, a new one starts with nothing in memory.
    await stop(a.instance);
    await stop(b.instance);
    const c = await replica();
    assert.equal((await send(c.port, forgedBody, header)).status, 401, 'refused after a restart');
    assert.equal(c.metrics.rejectedCount('replayed_nonce'), 1);
  });

  test('two receivers given one nonce with different bodies at the same moment accept exactly one', async () => {
    const a = await replica();
    const b = await replica();
    const now = Date.now();
    for (let round = 0; round < 5; round++) {
      const header = hmsCallbackHeader(RECEIPT_SECRETS.hms, now, randomUUID());
      const bodies = [receiptBodies.hms(`req-race-${round}-a`, 'hms-token-a', 0, now), receiptBodies.hms(`req-race-${round}-b`, 'hms-token-b', 0, now)];
      const answers = await Promise.all([send(a.port, bodies[0]!, header), send(b.port, bodies[1]!, header)]);
      assert.deepEqual(answers.map((x) => x.status).sort(), [200, 401], `round ${round}`);
      const won = answers[0]!.status === 200 ? 0 : 1;
      genuine.push(bodies[won]!);
      forged.push(bodies[1 - won]!);
    }
  });

  test('push.receipts.raw holds exactly the accepted callbacks', async () => {
    const schemaRegistry = schemaRegistryClient(endpoints);
    const consumer = kafka.consumer({ groupId: uniqueName('nonce-replay') });
    const seen: string[] = [];
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    await new Promise<void>((resolve, reject) => {
      consumer
        .run({
          eachMessage: async ({ message }) => {
            seen.push(Buffer.from(((await schemaRegistry.decode(message.value!)) as ReceiptRawRecord).body).toString('utf8'));
            if (seen.length === genuine.length) resolve();
          },
        })
        .catch(reject);
    });
    await consumer.disconnect();
    assert.deepEqual(seen.sort(), [...genuine].sort());
    for (const f of forged) assert.ok(!seen.includes(f));
  });

  test('expired nonces are swept', async () => {
    const store = new MysqlNonceStore({ pool: mysql.pool, ttlMs: 1_000 });
    const t = Date.now() + 3_600_000;
    assert.equal(await store.check('hms/app', 'n-1', Buffer.from('a'), t), 'new');
    assert.equal(await store.check('hms/app', 'n-1', Buffer.from('b'), t + 500), 'replayed');
    assert.ok((await store.sweep(t + 1_000)) >= 1);
    assert.equal(await store.check('hms/app', 'n-1', Buffer.from('b'), t + 1_500), 'new', 'forgotten after its expiry');
    await store.close();
  });

  test('an expired nonce no longer counts before it is swept; a live one still tells a retry from a replay', async () => {
    const store = new MysqlNonceStore({ pool: mysql.pool, ttlMs: 1_000, sweepIntervalMs: 3_600_000 });
    const t = Date.now() + 7_200_000;
    assert.equal(await store.check('hms/app', 'n-2', Buffer.from('a'), t), 'new');
    assert.equal(await store.check('hms/app', 'n-2', Buffer.from('a'), t + 999), 'duplicate');
    assert.equal(await store.check('hms/app', 'n-2', Buffer.from('b'), t + 1_000), 'new', 'expired at t + 1 000, unswept');
    assert.equal(await store.check('hms/app', 'n-2', Buffer.from('a'), t + 1_500), 'replayed', 'the new body is the one remembered');
    assert.equal(await store.check('hms/app', 'n-2', Buffer.from('b'), t + 1_500), 'duplicate');
    await store.close();
  });
});
