/**
 * Campaign cancellation end to end on the real stack: a campaign posted to the
 * entry goes expansion → business → push.dispatch.business → fan-out-business → the FCM emulator,
 * the lane's vendor rate (30 % of 500/s: 150/s) far below what the expansion feeds it, so the lane
 * still holds most of the campaign when DELETE /v1/campaigns/{id} is acknowledged. Checked, as a
 * user would: no push of the campaign reached the vendor later than the acknowledgement + 5 s; every
 * push the vendor got is reported submitted (an ACCEPTED outcome, task row 1, the progress's
 * `submitted`), every other user's push ends SUPPRESSED `campaign_cancelled` (task row 3 when the
 * fan-out stopped it) and the two add up to the expanded count; IM pushes on push.dispatch, sent
 * before and after the cancel through IM's fan-out to the same vendor and app, all arrive.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startEmulators, type StartedEmulators } from '../../emulators/index.ts';
import { createLogger } from '../../common/log.ts';
import { startCampaignCancellations } from '../../pipeline/campaign-control.ts';
import { buildBusinessTopology, businessLaneVendors } from '../../pipeline/apps/business.ts';
import { buildClickhouseSinkTopology } from '../../pipeline/apps/clickhouse.ts';
import { buildFanOutTopology } from '../../pipeline/apps/fan-out.ts';
import type { TopicKey } from '../../pipeline/topics.ts';
import type { PushOutcome } from '../../processors/model/records.ts';
import { PushEventWriter } from '../../sinks/clickhouse/writer.ts';
import { connectionFromEndpoints } from '../../sinks/clickhouse/client.ts';
import { MysqlPushTaskLedger } from '../../sinks/mysql/tasks.ts';
import { createVendorRegistry } from '../../sinks/vendors/registry.ts';
import type { StreamsApp } from '../../topology/runtime.ts';
import type { Topology } from '../../topology/builder.ts';
import { campaignUserRecords } from '../../bench/campaign-phase.ts';
import { dispatch } from '../processors/fan-out/support.ts';
import { readUntil } from '../support/read-until.ts';
import { call, endpoints, kafka, produceTo, registry, stageApp, startEntryStack, startExpansion, type EntryStack } from '../entry/support.ts';

const USERS = 3_000;
const APP = 'app-1';
/** The emulators' rate in the apps config; the business lane gets LANE_PERCENT of it. */
const VENDOR_RATE = 500;
const LANE_PERCENT = 30;
/** Campaign pushes at the vendor before the DELETE: a few seconds of the lane's rate. */
const SENT_BEFORE_CANCEL = 300;
const BOUND_MS = 5_000;

let stack: EntryStack;
let em: StartedEmulators;
let control: ReturnType<typeof startCampaignCancellations> | undefined;
const apps: StreamsApp[] = [];
const producer = kafka.producer();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

before(async () => {
  [stack, em] = await Promise.all([startEntryStack(), startEmulators({ apps: [APP], ratePerSecond: VENDOR_RATE })]);
  await producer.connect();
});

after(async () => {
  await Promise.all(apps.map((a) => a.close().catch(() => undefined)));
  await control?.close();
  await producer.disconnect();
  await em?.close();
  await stack?.cleanup();
});

function app(stage: string, topology: Topology, atLeastOnce = false): StreamsApp {
  const a = stageApp(stack, stage, topology, atLeastOnce);
  apps.push(a);
  return a;
}

const produce = (key: TopicKey, records: ReadonlyArray<{ key: string; value: unknown }>) => produceTo(stack, producer, key, records);

/** An IM push on push.dispatch (IM's lane) to the same vendor and app as the campaign. */
async function imPush(uid: string): Promise<string> {
  const d = dispatch({ uid, device: 'phone', conv_id: 'chat', seq: 1, app_id: APP, channels: [{ vendor: 'fcm', token: em.token('fcm', uid) }] });
  await produce('dispatch', [{ key: uid, value: d }]);
  return d.channels[0]!.token;
}

/** Reads push.outcomes (read_committed) from the start until `done` holds for what was read, or 30 s passed. */
function readOutcomes(done: (outcomes: readonly PushOutcome[]) => boolean): Promise<PushOutcome[]> {
  const topic = stack.topics.name('outcomes');
  const serde = stack.topics.serdes('outcomes');
  return readUntil(kafka, topic, (value) => serde.deserialize(topic, value), done, 30_000);
}

