import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { kafkaClient } from '../../common/kafka-client.ts';
import { compileReceiverConfig, readReceiverConfig, type ReceiptReceiverOptions } from '../../receipts/config.ts';
import { ReceiptCounters } from '../../receipts/metrics.ts';
import { MemoryNonceStore } from '../../receipts/nonces.ts';
import { receiptParserFromRegistry } from '../../receipts/parsers.ts';
import { KafkaReceiptPublisher } from '../../receipts/publisher.ts';
import { ReceiptReceiver } from '../../receipts/server.ts';
import { hmsCallbackHeader } from '../../sinks/vendors/hms/receipts.ts';
import { topicName } from '../../pipeline/topics.ts';
import type { VendorRegistry } from '../../sinks/vendors/registry.ts';
import { stackEndpoints, uniqueName } from '../support/stack.ts';
import { openRaw, postHead, rawRequest, readRaw } from './raw-http.ts';
import { RECEIPT_SECRETS, TEST_APP, parsingRegistry, receiptApps, receiptBodies } from './support.ts';
import { createTopicsWithLeaders } from '../../topology/create-topics.ts';

/**
 * The receiver refuses before it reads: credentials are checked on the headers, unknown apps look
 * like bad credentials, and connection caps, request rates and header and body timeouts hold.
 * Loopback only; extra clients are other 127.0.0.x source addresses.
 */
