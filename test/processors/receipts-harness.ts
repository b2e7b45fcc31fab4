import { createHash } from 'node:crypto';
import type { RowDataPacket } from 'mysql2/promise';
import { buildReceiptTopology, receiptsByMessageTopic, receiptsByUidTopic } from '../../pipeline/apps/receipts.ts';
import { rawAvroValueSerdes } from '../../pipeline/serdes.ts';
import { TOPICS as PIPELINE_TOPICS } from '../../pipeline/topics.ts';
import type { PushReceipt, ReceiptRaw } from '../../processors/receipt-join/records.ts';
import type { ReceiptJoinOptions } from '../../processors/receipt-join/join.ts';
import type { PushOutcome, TokenReport } from '../../processors/model/records.ts';
import { receiptRawKey, recipientField } from '../../processors/model/receipt-route.ts';
import type { TokenLifecycleOptions } from '../../processors/token-lifecycle/lifecycle.ts';
import { receiptParsersFromRegistry } from '../../receipts/parsers.ts';
import { MysqlTaskStatusWriter } from '../../sinks/mysql/task-status.ts';
import { MysqlTokenWriter } from '../../sinks/mysql/tokens.ts';
import { TopologyTestDriver } from '../../topology/test-driver.ts';
import type { Topology } from '../../topology/builder.ts';
import { parsingRegistry, receiptBodies, TEST_APP } from '../receipts/support.ts';
import { after, afterEach, before, beforeEach } from 'node:test';
import { createTestMysql, type TestMysql } from '../support/test-mysql.ts';

export const TOPICS = {
  receiptsRaw: 'push.receipts.raw',
  outcomes: 'push.outcomes',
  tokens: 'push.tokens',
  receipts: 'push.receipts',
  byMessage: receiptsByMessageTopic(),
  byUid: receiptsByUidTopic(),
} as const;
export const DAY = 86_400_000;
export const T0 = Date.UTC(2026, 10, 1, 0, 0, 0);

export interface TokenRowView {
  token: string;
  status: number;
  invalid_reason: string | null;
  platform: string;
}

/** The receipts application on the TopologyTestDriver, writing to a real MariaDB database. */
export class ReceiptsHarness {
  readonly driver: TopologyTestDriver;
  /** The receipts topology the driver runs (for tests that run its tasks themselves). */
  readonly topology: Topology;
  private readonly registry = parsingRegistry();
  private readonly storeNames: string[];
  private readonly counted = new Map<string, number>();

  constructor(
    readonly mysql: TestMysql,
    tokenOptions: Partial<TokenLifecycleOptions> = {},
    joinOptions: Partial<ReceiptJoinOptions> = {},
  ) {
    this.topology = buildReceiptTopology({
      valueSerdes: rawAvroValueSerdes(),

      parsers: receiptParsersFromRegistry(this.registry),
      join: { taskStatus: new MysqlTaskStatusWriter({ pool: mysql.pool }), retentionMs: 7 * DAY, pendingMs: 10 * 60_000, ...joinOptions },
      tokens: { tokens: new MysqlTokenWriter({ pool: mysql.pool }), sweepIntervalMs: 3_600_000, ...tokenOptions },
    });
    this.driver = new TopologyTestDriver(this.topology, { startWallClockMs: T0, dlqTopic: PIPELINE_TOPICS.dlq.name });
    this.storeNames = [...this.topology.stores.keys()];
  }

