import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { request } from 'node:http';
import { kafkaClient } from '../../common/kafka-client.ts';
import { schemaRegistryClient } from '../../common/registry-client.ts';
import { compileReceiverConfig } from '../../receipts/config.ts';
import { ReceiptCounters } from '../../receipts/metrics.ts';
import { receiptParserFromRegistry } from '../../receipts/parsers.ts';
import { MemoryNonceStore } from '../../receipts/nonces.ts';
import { KafkaReceiptPublisher, type ReceiptRawRecord } from '../../receipts/publisher.ts';
import { ReceiptReceiver } from '../../receipts/server.ts';
import { hmsCallbackHeader } from '../../sinks/vendors/hms/receipts.ts';
import { topicName } from '../../pipeline/topics.ts';
import { recipientParam } from '../../processors/model/receipt-route.ts';
import type { VendorRegistry } from '../../sinks/vendors/registry.ts';
import { stackEndpoints, uniqueName } from '../support/stack.ts';
import { RECEIPT_SECRETS, TEST_APP, parsingRegistry, receiptApps, receiptBodies } from './support.ts';
import { createTopicsWithLeaders } from '../../topology/create-topics.ts';

interface Answer {
  status: number;
  body: string;
}

/** Posts with node:http; `chunked` sends the body without a content-length. */
function post(port: number, path: string, body: string | Buffer, headers: Record<string, string> = {}, chunked = false): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const data = Buffer.from(body);
    const req = request(
      { host: '127.0.0.1', port, path, method: 'POST', headers: chunked ? headers : { ...headers, 'content-length': String(data.length) } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
      },
    );
    req.on('error', (error) => (/EPIPE|ECONNRESET/.test(String((error as NodeJS.ErrnoException).code)) ? undefined : reject(error)));
    if (chunked) {
      for (let i = 0; i < data.length; i += 1024) req.write(data.subarray(i, i + 1024));
      req.end();
    } else req.end(data);
  });
}

