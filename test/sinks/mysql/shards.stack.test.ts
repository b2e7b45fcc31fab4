/**
 * uid-sharded MySQL (docs/data.md "Shards") on the real stack: four shards as four
 * databases on the local MariaDB. `migrate` creates the tables on each; a fan-out worker (Kafka,
 * schema registry, emulators) pushes to users across all four, and every task row lands on the shard
 * MariaDB's own `CRC32(uid) % 4` names; receipts' status updates, token rows, `pushctl tokens`'s read
 * and the task replay follow the same routing; `pushctl archive` moves 7-day-old rows on every shard.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { RowDataPacket } from 'mysql2/promise';
import { archiveShards } from '../../../migrations/archive.ts';
import { migrate } from '../../../migrations/migrate.ts';
import { archiveCommand } from '../../../cli/commands/archive.ts';
import { replayTasks } from '../../../pipeline/replay.ts';
import { tokensOf } from '../../../pipeline/tokens-admin.ts';
import { TASK_STATUS } from '../../../processors/model/task-status.ts';
import type { PushDispatch } from '../../../processors/model/records.ts';
import { MysqlTaskStatusWriter } from '../../../sinks/mysql/task-status.ts';
import { MysqlTokenWriter } from '../../../sinks/mysql/tokens.ts';
import { shardOf } from '../../../sinks/mysql/shards.ts';
import { startEmulators, type StartedEmulators } from '../../../emulators/index.ts';
import { uniqueName } from '../../support/stack.ts';
import { followOutcomes, produceDispatches, type FanOutWorker } from '../../processors/fan-out/stack-helpers.ts';
import { createFanOutTopics, shardDatabases, startShardedFanOut, type ShardDatabases } from './shard-stack.ts';
import { dispatch } from '../../processors/fan-out/support.ts';
import { deleteRunTopics } from '../../support/run-topics.ts';

const SHARDS = 4;
const USERS = Array.from({ length: 40 }, (_, i) => `u-${String(i).padStart(3, '0')}`);
const TABLES = ['im_push_task', 'im_push_task_archive', 'im_push_token', 'push_receipt_nonce'];

describe('MySQL sharded by uid: 4 shards', () => {
  let em: StartedEmulators;
  let db: ShardDatabases;
  let prefix: string;
  let worker: FanOutWorker | undefined;
  let follower: Awaited<ReturnType<typeof followOutcomes>>;
  const saved = { shards: process.env.PUSH_MYSQL_SHARDS, prefix: process.env.PUSH_TOPIC_PREFIX };

  before(async () => {
    em = await startEmulators();
    db = await shardDatabases('shards', SHARDS);
    prefix = `${uniqueName('shards')}.`;
    await createFanOutTopics(prefix, 3);
    follower = await followOutcomes(prefix);
    worker = await startShardedFanOut(em, prefix, db.urls);
    // pushctl's operations (tokens, replay) run in this process, as the command would, on the test's shards.
    process.env.PUSH_MYSQL_SHARDS = db.urls.join(',');
    process.env.PUSH_TOPIC_PREFIX = prefix;
  });
  after(async () => {
    if (worker && worker.child.exitCode === null) worker.child.kill('SIGKILL');
    await follower?.stop();
    await em?.close();
    await db?.drop();
    if (prefix) await deleteRunTopics(prefix);
    for (const [key, value] of [['PUSH_MYSQL_SHARDS', saved.shards] as const, ['PUSH_TOPIC_PREFIX', saved.prefix] as const])
      if (value === undefined) delete process.env[key];
      else process.env[key] = value;
  });

  /** Rows of `table` on shard `i` with the shard MariaDB computes for their uid. */
  async function rowsOn(i: number, table: string, columns = 'task_id'): Promise<RowDataPacket[]> {
    const [rows] = await db.pools.shard(i).query<RowDataPacket[]>(`SELECT uid, CRC32(uid) % ${SHARDS} AS sql_shard, ${columns} FROM ${table}`);
    return rows;
  }

  test('migrate creates every table on all four shards and reports each; a second run applies nothing', async () => {
    assert.equal(db.migrated.mysqlShards.length, SHARDS);
    const versions = db.migrated.mysqlShards[0]!.applied;
    assert.ok(versions.length >= 7, `applied ${versions.join(',')}`);
    for (const side of db.migrated.mysqlShards) assert.deepEqual(side.applied, versions);
    for (let i = 0; i < SHARDS; i++) {
      const [rows] = await db.pools.shard(i).query<RowDataPacket[]>('SHOW TABLES');
      const tables = rows.map((r) => String(Object.values(r)[0]));
      for (const t of TABLES) assert.ok(tables.includes(t), `shard ${i} lacks ${t}`);
    }
    const again = await migrate({ mysqlUrl: db.urls[0]!, mysqlShards: db.urls });
    assert.deepEqual(
      again.mysqlShards.map((s) => s.applied.length),
      [0, 0, 0, 0],
    );
  });

  test('the shard function is MariaDB’s CRC32(uid) % N, for ASCII and non-ASCII uids', async () => {
    const uids = [...USERS, '用户-7', 'ünïcödé', '🙂-emoji', '', 'x'.repeat(64)];
    for (const n of [1, 2, 4, 7]) {
      const [rows] = await db.pools.shard(0).query<RowDataPacket[]>(`SELECT ${uids.map(() => `CRC32(?) % ${n}`).join(', ')}`, uids);
      assert.deepEqual(
        uids.map((u) => shardOf(u, n)),
        Object.values(rows[0]!).map(Number),
        `N = ${n}`,
      );
    }
  });

  test('pushes to users on every shard: each task row, status update and token row is on the shard CRC32(uid) % 4 names', async () => {
    const startedAt = Date.now() - 1_000;
    const batch: PushDispatch[] = USERS.map((uid) =>
      dispatch({ uid, device: `d-${uid}`, conv_id: 'conv-s', channels: [{ vendor: 'fcm', token: em.token('fcm', uid) }] }),
    );
    await produceDispatches(prefix, batch);
    await follower.until((o) => batch.every((d) => o.some((x) => x.task_id === d.task_id && x.status === 'ACCEPTED')), 90_000);
    assert.equal(em.fcm.accepted().length, USERS.length);

    // Task rows: every user's on exactly one shard, the one MariaDB computes; all four shards used.
    const seen = new Map<string, number>();
    for (let i = 0; i < SHARDS; i++) {
      const rows = await rowsOn(i, 'im_push_task', 'task_id, status');
      assert.ok(rows.length > 0, `shard ${i} has no task`);
      for (const r of rows) {
        assert.equal(Number(r.sql_shard), i, `${String(r.uid)} on shard ${i}`);
        assert.equal(r.status, TASK_STATUS.submitted);
        assert.equal(seen.has(String(r.uid)), false, `${String(r.uid)} on two shards`);
        seen.set(String(r.uid), i);
      }
    }
    assert.deepEqual([...seen.keys()].sort(), [...USERS].sort());

    // Receipts: delivered, each on its user's shard.
    const status = new MysqlTaskStatusWriter({ shards: db.pools });
    for (const d of batch) status.update({ taskId: d.task_id, uid: d.uid, deviceId: d.device_id, status: TASK_STATUS.delivered, at: Date.now() });
    await status.flush();
    for (let i = 0; i < SHARDS; i++) for (const r of await rowsOn(i, 'im_push_task', 'status')) assert.equal(r.status, TASK_STATUS.delivered);

    // Tokens: the lifecycle's writer puts each row on its user's shard; pushctl tokens reads it there.
    const tokens = new MysqlTokenWriter({ shards: db.pools });
    for (const d of batch)
      tokens.upsert({
        uid: d.uid,
        device_id: d.device_id,
        vendor: 'fcm',
        platform: 'android',
        app_id: d.app_id,
        token: d.channels[0]!.token,
        manufacturer: null,
        state: 'VALID',
        reason: null,
        reported_at: Date.now(),
        changed_at: Date.now(),
      });
    await tokens.flush();
    let tokenRows = 0;
    for (let i = 0; i < SHARDS; i++) {
      const rows = await rowsOn(i, 'im_push_token', 'device_id');
      for (const r of rows) assert.equal(Number(r.sql_shard), i, `token of ${String(r.uid)} on shard ${i}`);
      tokenRows += rows.length;
    }
    assert.equal(tokenRows, USERS.length);
    for (const uid of USERS.slice(0, 8))
      assert.deepEqual(
        (await tokensOf(uid)).map((r) => r.device_id),
        [`d-${uid}`],
      );

    // The task replay reads every shard (a dry run counts; --uid reads the user's shard alone).
    const counts: number[] = [];
    const replay = { fromMs: startedAt, untilMs: Date.now() + 60_000, dryRun: true, now: Date.now() };
    await replayTasks(replay, { onTasks: (n) => counts.push(n), onSelected: (c) => counts.push(c.replayable) });
    await replayTasks({ ...replay, uid: USERS[5]! }, { onTasks: (n) => counts.push(n), onSelected: (c) => counts.push(c.replayable) });
    assert.deepEqual(counts, [USERS.length, USERS.length, 1, 1]);
  });

  test('the archive moves 7-day-old rows on every shard, each into its own shard’s archive', async () => {
    const old = new Map<number, string[]>();
    for (let i = 0; i < SHARDS; i++) {
      const pool = db.pools.shard(i);
      await pool.query(`INSERT INTO im_push_task (task_id, uid, conv_id, seq, device_id, msg_id, app_id, platform, created_at) VALUES ?`, [
        [0, 1].map((k) => [
          `old-${i}-${k}`,
          `old-user-${i}-${k}`,
          'c-old',
          k,
          'd-old',
          `m-old-${k}`,
          'app-1',
          'android',
          new Date(Date.now() - 8 * 86_400_000),
        ]),
      ]);
      old.set(i, [`old-${i}-0`, `old-${i}-1`]);
    }
    const before = await Promise.all([0, 1, 2, 3].map(async (i) => (await rowsOn(i, 'im_push_task')).length));
    // The cron job's command, on PUSH_MYSQL_SHARDS (set for this file), prints the rows moved per shard.
    const printed: string[] = [];
    const log = console.log;
    console.log = (line: string) => void printed.push(line);
    try {
      assert.equal(await archiveCommand(['--days', '7']), 0);
    } finally {
      console.log = log;
    }
    assert.deepEqual(
      printed.map((l) => l.replace(/\s+/g, ' ')),
      [0, 1, 2, 3].map((i) => `mysql[${i}] moved 2 rows older than 7 days`),
    );
    assert.deepEqual(await archiveShards(db.pools.all()), [0, 0, 0, 0], 'a second run moves nothing');
    for (let i = 0; i < SHARDS; i++) {
      const hot = (await rowsOn(i, 'im_push_task')).map((r) => String(r.task_id));
      const [archived] = await db.pools.shard(i).query<RowDataPacket[]>('SELECT task_id FROM im_push_task_archive');
      assert.deepEqual(archived.map((r) => String(r.task_id)).sort(), old.get(i));
      assert.equal(hot.length, before[i]! - 2, `shard ${i} keeps its recent rows`);
      for (const id of old.get(i)!) assert.equal(hot.includes(id), false);
    }
  });
});
