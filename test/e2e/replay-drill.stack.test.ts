/**
 * The "vendor lost them" drill on the whole pipeline: messages go through
 * the workers (decisions, fan-out, sinks) to the six vendor emulators in three rounds; then the
 * emulators forget the middle round's recordings, and nothing else does (not MySQL, not Kafka,
 * not ClickHouse). `pushctl replay --from tasks --since <start> --until <end> --app <app>` must
 * re-send exactly those pushes, once each, with the title, summary and collapse id the vendor got
 * the first time; and ClickHouse's arrival accounting (the views of docs/data.md, as `pushctl
 * arrival` reads them) must stay exact: equal to the emulators' recordings, each pair counted once.
 * MySQL is sharded by uid over three databases (PUSH_MYSQL_SHARDS), so the replay spans shards.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startEnvironment, type Environment } from '../../demo/environment.ts';
import { trafficProducer, type TrafficProducer } from '../../demo/traffic.ts';
import { clientTokenReport, MAKERS, type SyntheticDevice } from '../../demo/workload.ts';
import { sleep, waitDrained } from '../../chaos/drain.ts';
import { emulatorArrival, messageOf, recordings } from '../../chaos/verify.ts';
import { readEndpoints } from '../../common/endpoints.ts';
import { replayCommand } from '../../cli/commands/replay.ts';
import { readArrival } from '../../pipeline/arrival-queries.ts';
import { queryArrival } from '../../sinks/clickhouse/arrival-query.ts';
import { connectionFromEndpoints, createClickhouseClient } from '../../sinks/clickhouse/client.ts';
import type { ReceivedPush } from '../../emulators/index.ts';
import type { MessagePersisted } from '../../processors/model/records.ts';
import { RECEIPT_VENDORS } from '../../sinks/vendors/modules.ts';
import { TASK_STATUS } from '../../processors/model/task-status.ts';
import { deleteRunTopics } from '../support/run-topics.ts';
import { shardDatabases, type ShardDatabases } from '../sinks/mysql/shard-stack.ts';

const PER_MAKER = 4;

/** What the vendor got for one push, keyed by vendor, token, conversation and seq. */
const pushOf = (r: ReceivedPush) => {
  const m = messageOf(r)!;
  return { key: `${r.vendor}|${r.token}|${m.convId}|${m.seq}`, round: m.convId.split('-')[0]!, title: r.title, body: r.body, collapseId: r.collapseId };
};

async function until(what: string, check: () => boolean | Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(500);
  }
}