  /**
   * Kafka records the application produced since the previous call, by topic (output topics, the
   * internal by-message and by-uid topics, and each store's changelog), as an operator would count
   * them from the topics' end offsets. Reads (and so empties) the output queues.
   */
  produced(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const topic of [TOPICS.byMessage, TOPICS.byUid, TOPICS.receipts, TOPICS.tokens]) {
      const n = this.driver.readAllOutputs(topic).length;
      if (n > 0) out[topic] = n;
    }
    for (const store of this.storeNames) {
      const total = this.driver.changelog(store).length;
      const n = total - (this.counted.get(store) ?? 0);
      this.counted.set(store, total);
      if (n > 0) out[`${store}-changelog`] = n;
    }
    return out;
  }

  now(): number {
    return this.driver.wallClockTimeMs();
  }

  async advance(ms: number): Promise<void> {
    await this.driver.advanceWallClockTime(ms);
  }

  async report(device: string, token: string, options: { vendor?: string; uid?: string; platform?: string; at?: number } = {}): Promise<void> {
    const uid = options.uid ?? `uid-${device}`;
    const report: TokenReport = {
      uid,
      device_id: device,
      platform: options.platform ?? 'android',
      vendor: options.vendor ?? 'hms',
      app_id: TEST_APP,
      token,
      reported_at: options.at ?? this.now(),
      state: 'VALID',
      source: 'CLIENT',
      reason: null,
      manufacturer: 'huawei',
    };
    await this.driver.pipeInput(TOPICS.tokens, uid, report);
  }

  /** The fan-out's record of a vendor acceptance (or another status) for a task on a device. */
  async outcome(
    device: string,
    task: string,
    status: PushOutcome['status'],
    options: { vendor?: string; vendorMessageId?: string; reason?: string; receiptsByUid?: boolean } = {},
  ): Promise<void> {
    const uid = `uid-${device}`;
    const outcome: PushOutcome = {
      event_id: `ev-${task}-${status}`,
      task_id: task,
      uid,
      device_id: device,
      conv_id: 'conv-1',
      seq: 1,
      msg_id: `msg-${task}`,
      app_id: TEST_APP,
      platform: 'android',
      vendor: options.vendor ?? 'hms',
      stage: 'fan-out',
      status,
      reason: options.reason ?? null,
      code: null,
      vendor_message_id: options.vendorMessageId ?? null,
      collapse_id: null,
      attempts: 1,
      persisted_at: this.now() - 100,
      at: this.now(),
      latency_ms: 100,
      ...(options.receiptsByUid ? { receipts_by_uid: true } : {}),
    };
    await this.driver.pipeInput(TOPICS.outcomes, uid, outcome);
  }

  /**
   * An HMS receipt callback as the receiver hands it on: status 0 delivered, 2/5 dead token, others
   * failed. `biTag`: the push's callback parameter, echoed (processors/model/receipt-route.ts).
   * `key`: the record's key, by default the receiver's (the uid `biTag` names, else the vendor).
   */
  async hmsReceipt(
    requestId: string,
    token: string,
    status: number,
    at = this.now(),
    biTag = '',
    key = receiptRawKey('hms', [recipientField(biTag)]),
  ): Promise<void> {
    const body = Buffer.from(receiptBodies.hms(requestId, token, status, at, biTag));
    const raw: ReceiptRaw = {
      receipt_id: createHash('sha256').update('hms\n').update(body).digest('hex'),
      vendor: 'hms',
      app_id: TEST_APP,
      content_type: 'application/json',
      body,
      received_at: this.now(),
    };
    await this.driver.pipeInput(TOPICS.receiptsRaw, key, raw);
  }

  async tokenRow(device: string, vendor = 'hms'): Promise<TokenRowView | undefined> {
    const [rows] = await this.mysql.pool.query<RowDataPacket[]>(
      'SELECT token, status, invalid_reason, platform FROM im_push_token WHERE device_id = ? AND vendor = ?',
      [device, vendor],
    );
    return rows[0] as TokenRowView | undefined;
  }

  async taskStatus(task: string): Promise<number | undefined> {
    const [rows] = await this.mysql.pool.query<RowDataPacket[]>('SELECT status FROM im_push_task WHERE task_id = ?', [task]);
    return rows[0]?.status as number | undefined;
  }

  async insertTask(task: string, device: string, status = 1): Promise<void> {
    await this.mysql.pool.query('INSERT INTO im_push_task (task_id, uid, conv_id, seq, device_id, vendor, status) VALUES (?, ?, ?, ?, ?, ?, ?)', [
      task,
      `uid-${device}`,
      'conv-1',
      Math.floor(Math.random() * 1e9),
      device,
      'hms',
      status,
    ]);
  }

  invalidations(): TokenReport[] {
    return this.driver
      .readAllOutputs<string, TokenReport>(TOPICS.tokens)
      .map((r) => r.value)
      .filter((v) => v.state === 'INVALID');
  }

  receipts(): PushReceipt[] {
    return this.driver.readAllOutputs<string, PushReceipt>(TOPICS.receipts).map((r) => r.value);
  }

  async close(): Promise<void> {
    await this.driver.close();
    await this.registry.close();
  }
}

/**
 * Hooks of a receipts suite: a fresh MariaDB database for the suite (dropped after it) and a new
 * harness on it for every test (closed after it). `use` receives each test's harness.
 */
export function useReceiptsHarness(name: string, use: (harness: ReceiptsHarness) => void, joinOptions: Partial<ReceiptJoinOptions> = {}): void {
  let mysql: TestMysql | undefined;
  let harness: ReceiptsHarness | undefined;
  before(async () => {
    mysql = await createTestMysql(name);
  });
  after(async () => {
    await mysql?.drop();
  });
  beforeEach(() => {
    harness = new ReceiptsHarness(mysql!, {}, joinOptions);
    use(harness);
  });
  afterEach(async () => {
    await harness?.close();
  });
}
