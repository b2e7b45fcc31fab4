/**
 * Migrations against the stack's real MariaDB and ClickHouse 18.16: each test works in databases of
 * its own (dropped at the end).
 */
import { test, describe, after } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, appendFileSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import mysql from 'mysql2/promise';
import { migrate, parseMysqlUrl, MYSQL_MIGRATIONS_DIR, CLICKHOUSE_MIGRATIONS_DIR } from '../../migrations/migrate.ts';
import { readMigrations, serverAtLeast } from '../../migrations/files.ts';
import { archiveTasks } from '../../migrations/archive.ts';
import { clickhouseQuery } from '../../migrations/clickhouse-http.ts';
import { stackEndpoints, uniqueName } from '../support/stack.ts';

const endpoints = stackEndpoints();
const dbName = (prefix: string) => uniqueName(prefix).replace(/-/g, '_');
const mysqlUrlFor = (db: string) => {
  const url = new URL(endpoints.mysqlUrl);
  url.pathname = `/${db}`;
  return url.toString();
};
const chTarget = (db: string) => ({ url: endpoints.clickhouseUrl, database: db, user: endpoints.clickhouseUser, password: endpoints.clickhousePassword });

const createdMysql: string[] = [];
const createdClickhouse: string[] = [];
const admin = await mysql.createConnection(parseMysqlUrl(endpoints.mysqlUrl).connection);

after(async () => {
  for (const db of createdMysql) await admin.query(`DROP DATABASE IF EXISTS \`${db}\``);
  await admin.end();
  for (const db of createdClickhouse) await clickhouseQuery(chTarget(db), `DROP DATABASE IF EXISTS ${db}`, false);
});

async function fresh(): Promise<{ db: string; url: string }> {
  const db = dbName('mig');
  createdMysql.push(db);
  return { db, url: mysqlUrlFor(db) };
}