describe('receipt receiver limits', () => {
  const endpoints = stackEndpoints();
  const prefix = `${uniqueName('rcv-limits')}.`;
  const kafka = kafkaClient(endpoints, { clientId: 'receiver-limits-test' });
  let registry: VendorRegistry;
  let publisher: KafkaReceiptPublisher;
  const receivers: ReceiptReceiver[] = [];

  before(async () => {
    const admin = kafka.admin();
    await admin.connect();
    await createTopicsWithLeaders(admin, [{ topic: topicName('receiptsRaw', prefix), numPartitions: 1, replicationFactor: 1 }]);
    await admin.disconnect();
    registry = parsingRegistry();
    publisher = new KafkaReceiptPublisher({ endpoints, topic: topicName('receiptsRaw', prefix) });
  });

  after(async () => {
    for (const r of receivers) await r.close();
    await publisher?.close();
    await registry?.close();
  });

  async function start(options: Partial<ReceiptReceiverOptions> = {}): Promise<{ port: number; metrics: ReceiptCounters }> {
    const metrics = new ReceiptCounters();
    const receiver = new ReceiptReceiver({
      config: compileReceiverConfig({ port: 0, apps: receiptApps(), ...options }),
      publisher,
      parse: receiptParserFromRegistry(registry),
      nonces: new MemoryNonceStore(600_000),
      metrics,
    });
    receivers.push(receiver);
    return { port: await receiver.listen(), metrics };
  }

  test('an unknown app and a known app without credentials get identical answers, for every vendor', async () => {
    const { port, metrics } = await start();
    const body = receiptBodies.xiaomi('mi-1', 'regid-1', 1, Date.now());
    for (const vendor of ['hms', 'xiaomi', 'oppo', 'vivo']) {
      const answers = [];
      for (const path of [
        `/receipts/${vendor}/${TEST_APP}`,
        `/receipts/${vendor}/no-such-app`,
        `/receipts/${vendor}/${TEST_APP}?key=wrong-key-0123456789`,
        `/receipts/${vendor}/no-such-app?key=wrong-key-0123456789`,
      ]) {
        answers.push(await rawRequest({ port, head: postHead(path, body.length), body }));
      }
      for (const a of answers.slice(1)) assert.deepEqual(a, answers[0], `${vendor}: same status, headers and body`);
      assert.equal(answers[0]!.status, 401);
    }
    assert.equal(metrics.rejectedCount('unknown_app'), 8, 'the reason is still told apart in the metrics');
  });

  test('credentials are checked before the body: a declared 1 MiB body with a wrong key is answered without being sent', async () => {
    const { port, metrics } = await start();
    const answer = await rawRequest({ port, head: postHead(`/receipts/oppo/${TEST_APP}?key=wrong-key-0123456789`, 1_048_576), waitMs: 5_000 });
    assert.equal(answer.status, 401);
    assert.ok(answer.closedByServer, 'and the connection is closed');
    const hms = await rawRequest({
      port,
      head: postHead(`/receipts/hms/${TEST_APP}`, 1_048_576, {
        'x-huawei-callback-id': hmsCallbackHeader({ ...RECEIPT_SECRETS.hms, callbackKey: 'wrong' }, Date.now(), randomUUID()),
      }),
      waitMs: 5_000,
    });
    assert.equal(hms.status, 401);
    assert.equal(metrics.rejectedCount('bad_secret') + metrics.rejectedCount('bad_signature'), 2);
  });

  test('a stalled body of an authenticated callback is cut at the body timeout (408) and closed', async () => {
    const { port, metrics } = await start({ bodyTimeoutMs: 300 });
    const answer = await rawRequest({ port, head: postHead(`/receipts/vivo/${TEST_APP}?key=${RECEIPT_SECRETS.vivo}`, 4096), body: '{"task', waitMs: 20_000 });
    assert.deepEqual([answer.status, answer.body, answer.closedByServer], [408, 'body_timeout', true]);
    assert.equal(metrics.rejectedCount('body_timeout'), 1);
  });

  test('headers trickled a byte at a time are cut at the headers timeout', async () => {
    const { port, metrics } = await start({ headersTimeoutMs: 300 });
    const socket = await openRaw({ port, head: 'POST /receipts/vivo/', endHeaders: false });
    const answer = readRaw(socket, 20_000);
    // Bounded: at most 100 bytes, one each 50 ms, stopping when the server closes.
    for (let i = 0; i < 100 && !socket.destroyed && socket.readyState === 'open'; i++) {
      socket.write('x');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const result = await answer;
    assert.equal(result.status, 0, 'no answer');
    assert.ok(result.closedByServer, 'the server closed the connection');
    assert.equal(metrics.refusedConnections.get('headers_timeout'), 1);
  });

  test('connections are capped per client; another client is still served', async () => {
    const { port, metrics } = await start({ maxConnectionsPerClient: 5 });
    const idle = await Promise.all(
      Array.from({ length: 8 }, () => openRaw({ port, head: 'GET /health HTTP/1.1\r\nhost: x\r\nx-pad: 1', endHeaders: false, from: '127.0.0.2' })),
    );
    const answers = idle.map((s) => readRaw(s, 1_500));
    const other = await rawRequest({ port, head: 'GET /health HTTP/1.1\r\nhost: x\r\nconnection: close', from: '127.0.0.3' });
    assert.equal(other.status, 200, 'another client is served');
    const results = await Promise.all(answers);
    assert.equal(results.filter((r) => r.closedByServer).length, 3, 'the three over the cap were closed at once');
    assert.equal(metrics.refusedConnections.get('max_client_connections'), 3);
  });

  test("a client over its request rate gets 429 before its credentials are looked at; other clients don't", async () => {
    const { port, metrics } = await start({ clientRequestsPerSecond: 5 });
    const statuses: number[] = [];
    for (let i = 0; i < 12; i++)
      statuses.push((await rawRequest({ port, head: postHead(`/receipts/oppo/${TEST_APP}?key=wrong-key-0123456789`, 0), from: '127.0.0.4' })).status);
    assert.ok(
      statuses.slice(0, 5).every((s) => s === 401),
      statuses.join(','),
    );
    assert.ok(statuses.includes(429), statuses.join(','));
    assert.ok(metrics.rejectedCount('rate_limited') >= 1);
    assert.equal((await rawRequest({ port, head: 'GET /health HTTP/1.1\r\nhost: x\r\nconnection: close', from: '127.0.0.5' })).status, 200);
  });

  test('a bad PUSH_RECEIPTS_* value fails at start naming its key', () => {
    const env = { PUSH_RECEIPTS_CONFIG: appsFile() };
    assert.equal(readReceiverConfig(env).bodyTimeoutMs, 10_000, 'the defaults are valid');
    const cases: Array<[string, string]> = [
      ['PUSH_RECEIPTS_BODY_TIMEOUT_MS', 'ten'],
      ['PUSH_RECEIPTS_HEADERS_TIMEOUT_MS', '10'],
      ['PUSH_RECEIPTS_MAX_CONNECTIONS', '0'],
      ['PUSH_RECEIPTS_MAX_CONNECTIONS_PER_CLIENT', '-1'],
      ['PUSH_RECEIPTS_CLIENT_REQUESTS_PER_SECOND', '1.5'],
    ];
    for (const [key, value] of cases) {
      assert.throws(
        () => readReceiverConfig({ ...env, [key]: value }),
        (e: Error) => e.message.startsWith(`${key}:`),
        key,
      );
    }
  });
});

let written: string | undefined;
/** A valid receipt apps file, so that the limit under test is what fails. */
function appsFile(): string {
  if (written) return written;
  const path = join(tmpdir(), `${uniqueName('receipt-apps')}.json`);
  writeFileSync(path, JSON.stringify({ apps: [{ appId: TEST_APP, xiaomi: { sharedSecret: RECEIPT_SECRETS.xiaomi } }] }));
  return (written = path);
}
