/**
 * `pushctl replay --from tasks` on the real stack: a "vendor lost them" drill. Pushes go through a
 * fan-out worker (Kafka, schema registry, MariaDB, emulators); the emulators then forget everything
 * (the vendor lost the pushes), and the replay re-sends from im_push_task alone exactly the tasks
 * of the time range (and of the user asked for), with the title, summary and collapse id first
 * sent, through the same fan-out: each ACCEPTED outcome keeps its event id, so the accounting
 * (distinct events, docs/data.md) does not move.
 */
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import mysql from 'mysql2/promise';
import { migrate, parseMysqlUrl } from '../../../migrations/migrate.ts';
import type { PushDispatch } from '../../../processors/model/records.ts';
import { decodeTaskPayload } from '../../../sinks/mysql/tasks.ts';
import { startEmulators, type StartedEmulators } from '../../../emulators/index.ts';
import { replayCommand } from '../../../cli/commands/replay.ts';
import { stackEndpoints, uniqueName } from '../../support/stack.ts';
import { followOutcomes, kafka, produceDispatches, spawnFanOutWorker, type FanOutWorker } from '../../processors/fan-out/stack-helpers.ts';
import { dispatch } from '../../processors/fan-out/support.ts';
import { createTopicsWithLeaders } from '../../../topology/create-topics.ts';

