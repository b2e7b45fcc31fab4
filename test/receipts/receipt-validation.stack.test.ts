/**
 * Receipts with absurd times (issue: an authenticated receipt stamped 1e20 or 1.5 passed the
 * receiver, sat in the join for its pending window and then failed to be written, stopping the
 * stage on every restart). The receiver refuses them with 400 `invalid_receipt`; produced directly
 * to push.receipts.raw, the receipt-parse stage dead-letters them with the rule; state restored from
 * before these rules drops what it cannot write. docs/design.md, "Ingest validation".
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomUUID } from 'node:crypto';
import { request } from 'node:http';
import { kafkaClient } from '../../common/kafka-client.ts';
import { compileReceiverConfig } from '../../receipts/config.ts';
import { ReceiptCounters } from '../../receipts/metrics.ts';
import { MemoryNonceStore } from '../../receipts/nonces.ts';
import { receiptParserFromRegistry } from '../../receipts/parsers.ts';
import { KafkaReceiptPublisher } from '../../receipts/publisher.ts';
import { ReceiptReceiver } from '../../receipts/server.ts';
import { hmsCallbackHeader } from '../../sinks/vendors/hms/receipts.ts';
import { RECEIPT_JOIN_STORES } from '../../processors/receipt-join/join.ts';
import { type ReceiptRaw } from '../../processors/receipt-join/records.ts';
import { tokenHash } from '../../processors/model/ids.ts';
import { messageKey } from '../../processors/receipt-join/rekey.ts';
import type { MessageEntry } from '../../processors/receipt-join/entry.ts';
import { TOPICS as PIPELINE_TOPICS, topicName } from '../../pipeline/topics.ts';
import { DLQ_HEADERS } from '../../topology/dlq.ts';
import type { VendorRegistry } from '../../sinks/vendors/registry.ts';
import { stackEndpoints, uniqueName } from '../support/stack.ts';
import { DAY, ReceiptsHarness, T0, TOPICS, useReceiptsHarness } from '../processors/receipts-harness.ts';
import { RECEIPT_SECRETS, TEST_APP, parsingRegistry, receiptApps, receiptBodies } from './support.ts';
import { createTopicsWithLeaders } from '../../topology/create-topics.ts';
import { standaloneTask } from '../support/task.ts';

const MINUTE = 60_000;

/** A callback to post: path, body, headers. */
type Callback = readonly [string, string, Record<string, string>];

