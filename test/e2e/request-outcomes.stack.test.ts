/**
 * One push request through the HTTP entry and the business lane on the real stack (Kafka, registry,
 * MariaDB, ClickHouse, the FCM emulator), checked as a sender and a support engineer would: three
 * POSTs with one idempotency key give one push at the vendor and, in ClickHouse, two duplicate
 * outcomes counted apart (docs/entry.md: each request that ends gets one outcome, counted); and the
 * request id the entry answered finds the push's task row in MySQL, `(uid, biz:<request id>, 0,
 * device)`, and its timeline in `pushctl trace --conv biz:<request id>`.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import type { RowDataPacket } from 'mysql2/promise';
import { startEmulators, type StartedEmulators } from '../../emulators/index.ts';
import { buildBusinessTopology, businessLaneVendors } from '../../pipeline/apps/business.ts';
import { buildClickhouseSinkTopology } from '../../pipeline/apps/clickhouse.ts';
import { buildFanOutTopology } from '../../pipeline/apps/fan-out.ts';
import type { TraceLine } from '../../pipeline/trace.ts';
import { PushEventWriter } from '../../sinks/clickhouse/writer.ts';
import { connectionFromEndpoints } from '../../sinks/clickhouse/client.ts';
import { MysqlPushTaskLedger } from '../../sinks/mysql/tasks.ts';
import { createVendorRegistry } from '../../sinks/vendors/registry.ts';
import type { StreamsApp } from '../../topology/runtime.ts';
import { campaignUserRecords } from '../../bench/campaign-phase.ts';
import { committedAll } from '../pipeline/apps/group-progress.ts';
import { pushctl } from '../cli/pushctl-process.ts';
import { call, endpoints, kafka, produceTo, stageApp, startEntryStack, type EntryStack } from '../entry/support.ts';

const APP = 'app-1';
const UID = 'u-order-77';

let stack: EntryStack;
let em: StartedEmulators;
const apps: StreamsApp[] = [];
const producer = kafka.producer();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

before(async () => {
  [stack, em] = await Promise.all([startEntryStack(), startEmulators({ apps: [APP] })]);
  await producer.connect();
});

after(async () => {
  await Promise.all(apps.map((a) => a.close().catch(() => undefined)));
  await producer.disconnect();
  await em?.close();
  await stack?.cleanup();
});

interface EventCount {
  kind: string;
  msg_id: string;
  conv_id: string;
  events: string;
}

test('three POSTs with one idempotency key: one push, two duplicate outcomes counted apart; the answered request id finds the task row and the trace', async () => {
  const token = em.token('fcm', UID);
  await produceTo(stack, producer, 'tokens', campaignUserRecords(new Map([[token, UID]]), APP, 'UTC', Date.now()).tokens);
  const vendors = createVendorRegistry(em.appsConfig);
  const wiring = { valueSerdes: stack.topics.serdes, topicPrefix: stack.topics.prefix };
  const writer = new PushEventWriter({ connection: { ...connectionFromEndpoints(endpoints), database: stack.clickhouseDatabase } });
  const lane = businessLaneVendors(vendors, 30, { ratePerSecond: 500, concurrency: 8 });
  apps.push(
    stageApp(stack, 'business', buildBusinessTopology({ ...wiring, business: { partitionCount: 4 } })),
    stageApp(
      stack,
      'fan-out-business',
      buildFanOutTopology({ ...wiring, lane: 'business', fanOut: { ...lane, ledger: new MysqlPushTaskLedger({ pool: stack.pool }) } }),
    ),
    stageApp(stack, 'clickhouse', buildClickhouseSinkTopology({ ...wiring, writer }), true),
  );
  await Promise.all(apps.map((a) => a.start()));
  // The stage reads tokens and requests side by side: the requests come once it has the user's token.
  await committedAll(kafka, `${stack.topics.prefix}business`, stack.topics.name('tokens'), 60_000);

  const { key } = await stack.keys.create('order-service');
  const push = { uid: UID, app_id: APP, category: 'notice', title: 'Order 77', body: 'has shipped' };
  const answers = [];
  for (let i = 0; i < 3; i++) answers.push(await call(stack, 'POST', '/v1/pushes', key, push, { 'idempotency-key': 'order-77:shipped' }));
  assert.deepEqual(
    answers.map((a) => a.status),
    [202, 202, 202],
    JSON.stringify(answers.map((a) => a.body)),
  );
  const requestId = answers[0]!.body.request_id as string;
  assert.ok(
    answers.every((a) => a.body.request_id === requestId),
    'a retried POST names the same request',
  );

  // ClickHouse counts distinct event ids: one accepted push and two duplicates, all of this request.
  let counts: EventCount[] = [];
  const wanted = ['accepted 1', 'skipped_duplicate 2'];
  const brief = () => counts.map((c) => `${c.kind} ${c.events}`);
  for (const deadline = Date.now() + 60_000; Date.now() < deadline; await sleep(500)) {
    const result = await stack.clickhouse.query({
      query: `SELECT toString(kind) AS kind, msg_id, conv_id, toString(uniqExact(event_id)) AS events FROM push_events
              WHERE uid = '${UID}' AND kind IN ('accepted', 'skipped_duplicate') GROUP BY kind, msg_id, conv_id ORDER BY kind`,
      format: 'JSONEachRow',
    });
    counts = await result.json<EventCount>();
    if (JSON.stringify(brief()) === JSON.stringify(wanted)) break;
  }
  assert.deepEqual(brief(), wanted, JSON.stringify(counts));
  for (const c of counts) assert.deepEqual([c.msg_id, c.conv_id], [requestId, `biz:${requestId}`], c.kind);
  assert.equal(em.fcm.accepted().filter((p) => p.token === token).length, 1, 'the vendor got the push once');

  // Support, given the request id the entry answered: the task row by docs/data.md's query, and the trace.
  const data = readFileSync(new URL('../../docs/data.md', import.meta.url), 'utf8');
  const query = /### Ready query: a business push by its request id[\s\S]*?```mysql\n([\s\S]*?)```/.exec(data)![1]!;
  const [rows] = await stack.pool.query<RowDataPacket[]>(query.replace(`'u-42'`, '?').replace(/'biz:[0-9a-f]{32}'/, '?'), [UID, `biz:${requestId}`]);
  assert.deepEqual(
    rows.map((r) => [r.device_id, r.state, r.vendor, r.title]),
    [['phone', 'submitted', 'fcm', 'Order 77']],
  );
  const traced = await pushctl(['trace', UID, '--conv', `biz:${requestId}`, '--json'], {
    PUSH_MYSQL_URL: stack.mysqlUrl,
    PUSH_CLICKHOUSE_DATABASE: stack.clickhouseDatabase,
    PUSH_LOG_LEVEL: 'warn',
  });
  assert.equal(traced.code, 0, traced.stderr);
  const lines = traced.stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as TraceLine);
  assert.deepEqual(
    lines
      .filter((l) => l.outcome === 'accepted' || l.outcome === 'skipped_duplicate')
      .map((l) => `${l.outcome} ${l.device_id || '(user)'}`)
      .sort(),
    ['accepted phone', 'skipped_duplicate (user)', 'skipped_duplicate (user)'],
  );
});