describe('migrate (MariaDB + ClickHouse)', () => {
  test('creates the databases, applies every file once in order, and a second run applies nothing', async () => {
    const { db, url } = await fresh();
    const chDb = dbName('migch');
    createdClickhouse.push(chDb);
    const first = await migrate({ mysqlUrl: url, clickhouse: chTarget(chDb) });
    assert.deepEqual(first.mysql, { applied: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11], alreadyApplied: [] });
    // Every ClickHouse file in order (the list grows with new migrations; MySQL's is spelled out above).
    const chFiles = readMigrations(CLICKHOUSE_MIGRATIONS_DIR);
    assert.ok(
      chFiles.every((m, i) => m.version === i + 1),
      'ClickHouse migrations are numbered 1..n',
    );
    // A file for a newer server than the stack's waits, unrecorded (test/sinks/clickhouse/current-engine.test.ts applies them all).
    const server = (await clickhouseQuery(chTarget(chDb), 'SELECT version() FORMAT TabSeparated', false)).trim();
    const chAll = chFiles.filter((m) => !m.requiresServer || serverAtLeast(server, m.requiresServer)).map((m) => m.version);
    const waiting = chFiles.filter((m) => !chAll.includes(m.version)).map((m) => m.version);
    assert.ok(chAll.length >= 6, `${chAll.length} ClickHouse files run on ${server}`);
    assert.deepEqual(first.clickhouse, { applied: chAll, alreadyApplied: [], ...(waiting.length > 0 ? { waiting } : {}) });
    const second = await migrate({ mysqlUrl: url, clickhouse: chTarget(chDb) });
    assert.deepEqual(second.mysql, { applied: [], alreadyApplied: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11] });
    assert.deepEqual(second.clickhouse, { applied: [], alreadyApplied: chAll, ...(waiting.length > 0 ? { waiting } : {}) });

    const [versions] = await admin.query<mysql.RowDataPacket[]>(`SELECT version, name FROM \`${db}\`.schema_migrations ORDER BY version`);
    assert.deepEqual(
      versions.map((r) => `${r.version} ${r.name}`),
      [
        '1 im_push_task',
        '2 im_push_task_archive',
        '3 im_push_token',
        '4 im_push_task_trail',
        '5 push_receipt_nonce',
        '6 im_push_task_row',
        '7 im_push_task_archive_row',
        '8 business_keys',
        '9 push_campaign',
        '10 im_push_task_claims',
        '11 im_push_task_archive_claims',
      ],
    );
    const chVersions = await clickhouseQuery(chTarget(chDb), 'SELECT version FROM schema_migrations ORDER BY version FORMAT TabSeparated');
    assert.deepEqual(chVersions.trim().split('\n'), chAll.map(String));
    const chTables = await clickhouseQuery(
      chTarget(chDb),
      `SELECT name FROM system.tables WHERE database = '${chDb}' AND name = 'push_events' FORMAT TabSeparated`,
    );
    assert.equal(chTables.trim(), 'push_events');
  });

  test('tables are InnoDB utf8mb4 with the design keys; the unique keys hold', async () => {
    const { db, url } = await fresh();
    await migrate({ mysqlUrl: url });
    const [tables] = await admin.query<mysql.RowDataPacket[]>(
      'SELECT TABLE_NAME AS t, ENGINE AS e, TABLE_COLLATION AS c FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? ORDER BY TABLE_NAME',
      [db],
    );
    for (const row of tables) {
      assert.equal(row.e, 'InnoDB', String(row.t));
      assert.match(String(row.c), /^utf8mb4/, String(row.t));
    }
    const [keys] = await admin.query<mysql.RowDataPacket[]>(
      `SELECT TABLE_NAME AS t, INDEX_NAME AS i, GROUP_CONCAT(COLUMN_NAME ORDER BY SEQ_IN_INDEX) AS cols FROM information_schema.STATISTICS
       WHERE TABLE_SCHEMA = ? AND INDEX_NAME IN ('uk_task', 'uk_device_vendor') AND NON_UNIQUE = 0 GROUP BY TABLE_NAME, INDEX_NAME ORDER BY TABLE_NAME`,
      [db],
    );
    assert.deepEqual(
      keys.map((k) => `${k.t}.${k.i}(${k.cols})`),
      ['im_push_task.uk_task(uid,conv_id,seq,device_id)', 'im_push_token.uk_device_vendor(device_id,vendor)'],
    );

    const insert = `INSERT INTO \`${db}\`.im_push_task (task_id, uid, conv_id, seq, device_id) VALUES (?, ?, ?, ?, ?)`;
    await admin.query(insert, ['t-1', 'user-😀', 'c1', 1, 'd1']);
    await admin.query(insert, ['t-2', 'user-😀', 'c1', 1, 'd2']); // another device: another task
    await assert.rejects(admin.query(insert, ['t-3', 'user-😀', 'c1', 1, 'd1']), (e: { code?: string }) => e.code === 'ER_DUP_ENTRY');
    const [stored] = await admin.query<mysql.RowDataPacket[]>(`SELECT uid, status FROM \`${db}\`.im_push_task WHERE task_id = 't-1'`);
    assert.equal(stored[0]?.uid, 'user-😀');
    assert.equal(stored[0]?.status, 0, 'pending by default');

    const token = `INSERT INTO \`${db}\`.im_push_token (uid, device_id, vendor, token, reported_at) VALUES (?, ?, ?, ?, NOW(3))`;
    await admin.query(token, ['u1', 'd1', 'hms', 'a']);
    await admin.query(token, ['u1', 'd1', 'fcm', 'b']);
    await assert.rejects(admin.query(token, ['u1', 'd1', 'hms', 'c']), (e: { code?: string }) => e.code === 'ER_DUP_ENTRY');
  });

  test('a file changed after it was applied fails the run', async () => {
    const { url } = await fresh();
    const dir = mkdtempSync(`${tmpdir()}/migrations-`);
    try {
      cpSync(MYSQL_MIGRATIONS_DIR, dir, { recursive: true });
      await migrate({ mysqlUrl: url, mysqlDir: dir });
      appendFileSync(`${dir}/003_im_push_token.sql`, '\n-- edited\n');
      await assert.rejects(
        migrate({ mysqlUrl: url, mysqlDir: dir }),
        (e: { code?: string; message: string }) => e.code === 'MIGRATION_CHANGED' && /003_im_push_token/.test(e.message),
      );
      const tolerant = await migrate({ mysqlUrl: url, mysqlDir: dir, allowChangedFiles: true });
      assert.deepEqual(tolerant.mysql, { applied: [], alreadyApplied: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11] }, 'allowChangedFiles skips, never re-applies');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('concurrent runs apply each version once', async () => {
    const { db, url } = await fresh();
    const results = await Promise.all([migrate({ mysqlUrl: url }), migrate({ mysqlUrl: url }), migrate({ mysqlUrl: url })]);
    const applied = results.flatMap((r) => r.mysql.applied).sort((a, b) => a - b);
    assert.deepEqual(applied, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
    const [rows] = await admin.query<mysql.RowDataPacket[]>(`SELECT COUNT(*) AS n FROM \`${db}\`.schema_migrations`);
    assert.equal(Number(rows[0]?.n), 11);
  });

  test('006/007 add the task-row columns and the (uid, status, created_at) index to tables that already have rows; re-running changes nothing', async () => {
    const { db, url } = await fresh();
    // A database as it was before 006: versions 1-5 applied, with pushes in it (the later files are
    // applied below; 008/009, the entry's tables, touch neither table; 010/011 add claims).
    const dir = mkdtempSync(`${tmpdir()}/migrations-`);
    try {
      cpSync(MYSQL_MIGRATIONS_DIR, dir, { recursive: true });
      rmSync(`${dir}/006_im_push_task_row.sql`);
      rmSync(`${dir}/007_im_push_task_archive_row.sql`);
      rmSync(`${dir}/008_business_keys.sql`);
      rmSync(`${dir}/009_push_campaign.sql`);
      rmSync(`${dir}/010_im_push_task_claims.sql`);
      rmSync(`${dir}/011_im_push_task_archive_claims.sql`);
      assert.deepEqual((await migrate({ mysqlUrl: url, mysqlDir: dir })).mysql.applied, [1, 2, 3, 4, 5]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    const t = `\`${db}\`.im_push_task`;
    await admin.query(`INSERT INTO ${t} (task_id, uid, conv_id, seq, device_id, collapse_id, status) VALUES ('t-old', 'u1', 'c1', 1, 'd1', 'col-1', 2)`);
    await admin.query(
      `INSERT INTO \`${db}\`.im_push_task_archive (id, task_id, uid, conv_id, seq, device_id, created_at, updated_at) VALUES (9, 't-cold', 'u1', 'c1', 0, 'd1', NOW(3), NOW(3))`,
    );

    assert.deepEqual((await migrate({ mysqlUrl: url })).mysql, { applied: [6, 7, 8, 9, 10, 11], alreadyApplied: [1, 2, 3, 4, 5] });
    const [old] = await admin.query<mysql.RowDataPacket[]>(
      `SELECT status, unread_cnt, payload, collapse_key, merge_kind, claims FROM ${t} WHERE task_id = 't-old'`,
    );
    assert.deepEqual(
      { ...old[0] },
      { status: 2, unread_cnt: 0, payload: null, collapse_key: '', merge_kind: '', claims: 1 },
      'an existing row keeps its status and gets the defaults',
    );
    const [cold] = await admin.query<mysql.RowDataPacket[]>(`SELECT task_id, payload FROM \`${db}\`.im_push_task_archive`);
    assert.deepEqual(
      cold.map((r) => `${r.task_id}:${String(r.payload)}`),
      ['t-cold:null'],
    );

    const shape = async () => {
      const [columns] = await admin.query<mysql.RowDataPacket[]>(
        'SELECT TABLE_NAME AS t, COLUMN_NAME AS c, COLUMN_TYPE AS type FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? ORDER BY TABLE_NAME, ORDINAL_POSITION',
        [db],
      );
      const [keys] = await admin.query<mysql.RowDataPacket[]>(
        `SELECT TABLE_NAME AS t, INDEX_NAME AS i, GROUP_CONCAT(COLUMN_NAME ORDER BY SEQ_IN_INDEX) AS cols FROM information_schema.STATISTICS
         WHERE TABLE_SCHEMA = ? GROUP BY TABLE_NAME, INDEX_NAME ORDER BY TABLE_NAME, INDEX_NAME`,
        [db],
      );
      return { columns: columns.map((r) => `${r.t}.${r.c} ${r.type}`), keys: keys.map((k) => `${k.t}.${k.i}(${k.cols})`) };
    };
    const migrated = await shape();
    assert.ok(migrated.keys.includes('im_push_task.idx_uid_status_created(uid,status,created_at)'));
    for (const table of ['im_push_task', 'im_push_task_archive'])
      for (const column of [
        'channel_trail text',
        'unread_cnt int(10) unsigned',
        'payload varbinary(1024)',
        'collapse_key varchar(64)',
        'merge_kind varchar(16)',
      ])
        assert.ok(
          migrated.columns.some((c) => c.replace(/int unsigned$/, 'int(10) unsigned') === `${table}.${column}`),
          `${table}.${column}`,
        );
    // The archive has every column of the hot table (archiveTasks copies them all).
    const hot = migrated.columns.filter((c) => c.startsWith('im_push_task.')).map((c) => c.split(' ')[0]!.slice('im_push_task.'.length));
    const archived = new Set(
      migrated.columns.filter((c) => c.startsWith('im_push_task_archive.')).map((c) => c.split(' ')[0]!.slice('im_push_task_archive.'.length)),
    );
    assert.deepEqual(
      hot.filter((c) => !archived.has(c)),
      [],
    );

    assert.deepEqual((await migrate({ mysqlUrl: url })).mysql.applied, [], 'a second run applies nothing');
    // Re-running the files themselves (a crash after the ALTER, before the version record) adds nothing either.
    const conn = await mysql.createConnection({ ...parseMysqlUrl(url).connection, database: db });
    try {
      for (const file of readMigrations(MYSQL_MIGRATIONS_DIR).filter((f) => f.version >= 6))
        for (const statement of file.statements) await conn.query(statement);
    } finally {
      await conn.end();
    }
    assert.deepEqual(await shape(), migrated);
  });

  test('archiveTasks moves rows older than 7 days, in batches, and nothing else', async () => {
    const { db, url } = await fresh();
    await migrate({ mysqlUrl: url });
    const pool = mysql.createPool({ ...parseMysqlUrl(url).connection, database: db, connectionLimit: 2 });
    try {
      const now = Date.UTC(2026, 0, 20, 12, 0, 0);
      const day = 86_400_000;
      const ages = [10, 9, 8, 7.5, 7.01, 6.99, 1, 0]; // days old
      for (const [i, age] of ages.entries()) {
        await pool.query(
          'INSERT INTO im_push_task (task_id, uid, conv_id, seq, device_id, status, created_at, unread_cnt, payload, collapse_key, merge_kind, channel_trail) ' +
            'VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
          [`t-${i}`, 'u1', 'c1', i, 'd1', 2, new Date(now - age * day), i + 1, Buffer.from(`{"title":"T${i}","body":"B"}`), `col-${i}`, 'LEADING', '[]'],
        );
      }
      assert.equal(await archiveTasks(pool, { nowMs: now, batchSize: 2 }), 5);
      const [hot] = await pool.query<mysql.RowDataPacket[]>('SELECT task_id FROM im_push_task ORDER BY seq');
      const [cold] = await pool.query<mysql.RowDataPacket[]>('SELECT task_id, status FROM im_push_task_archive ORDER BY seq');
      assert.deepEqual(
        hot.map((r) => r.task_id),
        ['t-5', 't-6', 't-7'],
      );
      assert.deepEqual(
        cold.map((r) => `${r.task_id}:${r.status}`),
        ['t-0:2', 't-1:2', 't-2:2', 't-3:2', 't-4:2'],
      );
      const [first] = await pool.query<mysql.RowDataPacket[]>(
        "SELECT unread_cnt, CAST(payload AS CHAR) AS payload, collapse_key, merge_kind, channel_trail FROM im_push_task_archive WHERE task_id = 't-0'",
      );
      assert.deepEqual(
        { ...first[0] },
        { unread_cnt: 1, payload: '{"title":"T0","body":"B"}', collapse_key: 'col-0', merge_kind: 'LEADING', channel_trail: '[]' },
        'the task row moves whole',
      );
      assert.equal(await archiveTasks(pool, { nowMs: now }), 0, 'a second run has nothing to move');
    } finally {
      await pool.end();
    }
  });

  test('a bad PUSH_MYSQL_URL is a ConfigError naming the key', () => {
    assert.throws(() => parseMysqlUrl('postgres://x/y'), /PUSH_MYSQL_URL/);
    assert.throws(() => parseMysqlUrl('mysql://root@127.0.0.1:3306/'), /PUSH_MYSQL_URL/);
  });
});

test('the MySQL ready queries of docs/data.md (```mysql blocks) run on the migrated schema and find a user’s rows (u-123, and u-42’s business push by its request id)', async () => {
  const queries = [...readFileSync(new URL('../../docs/data.md', import.meta.url), 'utf8').matchAll(/```mysql\n([\s\S]*?)```/g)].map((m) => m[1]!.trim());
  assert.ok(queries.length >= 1, 'docs/data.md has a MySQL query');
  const { db, url } = await fresh();
  await migrate({ mysqlUrl: url });
  await admin.query(
    `INSERT INTO \`${db}\`.im_push_task (task_id, msg_id, uid, device_id, conv_id, seq, status, vendor, unread_cnt, payload, collapse_key, merge_kind)
     VALUES ('t-docs-1', 'm-1', 'u-123', 'd-1', 'c-1', 7, 1, 'fcm', 3, '{"title":"Ann","body":"hi"}', 'c-1', 'LEADING'),
            ('t-docs-2', 'ad05521a49601ea47a0416ed459fb8eb', 'u-42', 'd-1', 'biz:ad05521a49601ea47a0416ed459fb8eb', 0, 1, 'fcm', 0, '{"title":"Ann","body":"hi"}', 'biz', 'LEADING')`,
  );
  const conn = await mysql.createConnection({ ...parseMysqlUrl(url).connection, database: db });
  try {
    for (const query of queries) {
      const [rows] = await conn.query<mysql.RowDataPacket[]>(query);
      assert.ok(rows.length >= 1, `no row for the user (u-123, or u-42's business push) from:\n${query}`);
      assert.equal(rows[0]!.title, 'Ann', 'the title sent, from the payload');
    }
  } finally {
    await conn.end();
  }
});

test('a database that recorded a migration before a comment-only edit of its file counts it as applied; another checksum is still refused', async () => {
  const { db, url } = await fresh();
  await migrate({ mysqlUrl: url });
  const first = readMigrations(MYSQL_MIGRATIONS_DIR).find((m) => m.version === 1)!;
  assert.ok(first.formerChecksums.length > 0, '001 lists the checksum of its text before the comment edit');
  await admin.query(`UPDATE \`${db}\`.schema_migrations SET checksum = ? WHERE version = 1`, [first.formerChecksums[0]]);
  const again = await migrate({ mysqlUrl: url });
  assert.deepEqual(again.mysql, { applied: [], alreadyApplied: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11] });
  await admin.query(`UPDATE \`${db}\`.schema_migrations SET checksum = ? WHERE version = 1`, ['0'.repeat(64)]);
  await assert.rejects(migrate({ mysqlUrl: url }), /001_im_push_task\.sql was changed after it was applied/);
});