describe('receipt receiver', () => {
  const endpoints = stackEndpoints();
  const prefix = `${uniqueName('receipts')}.`;
  const topic = topicName('receiptsRaw', prefix);
  const kafka = kafkaClient(endpoints, { clientId: 'receiver-test' });
  const metrics = new ReceiptCounters();
  let registry: VendorRegistry;
  let publisher: KafkaReceiptPublisher;
  let receiver: ReceiptReceiver;
  let port: number;
  let now = Date.now();

  before(async () => {
    const admin = kafka.admin();
    await admin.connect();
    await createTopicsWithLeaders(admin, [{ topic, numPartitions: 1, replicationFactor: 1 }]);
    await admin.disconnect();
    registry = parsingRegistry();
    publisher = new KafkaReceiptPublisher({ endpoints, topic: topicName('receiptsRaw', prefix) });
    receiver = new ReceiptReceiver({
      config: compileReceiverConfig({ port: 0, maxBodyBytes: 4096, apps: receiptApps() }),
      publisher,
      parse: receiptParserFromRegistry(registry),
      nonces: new MemoryNonceStore(600_000),
      metrics,
      now: () => now,
    });
    port = await receiver.listen();
  });

  after(async () => {
    await receiver?.close();
    await publisher?.close();
    await registry?.close();
  });

  const genuine: string[] = [];
  const forged: string[] = [];

  test('genuine callbacks of every vendor are answered 200 after Kafka took them', async () => {
    now = Date.now();
    const hms = receiptBodies.hms('req-1', 'hms-token-1', 0, now, recipientParam('u-7'));
    const hmsHeader = hmsCallbackHeader(RECEIPT_SECRETS.hms, now, randomUUID());
    const cases: Array<[string, string, Record<string, string>]> = [
      [`/receipts/hms/${TEST_APP}`, hms, { 'content-type': 'application/json', 'x-huawei-callback-id': hmsHeader }],
      [
        `/receipts/xiaomi/${TEST_APP}?key=${RECEIPT_SECRETS.xiaomi}`,
        receiptBodies.xiaomi('mi-1', 'regid-1', 1, now),
        { 'content-type': 'application/x-www-form-urlencoded' },
      ],
      [
        `/receipts/oppo/${TEST_APP}?key=${RECEIPT_SECRETS.oppo}`,
        receiptBodies.oppo('op-1', 'oppo-reg-1', 'push_arrive', now),
        { 'content-type': 'application/json' },
      ],
      [`/receipts/vivo/${TEST_APP}?key=${RECEIPT_SECRETS.vivo}`, receiptBodies.vivo('vv-1', 'vivo-reg-1', 1, now), { 'content-type': 'application/json' }],
    ];
    for (const [path, body, headers] of cases) {
      const answer = await post(port, path, body, headers);
      assert.equal(answer.status, 200, `${path}: ${answer.body}`);
      genuine.push(body);
    }
    assert.equal(
      JSON.parse((await post(port, `/receipts/hms/${TEST_APP}`, hms, { 'x-huawei-callback-id': hmsHeader })).body).errno,
      '0',
      'a vendor retry of the same signed callback is accepted',
    );
    genuine.push(hms);
    assert.equal(metrics.acceptedCallbacks.get('hms'), 2);
    assert.equal(metrics.acceptedReceipts.get('xiaomi'), 1);
  });

  test('forged, unsigned, stale, replayed, malformed and oversized callbacks get 4xx and are counted', async () => {
    now = Date.now();
    const body = (tag: string) => {
      const b = receiptBodies.hms(`forged-${tag}`, 'victim-token', 2, now);
      forged.push(b);
      return b;
    };
    const wrongKey = { callbackUsername: RECEIPT_SECRETS.hms.callbackUsername, callbackKey: 'not-the-key' };
    const cases: Array<{ name: string; path: string; body: string; headers?: Record<string, string>; chunked?: boolean; status: number; reason: string }> = [
      {
        name: 'bad HMAC',
        path: `/receipts/hms/${TEST_APP}`,
        body: body('hmac'),
        headers: { 'x-huawei-callback-id': hmsCallbackHeader(wrongKey, now, randomUUID()) },
        status: 401,
        reason: 'bad_signature',
      },
      {
        name: 'tampered HMAC value',
        path: `/receipts/hms/${TEST_APP}`,
        body: body('tamper'),
        headers: { 'x-huawei-callback-id': hmsCallbackHeader(RECEIPT_SECRETS.hms, now, 'n-1').replace('nonce=n-1', 'nonce=n-2') },
        status: 401,
        reason: 'bad_signature',
      },
      { name: 'unsigned', path: `/receipts/hms/${TEST_APP}`, body: body('unsigned'), status: 401, reason: 'missing_signature' },
      {
        name: 'stale signature',
        path: `/receipts/hms/${TEST_APP}`,
        body: body('stale'),
        headers: { 'x-huawei-callback-id': hmsCallbackHeader(RECEIPT_SECRETS.hms, now - 3_600_000, randomUUID()) },
        status: 401,
        reason: 'stale_signature',
      },
      {
        name: 'wrong shared secret',
        path: `/receipts/xiaomi/${TEST_APP}?key=${RECEIPT_SECRETS.oppo}`,
        body: receiptBodies.xiaomi('forged-mi', 'regid-9', 16, now),
        status: 401,
        reason: 'bad_secret',
      },
      {
        name: 'no shared secret',
        path: `/receipts/oppo/${TEST_APP}`,
        body: receiptBodies.oppo('forged-op', 'oppo-reg-9', 'regid_invalid', now),
        status: 401,
        reason: 'missing_secret',
      },
      { name: 'malformed body', path: `/receipts/vivo/${TEST_APP}?key=${RECEIPT_SECRETS.vivo}`, body: '{"not":', status: 400, reason: 'malformed' },
      {
        name: 'oversized (declared)',
        path: `/receipts/oppo/${TEST_APP}?key=${RECEIPT_SECRETS.oppo}`,
        body: 'x'.repeat(5000),
        status: 413,
        reason: 'oversized',
      },
      {
        name: 'oversized (chunked)',
        path: `/receipts/vivo/${TEST_APP}?key=${RECEIPT_SECRETS.vivo}`,
        body: receiptBodies.vivo('forged-big', 'r'.repeat(6000), 2, now),
        chunked: true,
        status: 413,
        reason: 'oversized',
      },
      { name: 'unknown app', path: `/receipts/hms/other-app`, body: body('app'), status: 401, reason: 'unknown_app' },
    ];
    for (const c of cases) {
      const answer = await post(port, c.path, c.body, c.headers, c.chunked);
      assert.equal(answer.status, c.status, `${c.name}: ${answer.body}`);
      // Authentication failures all read alike; the reason is only in the metrics.
      assert.equal(answer.body, c.status === 401 ? 'unauthorized' : c.reason, c.name);
      forged.push(c.body);
    }
    // A captured genuine header replayed on another body (the HMS signature does not cover the body).
    const header = hmsCallbackHeader(RECEIPT_SECRETS.hms, now, 'captured-nonce');
    assert.equal(
      (await post(port, `/receipts/hms/${TEST_APP}`, receiptBodies.hms('req-2', 'hms-token-2', 0, now), { 'x-huawei-callback-id': header })).status,
      200,
    );
    genuine.push(receiptBodies.hms('req-2', 'hms-token-2', 0, now));
    const replayed = body('replay');
    const answer = await post(port, `/receipts/hms/${TEST_APP}`, replayed, { 'x-huawei-callback-id': header });
    assert.deepEqual(answer, { status: 401, body: 'unauthorized' });

    for (const c of cases) assert.ok(metrics.rejectedCount(c.reason as never) >= 1, `counted ${c.reason}`);
    assert.equal(metrics.rejectedCount('bad_signature', 'hms'), 2);
    assert.equal(metrics.rejectedCount('oversized'), 2);
    assert.equal(metrics.rejectedCount('replayed_nonce'), 1);
  });

  test('exactly the genuine callbacks reached push.receipts.raw, none of the forged ones', async () => {
    const admin = kafka.admin();
    await admin.connect();
    const [offsets] = await admin.fetchTopicOffsets(topic);
    await admin.disconnect();
    assert.equal(Number(offsets!.high), genuine.length, 'records on the topic');

    const schemaRegistry = schemaRegistryClient(endpoints);
    const consumer = kafka.consumer({ groupId: uniqueName('receiver-test') });
    const seen: ReceiptRawRecord[] = [];
    const keys: string[] = [];
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    await new Promise<void>((resolve, reject) => {
      consumer
        .run({
          eachMessage: async ({ message }) => {
            seen.push((await schemaRegistry.decode(message.value!)) as ReceiptRawRecord);
            keys.push(message.key!.toString());
            if (seen.length === genuine.length) resolve();
          },
        })
        .catch(reject);
    });
    await consumer.disconnect();
    const bodies = seen.map((r) => Buffer.from(r.body).toString('utf8'));
    assert.deepEqual(bodies, genuine);
    for (const f of forged) assert.ok(!bodies.includes(f));
    assert.deepEqual([...new Set(seen.map((r) => r.vendor))].sort(), ['hms', 'oppo', 'vivo', 'xiaomi']);
    assert.ok(seen.every((r) => r.app_id === TEST_APP && /^[0-9a-f]{64}$/.test(r.receipt_id)));
    assert.deepEqual(
      seen.map((r, i) => `${r.vendor}:${keys[i]}`),
      ['hms:u-7', 'xiaomi:xiaomi', 'oppo:oppo', 'vivo:vivo', 'hms:u-7', 'hms:hms'],
      'keyed by the user the receipts name (the first HMS callback and its retry), else by vendor',
    );
  });
});