describe('replay --from tasks: a vendor lost the pushes of a time range', () => {
  let em: StartedEmulators;
  let prefix: string;
  let dbName: string;
  let dbUrl: string;
  let pool: mysql.Pool;
  let worker: FanOutWorker | undefined;
  let follower: Awaited<ReturnType<typeof followOutcomes>>;

  before(async () => {
    em = await startEmulators();
    prefix = `${uniqueName('replay-tasks')}.`;
    dbName = uniqueName('replay_tasks').replace(/-/g, '_');
    const url = new URL(stackEndpoints().mysqlUrl);
    url.pathname = `/${dbName}`;
    dbUrl = url.toString();
    await migrate({ mysqlUrl: dbUrl });
    pool = mysql.createPool({ ...parseMysqlUrl(dbUrl).connection, database: dbName, connectionLimit: 2 });
    const dir = mkdtempSync(join(tmpdir(), 'replay-tasks-'));
    const appsFile = join(dir, 'apps.json');
    writeFileSync(appsFile, JSON.stringify(em.rawAppsConfig));
    chmodSync(appsFile, 0o600);
    const admin = kafka.admin();
    await admin.connect();
    await createTopicsWithLeaders(
      admin,
      ['push.dispatch', 'im.presence', 'push.outcomes', 'push.tokens', 'push.dlq'].map((t) => ({
        topic: prefix + t,
        numPartitions: t === 'push.dispatch' || t === 'im.presence' ? 2 : 1,
        replicationFactor: 1,
      })),
    );
    await admin.disconnect();
    follower = await followOutcomes(prefix);
    worker = spawnFanOutWorker({ FANOUT_APP_ID: uniqueName('fan-out'), FANOUT_TOPIC_PREFIX: prefix, FANOUT_APPS_CONFIG: appsFile, PUSH_MYSQL_URL: dbUrl });
    await worker.started();
    // The replay runs in this process, as pushctl would, on the test's database and topics.
    process.env.PUSH_MYSQL_URL = dbUrl;
    process.env.PUSH_TOPIC_PREFIX = prefix;
  });
  after(async () => {
    if (worker && worker.child.exitCode === null) worker.child.kill('SIGKILL');
    await follower?.stop();
    await em?.close();
    await pool?.query(`DROP DATABASE IF EXISTS \`${dbName}\``);
    await pool?.end();
  });

  /** Pushes for users a and b, each with one valid fcm token (as the token lifecycle stores it). */
  async function push(round: string): Promise<PushDispatch[]> {
    const batch = ['a', 'b'].flatMap((user) =>
      Array.from({ length: 5 }, (_, i) => {
        const token = em.token('fcm', `${user}-${i}`);
        return dispatch({
          uid: `u-${user}`,
          device: `d-${user}-${i}`,
          conv_id: `conv-${round}`,
          seq: i + 1,
          title: `${round} from ${user} 👋`,
          body: `summary ${round} ${i}`,
          badge: 10 + i,
          kind: i % 2 === 0 ? 'LEADING' : 'TRAILING',
          silent: false,
          channels: [{ vendor: 'fcm', token }],
        });
      }),
    );
    for (const d of batch)
      await pool.query(
        "INSERT IGNORE INTO im_push_token (uid, device_id, vendor, app_id, platform, token, reported_at) VALUES (?, ?, 'fcm', ?, 'android', ?, NOW(3))",
        [d.uid, d.device_id, d.app_id, d.channels[0]!.token],
      );
    await produceDispatches(prefix, batch);
    await follower.until((o) => batch.every((d) => o.some((x) => x.task_id === d.task_id && x.status === 'ACCEPTED')), 90_000);
    return batch;
  }

  const acceptedIds = (tasks: readonly PushDispatch[]) =>
    new Set(follower.outcomes.filter((o) => o.status === 'ACCEPTED' && tasks.some((d) => d.task_id === o.task_id)).map((o) => o.event_id));

  test('exactly the range’s pushes are sent again, with their original title, summary and collapse id; accepted events keep their ids', async () => {
    const early = await push('early');
    await new Promise((r) => setTimeout(r, 1_100));
    const since = new Date().toISOString();
    await new Promise((r) => setTimeout(r, 50));
    const late = await push('late');
    const firstSent = new Map(em.fcm.accepted().map((p) => [p.token, p]));
    const eventsBefore = acceptedIds([...early, ...late]);
    assert.equal(eventsBefore.size, early.length + late.length);

    em.reset(); // the vendor lost everything it had
    const lostFor = late.filter((d) => d.uid === 'u-a');
    assert.equal(await replayCommand(['--from', 'tasks', '--since', since, '--uid', 'u-a']), 0);
    await new Promise((r) => setTimeout(r, 300));
    await follower.until(() => em.fcm.accepted().length >= lostFor.length, 60_000);
    // The replay's outcomes: a second ACCEPTED for each resent task.
    await follower.until((o) => lostFor.every((d) => o.filter((x) => x.task_id === d.task_id && x.status === 'ACCEPTED').length >= 2), 60_000);
    await new Promise((r) => setTimeout(r, 1_000)); // nothing more arrives
    const resent = em.fcm.accepted();
    assert.deepEqual(resent.map((p) => p.token).sort(), lostFor.map((d) => d.channels[0]!.token).sort(), 'user a’s pushes of the range, once each');
    for (const p of resent) {
      const first = firstSent.get(p.token)!;
      assert.equal(p.title, first.title);
      assert.equal(p.body, first.body);
      assert.equal(p.collapseId, first.collapseId);
    }
    // The accounting: every ACCEPTED of the replay repeats its task's event id.
    assert.deepEqual(acceptedIds([...early, ...late]), eventsBefore);
    for (const d of lostFor) {
      const [rows] = await pool.query<mysql.RowDataPacket[]>('SELECT status, payload, collapse_key, unread_cnt FROM im_push_task WHERE task_id = ?', [
        d.task_id,
      ]);
      assert.equal(rows[0]!.status, 1);
      assert.deepEqual(decodeTaskPayload(rows[0]!.payload as Buffer), { title: d.title, body: d.body });
      assert.equal(rows[0]!.collapse_key, d.collapse_id);
      assert.equal(rows[0]!.unread_cnt, d.badge);
    }
  });

  test('--dry-run counts and sends nothing; a range before any task is empty', async () => {
    em.reset();
    assert.equal(await replayCommand(['--from', 'tasks', '--since', '1h', '--dry-run']), 0);
    assert.equal(await replayCommand(['--from', 'tasks', '--since', '2d', '--until', '1d']), 0);
    await new Promise((r) => setTimeout(r, 1_000));
    assert.equal(em.fcm.accepted().length, 0);
  });
});