test(
  'vendor-lost drill: replay --from tasks re-sends exactly the lost range with its original payload and collapse id; ClickHouse stays exact',
  { timeout: 600_000 },
  async (t) => {
    let env: Environment | undefined;
    let traffic: TrafficProducer | undefined;
    let shards: ShardDatabases | undefined;
    const saved = {
      PUSH_TOPIC_PREFIX: process.env.PUSH_TOPIC_PREFIX,
      PUSH_MYSQL_URL: process.env.PUSH_MYSQL_URL,
      PUSH_MYSQL_SHARDS: process.env.PUSH_MYSQL_SHARDS,
    };
    const clickhouse = createClickhouseClient(connectionFromEndpoints(readEndpoints()));
    try {
      // Three uid shards (docs/data.md, "Shards"): the replay reads and resets tasks on every one.
      shards = await shardDatabases('drill_shards', 3);
      const mysqlEnv = { PUSH_MYSQL_URL: shards.urls[0]!, PUSH_MYSQL_SHARDS: shards.urls.join(',') };
      Object.assign(process.env, mysqlEnv);
      env = await startEnvironment({ instances: 1, partitions: 2, workerEnv: mysqlEnv, verbose: false });
      const e = env;
      const devices: SyntheticDevice[] = MAKERS.flatMap((m) =>
        Array.from({ length: PER_MAKER }, (_, i) => {
          const uid = `${e.run}-${m.manufacturer}-${i}`;
          const deviceId = `${uid}-d`;
          return {
            uid,
            deviceId,
            platform: m.platform,
            manufacturer: m.manufacturer,
            tokens: m.vendors.map((vendor) => ({ vendor, token: e.emulators.token(vendor, deviceId) })),
          };
        }),
      );
      await e.waitReady();
      traffic = await trafficProducer(e.topicPrefix);
      await traffic.send(
        'tokens',
        devices.flatMap((d) => d.tokens.map((tk) => clientTokenReport(d, tk, e.appId, Date.now()))),
      );
      await waitDrained(e.applicationId, () => true, { intervalMs: 1000, timeoutMs: 120_000 });

      const received = () => recordings(e.emulators, e.appId).filter((r) => r.answer === 'accepted' && messageOf(r) !== undefined);
      const ofRound = (round: string) => received().filter((r) => pushOf(r).round === round);
      /** One message per user, each its own conversation, waited for until every vendor accepted it. */
      const round = async (name: string) => {
        const now = Date.now();
        const messages = devices.map((d, i): { key: string; value: MessagePersisted } => ({
          key: d.uid,
          value: {
            msg_id: `m-${name}-${d.uid}`,
            conv_id: `${name}-${d.uid}`,
            conv_type: 'SINGLE',
            seq: 1,
            sender_uid: `s-${i}`,
            uid: d.uid,
            unread_cnt: i + 1,
            title: `Round ${name} from s-${i}`,
            summary: `round ${name}, message for ${d.uid} 🚀`,
            sensitive: false,
            mention: 'NONE',
            persisted_at: now,
            app_id: e.appId,
          },
        }));
        await traffic!.send('persisted', messages);
        await until(`round ${name} accepted`, () => ofRound(name).length >= devices.length, 120_000);
      };

      await round('a');
      await sleep(1100);
      const fromMs = Date.now();
      await sleep(100);
      await round('b');
      await sleep(1100);
      const untilMs = Date.now();
      await sleep(100);
      await round('c');

      const arrivalOf = async () =>
        Object.fromEntries(
          (await queryArrival(clickhouse, 'vendor', Math.floor(fromMs / 1000) - 600, e.appId)).map((r) => [
            r.key,
            { submitted: r.submitted, arrived: r.arrived },
          ]),
        );
      // ClickHouse caught up with the vendors before the drill.
      await until('ClickHouse to match the emulators', async () => JSON.stringify(await arrivalOf()) === JSON.stringify(emulatorArrival(received())), 120_000);
      // ... and MySQL keeps the delivery receipts of every push a receipt vendor accepted: the vendors
      // lose pushes the pipeline is done with. A receipt of a lost push handled only after the replay
      // had reset its task would mark it delivered again, and the fan-out would not re-send it.
      const receiptVendors: readonly string[] = RECEIPT_VENDORS;
      const { pools } = shards;
      const deliveredTasks = async () => {
        let n = 0;
        for (let shard = 0; shard < 3; shard++) {
          const [rows] = await pools
            .shard(shard)
            .query('SELECT COUNT(*) AS n FROM im_push_task WHERE app_id = ? AND status = ?', [e.appId, TASK_STATUS.delivered]);
          n += (rows as Array<{ n: number }>)[0]!.n;
        }
        return n;
      };
      const receiptPushes = received().filter((r) => receiptVendors.includes(r.vendor)).length;
      await until('MySQL to record the delivery receipts', async () => (await deliveredTasks()) === receiptPushes, 120_000);
      const before = await arrivalOf();
      const original = new Map(ofRound('b').map((r) => [pushOf(r).key, pushOf(r)]));
      assert.equal(original.size, devices.length, 'one push per device in the range');

      // The drill: the vendors lose the range's pushes; MySQL, Kafka and ClickHouse keep everything.
      const forgotten = e.emulators.forget(fromMs, untilMs);
      assert.equal(forgotten, devices.length, 'the range contains exactly round b');
      assert.equal(ofRound('b').length, 0);

      process.env.PUSH_TOPIC_PREFIX = e.topicPrefix;
      const code = await replayCommand([
        '--from',
        'tasks',
        '--since',
        new Date(fromMs).toISOString(),
        '--until',
        new Date(untilMs).toISOString(),
        '--app',
        e.appId,
      ]);
      assert.equal(code, 0);
      await until('the replayed pushes', () => ofRound('b').length >= devices.length, 120_000);
      await sleep(3000); // anything resent twice, or from outside the range, would arrive by now

      const resent = ofRound('b').map(pushOf);
      assert.deepEqual(resent.map((p) => p.key).sort(), [...original.keys()].sort(), 'exactly the lost pushes, once each');
      for (const p of resent) assert.deepEqual(p, original.get(p.key), `${p.key}: the original title, summary and collapse id`);
      assert.equal(ofRound('a').length, devices.length, 'round a not resent');
      assert.equal(ofRound('c').length, devices.length, 'round c not resent');
      // The range's tasks were on every shard, and each is submitted (or delivered) again.
      for (let shard = 0; shard < 3; shard++) {
        const [rows] = await shards.pools
          .shard(shard)
          .query("SELECT COUNT(*) AS n, SUM(status IN (1, 2)) AS sent FROM im_push_task WHERE conv_id LIKE 'b-%' AND app_id = ?", [e.appId]);
        const { n, sent } = (rows as Array<{ n: number; sent: string }>)[0]!;
        assert.ok(n > 0 && Number(sent) === n, `shard ${shard}: ${n} tasks of the range, ${sent} submitted or delivered`);
      }

      // Accounting: the replayed pairs are the same pairs, counted once, and match the vendors again.
      await sleep(3000);
      assert.deepEqual(await arrivalOf(), before, 'arrival by vendor unchanged by the replay');
      assert.deepEqual(await arrivalOf(), emulatorArrival(received()), 'arrival by vendor equals the emulators');
      const byApp = await readArrival({ by: 'app', since: '1h', client: clickhouse });
      const mine = byApp.rows.find((r) => r.key === e.appId);
      assert.equal(mine?.submitted, 3 * devices.length, 'pushctl arrival --by app: each (task, device) once');
      assert.equal(mine?.arrived, 3 * devices.length);
      t.diagnostic(
        `${devices.length} devices on ${MAKERS.length} vendors' makers; ${forgotten} pushes forgotten and replayed; arrival ${JSON.stringify(before)}`,
      );
    } finally {
      for (const [key, value] of Object.entries(saved)) {
        if (value === undefined) delete process.env[key];
        else process.env[key] = value;
      }
      await clickhouse.close();
      await traffic?.close().catch(() => undefined);
      await env?.close();
      if (env) await deleteRunTopics(env.topicPrefix).catch(() => undefined);
      await shards?.drop();
    }
  },
);