test(`a cancelled ${USERS}-user campaign: nothing reaches the vendor after the cancel's acknowledgement + 5 s, nothing is lost, IM goes on`, async (t) => {
  const started = Date.now();
  const owner = await stack.keys.create('marketing');
  const uids = Array.from({ length: USERS }, (_, i) => `lane-u-${i}`);
  const tokenOf = new Map(uids.map((uid) => [em.token('fcm', uid), uid]));
  await produce(
    'tokens',
    campaignUserRecords(tokenOf, APP, 'UTC', Date.now()).tokens.map((r) => ({ key: r.key, value: r.value })),
  );

  // The business stage and the lane's fan-out read the cancellations as a worker's stages do (one reader each there).
  control = startCampaignCancellations({ endpoints, registry, topicPrefix: stack.topics.prefix, logger: createLogger({ stage: 'control' }, 'warn') });
  const cancellations = control.cancellations;
  const vendors = createVendorRegistry(em.appsConfig);
  const ledger = () => new MysqlPushTaskLedger({ pool: stack.pool });
  const wiring = { valueSerdes: stack.topics.serdes, topicPrefix: stack.topics.prefix };
  // The sender's rate is unlimited and the night rule off: the whole campaign queues on the lane at once, whatever the hour.
  const business = {
    overrides: { marketing: { senderRatePerSecond: 0, categories: { CAMPAIGN: { night: 'deliver' as const } } } },
    partitionCount: 4,
    cancelled: (id: string) => cancellations.cancelledAt(id) !== undefined,
  };
  const lane = businessLaneVendors(vendors, LANE_PERCENT, { ratePerSecond: 500, concurrency: 64 });
  const writer = new PushEventWriter({ connection: { ...connectionFromEndpoints(endpoints), database: stack.clickhouseDatabase } });
  await Promise.all([
    app('business', buildBusinessTopology({ ...wiring, business })).start(),
    app(
      'fan-out-business',
      buildFanOutTopology({ ...wiring, lane: 'business', fanOut: { ...lane, ledger: ledger(), cancellations, cancellationsRead: control.read } }),
    ).start(),
    app('fan-out', buildFanOutTopology({ ...wiring, fanOut: { vendors, ledger: ledger() } })).start(),
    app('clickhouse', buildClickhouseSinkTopology({ ...wiring, writer }), true).start(),
    startExpansion(stack, 10_000).then((a) => apps.push(a)),
  ]);
  t.diagnostic(`stack and applications up after ${Date.now() - started} ms`);

  const created = await call(stack, 'POST', '/v1/campaigns', owner.key, { app_id: APP, title: 'Sale', body: 'Today only', uids });
  assert.equal(created.status, 202, JSON.stringify(created.body));
  const id = created.body.campaign_id as string;
  const campaignPushes = () => em.fcm.received.filter((p) => tokenOf.has(p.token));
  const imTokens = [await imPush('im-before-0')];
  for (let deadline = Date.now() + 30_000; campaignPushes().length < SENT_BEFORE_CANCEL; await sleep(50))
    assert.ok(Date.now() < deadline, `only ${campaignPushes().length} campaign pushes reached the vendor in 30 s`);
  imTokens.push(await imPush('im-before-1'));

  const cancel = await call(stack, 'DELETE', `/v1/campaigns/${id}`, owner.key);
  const ackedAt = Date.now();
  assert.equal(cancel.status, 202, JSON.stringify(cancel.body));
  const sentAtAck = campaignPushes().length;
  t.diagnostic(`cancel acknowledged with ${sentAtAck} of ${USERS} campaign pushes at the vendor`);
  for (let i = 0; i < 5; i++) imTokens.push(await imPush(`im-after-${i}`));

  // Every user of the campaign has its final outcome: ACCEPTED, or SUPPRESSED campaign_cancelled (business stage or lane).
  const finalOf = (outcomes: readonly PushOutcome[]) => {
    const byUid = new Map<string, PushOutcome[]>();
    for (const o of outcomes)
      if (o.business?.campaign_id === id && (o.status === 'ACCEPTED' || o.reason === 'campaign_cancelled')) byUid.set(o.uid, [...(byUid.get(o.uid) ?? []), o]);
    return byUid;
  };
  const imAccepted = (outcomes: readonly PushOutcome[]) => outcomes.filter((o) => o.status === 'ACCEPTED' && !o.business).length;
  const outcomes = await readOutcomes((o) => finalOf(o).size === USERS && imAccepted(o) === imTokens.length);
  await sleep(Math.max(0, ackedAt + BOUND_MS + 1_000 - Date.now())); // past the bound, to see any late push

  const received = campaignPushes();
  const late = received.filter((p) => p.at > ackedAt + BOUND_MS);
  t.diagnostic(`last campaign push at the vendor ${Math.max(...received.map((p) => p.at)) - ackedAt} ms after the acknowledgement`);
  assert.equal(late.length, 0, `${late.length} campaign pushes reached the vendor later than the acknowledgement + ${BOUND_MS} ms`);
  assert.ok(received.length <= USERS / 2, `the lane still held most of the campaign at the cancel (${received.length} sent in all)`);

  // What reached the vendor is reported submitted; the rest cancelled; together the expanded count.
  const finals = finalOf(outcomes);
  const expanded = Number((await call(stack, 'GET', `/v1/campaigns/${id}`, owner.key)).body.expanded);
  assert.equal(expanded, USERS, 'the whole campaign was expanded before the cancel');
  assert.equal(finals.size, expanded, 'every expanded user has a final outcome');
  assert.ok(
    [...finals.values()].every((list) => new Set(list.map((o) => o.status)).size === 1),
    'no user both accepted and cancelled',
  );
  const accepted = new Set([...finals].filter(([, list]) => list[0]!.status === 'ACCEPTED').map(([uid]) => uid));
  const cancelled = [...finals].filter(([, list]) => list[0]!.status === 'SUPPRESSED').map(([, list]) => list[0]!);
  assert.deepEqual([...accepted].sort(), [...new Set(received.map((p) => tokenOf.get(p.token)!))].sort(), 'ACCEPTED exactly for the users the vendor got');
  assert.equal(accepted.size + cancelled.length, expanded, 'delivered + cancelled = expanded');
  const inLane = cancelled.filter((o) => o.stage === 'fan-out');
  assert.ok(inLane.length > 0, 'the lane stopped dispatches it held');
  t.diagnostic(`${accepted.size} submitted, ${inLane.length} cancelled in the lane, ${cancelled.length - inLane.length} in the business stage`);

  // Task rows: submitted (1) for what the vendor got, failed (3) with CAMPAIGN_CANCELLED for what the lane stopped, none pending.
  const [rows] = await stack.pool.query(
    `SELECT status, fail_code, COUNT(*) AS n FROM im_push_task WHERE uid LIKE 'lane-u-%' GROUP BY status, fail_code ORDER BY status`,
  );
  assert.deepEqual(
    (rows as Array<{ status: number; fail_code: string | null; n: number }>).map((r) => [r.status, r.fail_code, Number(r.n)]),
    [
      [1, null, accepted.size],
      [3, 'CAMPAIGN_CANCELLED', inLane.length],
    ],
  );

  // IM pushes, before and after the cancel, all reached the vendor.
  const imAt = new Set(em.fcm.accepted().map((p) => p.token));
  assert.deepEqual(
    imTokens.filter((tk) => !imAt.has(tk)),
    [],
    'every IM push reached the vendor',
  );
  assert.equal(imAccepted(outcomes), imTokens.length);

  // The progress reports the same, once the ClickHouse sink has the outcomes.
  const wanted = { state: 'cancelled', expanded: USERS, submitted: accepted.size, arrived: accepted.size, cancelled: cancelled.length };
  let report: Record<string, unknown> = {};
  const seen = () => ({
    state: report.state,
    expanded: report.expanded,
    submitted: report.submitted,
    arrived: report.arrived,
    cancelled: (report.suppressed as Record<string, number> | null)?.campaign_cancelled,
  });
  for (const deadline = Date.now() + 20_000; Date.now() < deadline; await sleep(250)) {
    report = (await call(stack, 'GET', `/v1/campaigns/${id}`, owner.key)).body;
    if (JSON.stringify(seen()) === JSON.stringify(wanted)) break;
  }
  assert.deepEqual(seen(), wanted, 'GET /v1/campaigns/{id}');
});
