import type { VendorJson } from '../../../emulators/common.ts';
import { readFileSync } from 'node:fs';
import mysql from 'mysql2/promise';
import { splitStatements } from '../../../migrations/files.ts';
import { parseMysqlUrl } from '../../../migrations/migrate.ts';
import { buildFanOutTopology } from '../../../pipeline/apps/fan-out.ts';
import type { FanOutOptions } from '../../../processors/fan-out/options.ts';
import { collapseId, taskId } from '../../../processors/model/ids.ts';
import type { PushDispatch, PushOutcome, TokenReport } from '../../../processors/model/records.ts';
import { rawAvroValueSerdes } from '../../../pipeline/serdes.ts';
import { TOPICS } from '../../../pipeline/topics.ts';
import { MysqlPushTaskLedger } from '../../../sinks/mysql/tasks.ts';
import { TopologyTestDriver } from '../../../topology/test-driver.ts';
import { stackEndpoints, uniqueName } from '../../support/stack.ts';
import { after, before } from 'node:test';
import { startEmulators, type StartedEmulators } from '../../../emulators/index.ts';
import { createVendorRegistry, type VendorRegistry } from '../../../sinks/vendors/registry.ts';

/** A pool on the stack's MariaDB and a fresh im_push_task-shaped table (from the migration) for one test file. */
export async function taskTable(): Promise<{ pool: mysql.Pool; table: string; close(): Promise<void> }> {
  const { connection, database } = parseMysqlUrl(stackEndpoints().mysqlUrl);
  const admin = await mysql.createConnection(connection);
  await admin.query(`CREATE DATABASE IF NOT EXISTS \`${database}\``);
  await admin.end();
  const pool = mysql.createPool({ ...connection, database, connectionLimit: 4 });
  const table = uniqueName('im_push_task').replace(/-/g, '_');
  // The table's migrations with its name in place of im_push_task (a plain identifier: letters, digits, _).
  // One connection: 006 keeps its pending changes in session variables between statements.
  const conn = await pool.getConnection();
  try {
    for (const file of ['001_im_push_task.sql', '004_im_push_task_trail.sql', '006_im_push_task_row.sql', '010_im_push_task_claims.sql']) {
      const text = readFileSync(new URL(`../../../migrations/mysql/${file}`, import.meta.url), 'utf8').replace(/\bim_push_task\b/g, table);
      for (const statement of splitStatements(text)) await conn.query(statement);
    }
  } finally {
    conn.release();
  }
  return {
    pool,
    table,
    close: async () => {
      await pool.query(`DROP TABLE IF EXISTS \`${table}\``);
      await pool.end();
    },
  };
}

export interface DispatchInput extends Partial<Omit<PushDispatch, 'channels'>> {
  readonly uid: string;
  readonly device: string;
  readonly channels: ReadonlyArray<{ vendor: string; token: string }>;
}

/** A dispatch as the policy stage writes it. */
export function dispatch(d: DispatchInput): PushDispatch {
  const conv = d.conv_id ?? 'c1';
  const seq = d.seq ?? 1;
  return {
    task_id: taskId(d.uid, conv, seq, d.device),
    uid: d.uid,
    device_id: d.device,
    conv_id: conv,
    seq,
    msg_id: `m-${conv}-${seq}`,
    app_id: 'app-1',
    platform: 'android',
    channels: d.channels.map((c) => ({ ...c, classification: {} })),
    title: 'Alice',
    body: 'See you at 7?',
    badge: seq,
    collapse_id: collapseId(d.uid, conv),
    silent: false,
    kind: 'LEADING',
    merged_count: 1,
    persisted_at: Date.now() - 5,
    decided_at: Date.now(),
    ...Object.fromEntries(Object.entries(d).filter(([k]) => !['device', 'channels'].includes(k))),
  } as PushDispatch;
}

/** The fan-out topology in a TopologyTestDriver with a MySQL ledger on `table` (or the one given). */
export function fanOutDriver(
  pool: mysql.Pool,
  table: string,
  fanOut: Omit<FanOutOptions, 'outputs' | 'ledger'>,
  ledger = new MysqlPushTaskLedger({ pool, table }),
): {
  driver: TopologyTestDriver;
  ledger: MysqlPushTaskLedger;
  send(d: PushDispatch): Promise<void>;
  read(uid: string, convId: string, seq: number): Promise<void>;
  outcomes(): PushOutcome[];
  tokens(): TokenReport[];
  close(): Promise<void>;
} {
  const driver = new TopologyTestDriver(buildFanOutTopology({ valueSerdes: rawAvroValueSerdes(), fanOut: { ...fanOut, ledger } }), {
    startWallClockMs: Date.now(),
    dlqTopic: TOPICS.dlq.name,
  });
  return {
    driver,
    ledger,
    send: (d) => driver.pipeInput(TOPICS.dispatch.name, d.uid, d),
    /** The gateway's READ of a conversation up to `seq` (im.presence). */
    read: (uid, convId, seq) => driver.pipeInput(TOPICS.presence.name, uid, { uid, device_id: 'reader', kind: 'READ', conv_id: convId, seq, at: Date.now() }),
    outcomes: () => driver.readAllOutputs<string, PushOutcome>(TOPICS.outcomes.name).map((r) => ({ ...r.value })),
    tokens: () => driver.readAllOutputs<string, TokenReport>(TOPICS.tokens.name).map((r) => ({ ...r.value })),
    close: async () => {
      await driver.close();
      ledger.close();
    },
  };
}

export async function taskRow(pool: mysql.Pool, table: string, task: string): Promise<VendorJson | undefined> {
  const [rows] = await pool.query(`SELECT * FROM \`${table}\` WHERE task_id = ?`, [task]);
  return (rows as Array<VendorJson>)[0];
}

/**
 * What the fan-out suites share, opened before the suite's tests and closed after them (call it
 * inside `describe`): the vendor emulators (with `apps`, else one app), a vendor registry on them and a task table.
 */
export function fanOutStack(apps?: string[]): {
  readonly em: StartedEmulators;
  readonly registry: VendorRegistry;
  readonly db: Awaited<ReturnType<typeof taskTable>>;
} {
  const stack = {} as { em: StartedEmulators; registry: VendorRegistry; db: Awaited<ReturnType<typeof taskTable>> };
  before(async () => {
    stack.em = await startEmulators(apps ? { apps } : {});
    stack.registry = createVendorRegistry(stack.em.appsConfig);
    stack.db = await taskTable();
  });
  after(async () => {
    await stack.registry.close();
    await stack.em.close();
    await stack.db.close();
  });
  return stack;
}
