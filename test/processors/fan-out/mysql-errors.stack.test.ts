/**
 * MySQL errors in the fan-out (docs/design.md, "Stores"): a row MySQL refuses as data
 * sends only its own dispatch to the DLQ, and the dispatch after it on the same partition is
 * pushed; transient errors (access denied while grants change, read-only after a failover) are
 * retried with backoff until MySQL takes the write, and the worker never stops. The errors come
 * from the stack's MariaDB: a dedicated user whose grants the test takes away and gives back.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import mysql from 'mysql2/promise';
import { parseMysqlUrl } from '../../../migrations/migrate.ts';
import { TOPICS } from '../../../pipeline/topics.ts';
import { createVendorRegistry, type VendorRegistry } from '../../../sinks/vendors/registry.ts';
import { MysqlPushTaskLedger } from '../../../sinks/mysql/tasks.ts';
import { classifyMysqlError } from '../../../sinks/mysql/errors.ts';
import { DLQ_HEADERS } from '../../../topology/dlq.ts';
import { stackEndpoints } from '../../support/stack.ts';
import { startEmulators, type StartedEmulators } from '../../../emulators/index.ts';
import { dispatch, fanOutDriver, taskRow, taskTable } from './support.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('fan-out: MySQL errors by class', () => {
  let em: StartedEmulators;
  let registry: VendorRegistry;
  let db: Awaited<ReturnType<typeof taskTable>>;
  const user = `push_t_${randomBytes(4).toString('hex')}`;
  const password = randomBytes(12).toString('hex');
  let userPool: mysql.Pool;

  before(async () => {
    em = await startEmulators();
    registry = createVendorRegistry(em.appsConfig);
    db = await taskTable();
    const { connection, database } = parseMysqlUrl(stackEndpoints().mysqlUrl);
    await db.pool.query(`CREATE USER '${user}'@'%' IDENTIFIED BY '${password}'`);
    await db.pool.query(`GRANT SELECT ON \`${database}\`.\`${db.table}\` TO '${user}'@'%'`);
    userPool = mysql.createPool({ ...connection, user, password, database, connectionLimit: 2 });
  });
  after(async () => {
    await userPool?.end();
    await db?.pool.query(`DROP USER IF EXISTS '${user}'@'%'`);
    await registry?.close();
    await em?.close();
    await db?.close();
  });

  test('the classification: data errors by code or errno, everything else transient', () => {
    for (const code of ['ER_DATA_TOO_LONG', 'ER_WARN_DATA_OUT_OF_RANGE', 'ER_BAD_NULL_ERROR', 'ER_TRUNCATED_WRONG_VALUE_FOR_FIELD'])
      assert.equal(classifyMysqlError({ code }), 'data', code);
    assert.equal(classifyMysqlError({ code: 'SOMETHING', errno: 1406 }), 'data');
    for (const code of [
      'ECONNREFUSED',
      'ENOTFOUND',
      'EAI_AGAIN',
      'PROTOCOL_CONNECTION_LOST',
      'ER_OPTION_PREVENTS_STATEMENT',
      'ER_READ_ONLY_MODE',
      'ER_ACCESS_DENIED_ERROR',
      'ER_TABLEACCESS_DENIED_ERROR',
      'ER_CON_COUNT_ERROR',
      'ER_LOCK_WAIT_TIMEOUT',
      'ER_LOCK_DEADLOCK',
      'ER_SERVER_SHUTDOWN',
      'ER_QUERY_INTERRUPTED',
      'ER_NEW_CODE',
    ]) {
      assert.equal(classifyMysqlError({ code }), 'transient', code);
    }
  });

  test('a dispatch whose row does not fit goes to the DLQ with the reason; the next one on the partition is pushed', async () => {
    const fo = fanOutDriver(db.pool, db.table, { vendors: registry, backoffInitialMs: 5, backoffMaxMs: 50 });
    try {
      const poison = dispatch({ uid: 'u-poison', device: 'd'.repeat(200), channels: [{ vendor: 'fcm', token: em.token('fcm', 'poison') }] });
      const next = dispatch({ uid: 'u-poison', device: 'd1', seq: 2, channels: [{ vendor: 'fcm', token: em.token('fcm', 'after-poison') }] });
      await fo.send(poison);
      await fo.send(next);
      const dlq = fo.driver.readAllOutputs<string, unknown>(TOPICS.dlq.name);
      assert.equal(dlq.length, 1, 'one DLQ record');
      assert.equal(dlq[0]!.headers?.[DLQ_HEADERS.errorCode], 'MYSQL_ER_DATA_TOO_LONG');
      assert.match(dlq[0]!.headers?.[DLQ_HEADERS.errorMessage] ?? '', /column device_id/);
      assert.equal(dlq[0]!.headers?.[DLQ_HEADERS.sourceOffset], '0', 'the poison record itself, not the one after it');
      assert.deepEqual(
        fo.outcomes().map((o) => [o.task_id, o.status]),
        [[next.task_id, 'ACCEPTED']],
      );
      assert.equal(em.fcm.accepted().filter((r) => r.token === em.token('fcm', 'poison')).length, 0, 'the poison push was never sent');
      assert.equal((await taskRow(db.pool, db.table, next.task_id))!.status, 1);
    } finally {
      await fo.close();
    }
  });

  test('access denied (grants revoked) and read-only after a failover are retried until MySQL takes the write', async () => {
    em.reset();
    const { database } = parseMysqlUrl(stackEndpoints().mysqlUrl);
    const grant = () => db.pool.query(`GRANT INSERT, UPDATE ON \`${database}\`.\`${db.table}\` TO '${user}'@'%'`);
    const retries: string[] = [];
    const ledger = new MysqlPushTaskLedger({
      pool: userPool,
      table: db.table,
      retryInitialDelayMs: 20,
      retryMaxDelayMs: 200,
      listener: { onRetry: (_w, code) => retries.push(code) },
    });
    const fo = fanOutDriver(db.pool, db.table, { vendors: registry, backoffInitialMs: 5, backoffMaxMs: 50 }, ledger);
    try {
      // 1. No INSERT grant: the claim is refused (access denied) until the grant comes back.
      const first = dispatch({ uid: 'u-denied', device: 'd1', channels: [{ vendor: 'fcm', token: em.token('fcm', 'denied') }] });
      const sending = fo.send(first);
      for (const deadline = Date.now() + 10_000; retries.length < 3 && Date.now() < deadline;) await sleep(20);
      assert.ok(retries.length >= 3, `the claim was retried (${retries.join(',')})`);
      assert.deepEqual([...new Set(retries)], ['ER_TABLEACCESS_DENIED_ERROR'], 'access denied, retried');
      assert.equal(em.fcm.received.length, 0, 'nothing is pushed before the task is claimed');
      await grant();
      await sending;
      assert.deepEqual(
        fo.outcomes().map((o) => [o.task_id, o.status]),
        [[first.task_id, 'ACCEPTED']],
      );
      assert.equal((await taskRow(db.pool, db.table, first.task_id))!.status, 1);

      // 2. The server goes read-only (what a failover to a replica looks like to a client without
      // SUPER): ER_OPTION_PREVENTS_STATEMENT, retried until it is writable again.
      retries.length = 0;
      const second = dispatch({ uid: 'u-denied', device: 'd2', channels: [{ vendor: 'fcm', token: em.token('fcm', 'read-only') }] });
      await db.pool.query('SET GLOBAL read_only = 1');
      let sendingSecond: Promise<void> | undefined;
      try {
        sendingSecond = fo.send(second);
        for (const deadline = Date.now() + 10_000; retries.length < 3 && Date.now() < deadline;) await sleep(20);
      } finally {
        await db.pool.query('SET GLOBAL read_only = 0');
      }
      assert.ok(retries.length >= 3, `the claim was retried while read-only (${retries.length})`);
      assert.deepEqual([...new Set(retries)], ['ER_OPTION_PREVENTS_STATEMENT'], 'read-only, retried');
      await sendingSecond;
      assert.deepEqual(
        fo.outcomes().map((o) => [o.task_id, o.status]),
        [[second.task_id, 'ACCEPTED']],
      );
      assert.equal(fo.driver.readAllOutputs(TOPICS.dlq.name).length, 0, 'no transient error sent anything to the DLQ');
    } finally {
      // Whatever failed above, the writes in flight must be able to finish before the driver closes.
      await db.pool.query('SET GLOBAL read_only = 0');
      await grant();
      await fo.close();
    }
  });
});
