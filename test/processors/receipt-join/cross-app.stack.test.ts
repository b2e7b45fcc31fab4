import { after, before, beforeEach, afterEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import type { RowDataPacket } from 'mysql2/promise';
import { buildReceiptTopology } from '../../../pipeline/apps/receipts.ts';
import { rawAvroValueSerdes } from '../../../pipeline/serdes.ts';
import type { PushReceipt, ReceiptRaw } from '../../../processors/receipt-join/records.ts';
import type { PushOutcome, TokenReport } from '../../../processors/model/records.ts';
import { receiptParsersFromRegistry } from '../../../receipts/parsers.ts';
import { MysqlTaskStatusWriter } from '../../../sinks/mysql/task-status.ts';
import { MysqlTokenWriter } from '../../../sinks/mysql/tokens.ts';
import { TopologyTestDriver } from '../../../topology/test-driver.ts';
import { createTestMysql, type TestMysql } from '../../support/test-mysql.ts';
import { TOPICS, T0 } from '../receipts-harness.ts';
import { parsingRegistry, receiptBodies, TEST_APP } from '../../receipts/support.ts';

/** The app whose receipt credentials the attacker holds; the victim's tasks belong to TEST_APP. */
const OTHER_APP = 'im-other';

/**
 * A receipt applies only to tasks of the app in its receipt URL (the receiver stamps `app_id` from
 * the path, receipts/server.ts). The receipts application on the TopologyTestDriver, writing task
 * status and tokens to a real MariaDB database.
 */
describe('cross-app receipts', () => {
  let mysql: TestMysql;
  let driver: TopologyTestDriver;
  let registry: ReturnType<typeof parsingRegistry>;
  let crossApp: Array<[string, string | null]>;

  before(async () => {
    mysql = await createTestMysql('crossapp');
  });
  after(async () => {
    await mysql?.drop();
  });
  beforeEach(() => {
    crossApp = [];
    registry = parsingRegistry();
    const topology = buildReceiptTopology({
      valueSerdes: rawAvroValueSerdes(),
      parsers: receiptParsersFromRegistry(registry),
      join: { taskStatus: new MysqlTaskStatusWriter({ pool: mysql.pool }) },
      tokens: { tokens: new MysqlTokenWriter({ pool: mysql.pool }) },
      listener: { crossApp: (vendor: string, appId: string | null) => crossApp.push([vendor, appId]) },
    });
    driver = new TopologyTestDriver(topology, { startWallClockMs: T0 });
  });
  afterEach(async () => {
    await driver.close();
    await registry.close();
  });

  const now = () => driver.wallClockTimeMs();

  async function victim(device: string, task: string, token: string, requestId: string): Promise<void> {
    const uid = `uid-${device}`;
    await mysql.pool.query('INSERT INTO im_push_task (task_id, uid, conv_id, seq, device_id, vendor, status) VALUES (?, ?, ?, ?, ?, ?, 1)', [
      task,
      uid,
      'conv-1',
      1,
      device,
      'hms',
    ]);
    const report: TokenReport = {
      uid,
      device_id: device,
      platform: 'android',
      vendor: 'hms',
      app_id: TEST_APP,
      token,
      reported_at: now() - 1000,
      state: 'VALID',
      source: 'CLIENT',
      reason: null,
      manufacturer: 'huawei',
    };
    await driver.pipeInput(TOPICS.tokens, uid, report);
    const outcome: PushOutcome = {
      event_id: `ev-${task}`,
      task_id: task,
      uid,
      device_id: device,
      conv_id: 'conv-1',
      seq: 1,
      msg_id: `msg-${task}`,
      app_id: TEST_APP,
      platform: 'android',
      vendor: 'hms',
      stage: 'fan-out',
      status: 'ACCEPTED',
      reason: null,
      code: null,
      vendor_message_id: requestId,
      collapse_id: null,
      attempts: 1,
      persisted_at: now() - 100,
      at: now(),
      latency_ms: 100,
    };
    await driver.pipeInput(TOPICS.outcomes, uid, outcome);
  }

  /** A verified HMS callback as the receiver hands it on from `/receipts/hms/<appId>`. */
  async function receipt(appId: string, requestId: string, token: string, status: number): Promise<void> {
    const body = Buffer.from(receiptBodies.hms(requestId, token, status, now()));
    const raw: ReceiptRaw = {
      receipt_id: createHash('sha256').update('hms\n').update(body).digest('hex'),
      vendor: 'hms',
      app_id: appId,
      content_type: 'application/json',
      body,
      received_at: now(),
    };
    await driver.pipeInput(TOPICS.receiptsRaw, 'hms', raw);
  }

  async function taskStatus(task: string): Promise<number> {
    const [rows] = await mysql.pool.query<RowDataPacket[]>('SELECT status FROM im_push_task WHERE task_id = ?', [task]);
    return rows[0]!.status as number;
  }

  async function tokenStatus(device: string): Promise<number> {
    const [rows] = await mysql.pool.query<RowDataPacket[]>('SELECT status FROM im_push_token WHERE device_id = ? AND vendor = ?', [device, 'hms']);
    return rows[0]!.status as number;
  }

  const receipts = () => driver.readAllOutputs<string, PushReceipt>(TOPICS.receipts).map((r) => r.value);
  const invalidations = () => driver.readAllOutputs<string, TokenReport>(TOPICS.tokens).filter((r) => r.value.state === 'INVALID');

  test("another app's dead-token and failure receipts change neither the task nor the token, and are counted", async () => {
    await victim('d1', 'task-1', 'tok-1', 'req-1');
    await receipt(OTHER_APP, 'req-1', 'tok-1', 2); // dead token
    for (let i = 0; i < 3; i++) await receipt(OTHER_APP, 'req-1', 'tok-1', 6 + i); // failures
    assert.deepEqual(receipts(), [], 'nothing reaches push.receipts');
    assert.deepEqual(invalidations(), []);
    assert.equal(await taskStatus('task-1'), 1, 'the task is still submitted');
    assert.equal(await tokenStatus('d1'), 1, 'the token is still valid');
    assert.equal(crossApp.length, 4);
    assert.deepEqual(crossApp[0], ['hms', OTHER_APP]);

    await receipt(TEST_APP, 'req-1', 'tok-1', 0);
    const [own] = receipts();
    assert.deepEqual([own?.task_id, own?.status, own?.app_id], ['task-1', 'DELIVERED', TEST_APP], "the app's own receipt still applies");
    assert.equal(await taskStatus('task-1'), 2);
  });

  test("another app's receipt that arrives before the submission neither applies nor shadows the app's own", async () => {
    await receipt(OTHER_APP, 'req-2', 'tok-2', 2);
    await receipt(TEST_APP, 'req-2', 'tok-2', 2);
    await driver.advanceWallClockTime(1000);
    await victim('d2', 'task-2', 'tok-2', 'req-2');
    const out = receipts();
    assert.equal(out.length, 1, 'only the own receipt is matched');
    assert.deepEqual([out[0]!.app_id, out[0]!.status], [TEST_APP, 'DEAD_TOKEN']);
    assert.equal(crossApp.length, 1);
    assert.equal(await taskStatus('task-2'), 3);
    assert.equal(invalidations().length, 1, 'the genuine dead-token receipt invalidates');
  });
});