function post(port: number, path: string, body: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const data = Buffer.from(body);
    const req = request({ host: '127.0.0.1', port, path, method: 'POST', headers: { ...headers, 'content-length': String(data.length) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', reject);
    req.end(data);
  });
}

describe('receipt receiver: receipts with absurd times are refused', () => {
  const endpoints = stackEndpoints();
  const prefix = `${uniqueName('receipt-rules')}.`;
  const topic = topicName('receiptsRaw', prefix);
  const kafka = kafkaClient(endpoints, { clientId: 'receipt-rules-test' });
  const metrics = new ReceiptCounters();
  let registry: VendorRegistry;
  let publisher: KafkaReceiptPublisher;
  let receiver: ReceiptReceiver;
  let port: number;
  const now = Date.now();

  before(async () => {
    const admin = kafka.admin();
    await admin.connect();
    await createTopicsWithLeaders(admin, [{ topic, numPartitions: 1, replicationFactor: 1 }]);
    await admin.disconnect();
    registry = parsingRegistry();
    publisher = new KafkaReceiptPublisher({ endpoints, topic: topicName('receiptsRaw', prefix) });
    receiver = new ReceiptReceiver({
      config: compileReceiverConfig({ port: 0, apps: receiptApps() }),
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

  const hms = (timestamp: number): Callback => [
    `/receipts/hms/${TEST_APP}`,
    receiptBodies.hms(`req-${randomUUID()}`, 'hms-token', 0, timestamp),
    { 'content-type': 'application/json', 'x-huawei-callback-id': hmsCallbackHeader(RECEIPT_SECRETS.hms, now, randomUUID()) },
  ];
  const xiaomi = (timestamp: number): Callback => [
    `/receipts/xiaomi/${TEST_APP}?key=${RECEIPT_SECRETS.xiaomi}`,
    receiptBodies.xiaomi(`mi-${randomUUID()}`, 'regid-1', 1, timestamp),
    { 'content-type': 'application/x-www-form-urlencoded' },
  ];
  const oppo = (timestamp: number): Callback => [
    `/receipts/oppo/${TEST_APP}?key=${RECEIPT_SECRETS.oppo}`,
    receiptBodies.oppo(`op-${randomUUID()}`, 'oppo-reg-1', 'push_arrive', timestamp),
    { 'content-type': 'application/json' },
  ];
  const vivo = (timestamp: number): Callback => [
    `/receipts/vivo/${TEST_APP}?key=${RECEIPT_SECRETS.vivo}`,
    receiptBodies.vivo(`vv-${randomUUID()}`, 'vivo-reg-1', 1, timestamp),
    { 'content-type': 'application/json' },
  ];

  test('1e20, 1.5, an hour ahead or eight days old: 400 invalid_receipt, counted, never on push.receipts.raw; genuine ones pass', async () => {
    const refused: Array<[string, Callback]> = [
      ['hms 1e20', hms(1e20)],
      ['hms 1.5', hms(1.5)],
      ['xiaomi 1e20', xiaomi(1e20)],
      ['oppo 1.5', oppo(1.5)],
      ['vivo an hour ahead', vivo(now + 60 * MINUTE)],
      ['vivo eight days old', vivo(now - 8 * DAY)],
    ];
    for (const [name, [path, body, headers]] of refused) {
      const answer = await post(port, path, body, headers);
      assert.deepEqual(answer, { status: 400, body: 'invalid_receipt' }, name);
    }
    assert.equal(metrics.rejectedCount('invalid_receipt'), refused.length);
    assert.equal(metrics.rejectedCount('invalid_receipt', 'hms'), 2);

    const genuine = [hms(now - 1_000), vivo(now - 2 * DAY), oppo(now + 60_000)];
    for (const [path, body, headers] of genuine) assert.equal((await post(port, path, body, headers)).status, 200, path);

    const admin = kafka.admin();
    await admin.connect();
    const [offsets] = await admin.fetchTopicOffsets(topic);
    await admin.disconnect();
    assert.equal(Number(offsets!.high), genuine.length, 'only the genuine callbacks reached push.receipts.raw');
  });
});

describe('receipt-parse: raw callbacks breaking an ingest rule go to the DLQ', () => {
  let h: ReceiptsHarness;
  useReceiptsHarness('receipt_rules', (harness) => (h = harness));

  /** A raw HMS callback as a producer could write it directly. */
  async function raw(requestId: string, timestamp: number, receivedAt = h.now()): Promise<void> {
    const body = Buffer.from(receiptBodies.hms(requestId, 'tok-1', 0, timestamp));
    const value: ReceiptRaw = {
      receipt_id: createHash('sha256').update(body).digest('hex'),
      vendor: 'hms',
      app_id: TEST_APP,
      content_type: 'application/json',
      body,
      received_at: receivedAt,
    };
    await h.driver.pipeInput(TOPICS.receiptsRaw, 'hms', value);
  }

  function deadLetters(): Array<{ topic: string; message: string }> {
    return h.driver
      .readAllOutputs(PIPELINE_TOPICS.dlq.name)
      .map((r) => ({ topic: r.headers[DLQ_HEADERS.sourceTopic]!, message: r.headers[DLQ_HEADERS.errorMessage]! }));
  }

  const rows: Array<{ name: string; timestamp: (now: number) => number; receivedAt?: (now: number) => number; rule: string }> = [
    { name: 'a receipt time of 1e20', timestamp: () => 1e20, rule: 'epoch_ms' },
    { name: 'a fractional receipt time', timestamp: () => 1.5, rule: 'epoch_ms' },
    { name: 'a receipt time ten minutes after it was received', timestamp: (now) => now + 10 * MINUTE, rule: 'future_skew' },
    { name: 'a receipt time eight days before it was received', timestamp: (now) => now - 8 * DAY, rule: 'past_skew' },
    { name: 'a receive time a day ahead of the stage', timestamp: (now) => now + DAY, receivedAt: (now) => now + DAY, rule: 'future_skew' },
  ];
  for (const row of rows) {
    test(`${row.name} → push.dlq (${row.rule}); the stage survives the pending window and the next receipt matches`, async () => {
      await h.outcome('d1', 'task-1', 'ACCEPTED', { vendorMessageId: 'req-1' });
      await raw('req-1', row.timestamp(h.now()), row.receivedAt?.(h.now()));
      await raw('req-orphan', row.timestamp(h.now()), row.receivedAt?.(h.now()));
      const letters = deadLetters();
      assert.equal(letters.length, 2);
      for (const l of letters) {
        assert.equal(l.topic, TOPICS.receiptsRaw);
        assert.match(l.message, new RegExp(`breaks ingest rule ${row.rule}:`));
      }
      assert.deepEqual(h.receipts(), []);
      // Past the pending window (10 min) and the expiry punctuation: nothing was kept to fail on.
      await h.advance(11 * MINUTE);
      assert.deepEqual(h.receipts(), []);
      await raw('req-1', h.now());
      const [r, ...rest] = h.receipts();
      assert.deepEqual(rest, []);
      assert.deepEqual([r?.matched, r?.task_id, r?.at], [true, 'task-1', h.now()]);
      assert.deepEqual(deadLetters(), []);
    });
  }

  test('a tombstone on push.tokens (compacted) is no poison here: nothing goes to the DLQ and receipts still match', async () => {
    await h.outcome('d1', 'task-1', 'ACCEPTED', { vendorMessageId: 'req-1' });
    await h.driver.pipeRawInput(TOPICS.tokens, Buffer.from('uid-d1'), null);
    assert.deepEqual(deadLetters(), []);
    await raw('req-1', h.now());
    assert.deepEqual(
      h.receipts().map((r) => r.task_id),
      ['task-1'],
    );
  });

  test('pending receipts restored from state written before the rules are dropped, so expiry writes nothing it cannot', async () => {
    let clock = T0;
    const task = standaloneTask(h.topology, 'receipt-rules-restore', () => clock, {
      subtopology: h.topology.subtopologyOfStore(RECEIPT_JOIN_STORES.messages)!,
      dlqTopic: PIPELINE_TOPICS.dlq.name,
    });
    const receipt = (at: number) => ({
      vendor: 'hms',
      vendor_message_id: 'vm-old',
      token_hash: tokenHash('tok-old'),
      status: 'DELIVERED',
      code: '0',
      at,
      received_at: T0 - MINUTE,
      app_id: TEST_APP,
    });
    const legacy: MessageEntry = {
      subs: [],
      assigned: {},
      emitted: [],
      pending: [receipt(1e20) as MessageEntry['pending'][number], receipt(T0 - MINUTE) as MessageEntry['pending'][number]],
      due: T0 + 9 * MINUTE,
    };
    task.stores.get(RECEIPT_JOIN_STORES.messages)!.restore(messageKey('hms', 'vm-old'), Buffer.from(JSON.stringify(legacy)));
    await task.init();
    const kept = (task.stores.get(RECEIPT_JOIN_STORES.messages) as unknown as { get(k: string): MessageEntry | undefined }).get(messageKey('hms', 'vm-old'));
    assert.deepEqual(
      kept?.pending.map((p) => p.at),
      [T0 - MINUTE],
      'only the writable receipt is kept',
    );
    clock = T0 + 10 * MINUTE;
    await task.punctuateWallClock(clock);
    await task.flush();
    const written = task.drainOutputs().records.filter((r) => r.topic === TOPICS.receipts);
    assert.equal(written.length, 1, 'the writable receipt goes out unmatched; the expiry does not fail');
    await task.close();
  });
});
