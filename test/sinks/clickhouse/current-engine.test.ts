/**
 * The schema and every query the project runs or documents, on a current ClickHouse engine (chdb,
 * test/support/chdb.ts) as the data team runs it, beside the stack's 18.16 of the other tests in
 * this folder: all migrations apply (the current-server one with LowCardinality and a TTL, which
 * 18.16 leaves pending), and on a workload with a known ground truth the arrival views, the
 * queries of docs/data.md, `pushctl arrival`'s, `pushctl trace`'s and a campaign's accounting give
 * the same figures as on the old server.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { CampaignProgressReader } from '../../../entry/progress.ts';
import { serverAtLeast } from '../../../migrations/files.ts';
import { CLICKHOUSE_MIGRATIONS_DIR, migrateClickhouseWith } from '../../../migrations/migrate.ts';
import { traceEventsQuery } from '../../../pipeline/trace.ts';
import { ARRIVAL_DIMENSIONS, queryArrival } from '../../../sinks/clickhouse/arrival-query.ts';
import { rowFromOutcome, rowFromReceipt } from '../../../sinks/clickhouse/rows.ts';
import { embeddedClickhouse, type EmbeddedClickhouse } from '../../support/chdb.ts';
import { ARRIVAL_VIEW_QUERY, arrivalFromView, buildWorkload, perVendorFromQuery, truthBy, type ArrivalViewRow, type PerVendorRow } from './fixtures.ts';

// Within the last day: docs/data.md's queries read the last 24 hours.
const BASE_MS = Math.floor((Date.now() - 3 * 3_600_000) / 3_600_000) * 3_600_000;
const workload = buildWorkload(600, 7, BASE_MS);
let engine: EmbeddedClickhouse;

const rows = async <T>(query: string) => (await engine.client.query({ query, format: 'JSONEachRow' })).json<T>();

before(async () => {
  engine = embeddedClickhouse();
  const first = await migrateClickhouseWith(engine.run, 'default', CLICKHOUSE_MIGRATIONS_DIR);
  assert.equal(first.waiting, undefined, `every migration runs on ${engine.version}`);
  assert.ok(first.applied.length >= 7);
  const again = await migrateClickhouseWith(engine.run, 'default', CLICKHOUSE_MIGRATIONS_DIR);
  assert.deepEqual(again, { applied: [], alreadyApplied: first.applied });
  await engine.client.insert({
    table: 'push_events',
    values: [...workload.outcomes.map(rowFromOutcome), ...workload.receipts.map((r) => rowFromReceipt(r, r.at - 100)!)],
    format: 'JSONEachRow',
  });
});

after(() => engine?.close());

test('the current-server migration waits on 18.16 and applies on a current engine', () => {
  assert.ok(serverAtLeast(engine.version, '21.8'), `the embedded engine is current: ${engine.version}`);
  assert.equal(serverAtLeast('18.16.1.0', '21.8'), false);
  assert.equal(serverAtLeast('21.8', '21.8'), true);
  assert.equal(serverAtLeast('21.10.2', '21.8'), true);
  assert.equal(serverAtLeast('3.0', '21.8'), false);
});

test('push_events uses LowCardinality for vendor, app, stage and reason, and drops events after 400 days', async () => {
  const [create] = await rows<{ statement: string }>('SHOW CREATE TABLE push_events');
  const ddl = create!.statement;
  for (const column of ['app_id', 'vendor', 'platform', 'stage', 'reason', 'code', 'sender', 'category'])
    assert.match(ddl, new RegExp(`\`${column}\` LowCardinality\\(String\\)`), column);
  assert.match(ddl, /TTL event_time \+ toIntervalDay\(400\)/);
  assert.match(ddl, /ORDER BY \(app_id, vendor, kind, event_id\)/, 'the sorting key is unchanged');
});

test('the arrival view gives the ground truth per vendor, app and hour', async () => {
  const view = arrivalFromView(await rows<ArrivalViewRow>(ARRIVAL_VIEW_QUERY));
  assert.deepEqual(new Map([...view].map(([key, { rate: _rate, ...counts }]) => [key, counts])), workload.truth);
  for (const v of ['push_submissions', 'push_device_submissions', 'arrival_by_app_hour', 'push_outcome_counts', 'push_latency_by_vendor_hour'])
    assert.ok((await rows(`SELECT * FROM ${v}`)).length > 0, `view ${v} answers`);
});

test('every query of docs/data.md runs, and the per-vendor one gives the ground truth', async () => {
  const queries = [...readFileSync(new URL('../../../docs/data.md', import.meta.url), 'utf8').matchAll(/```sql\n([\s\S]*?)```/g)].map((m) => m[1]!.trim());
  assert.ok(queries.length >= 6, `found ${queries.length} queries`);
  for (const query of queries) await rows(query);
  assert.deepEqual(perVendorFromQuery(await rows<PerVendorRow>(queries[0]!)), truthBy(workload.truth, 0));
});

test("pushctl arrival's queries give the ground truth by vendor and by app, and run by every dimension", async () => {
  const since = Math.floor(BASE_MS / 1000) - 3600;
  for (const [by, part] of [
    ['vendor', 0],
    ['app', 1],
  ] as const) {
    const got = await queryArrival(engine.client, by, since);
    assert.deepEqual(
      new Map(got.map((r) => [r.key, { submitted: r.submitted, arrived: r.arrived, delivered: r.delivered, unknown: r.unknown }])),
      truthBy(workload.truth, part),
      by,
    );
  }
  for (const by of ARRIVAL_DIMENSIONS) await queryArrival(engine.client, by, since, 'app-a');
});

test("pushctl trace's query returns a user's events once each, in time order", async () => {
  const uid = 'u7';
  const events = await rows<{ event_id: string; event_ms: string }>(traceEventsQuery(uid, undefined, BASE_MS - 3_600_000));
  const expected = [...workload.outcomes.filter((o) => o.uid === uid), ...workload.receipts.filter((r) => r.uid === uid)].map((e) => e.event_id);
  assert.deepEqual(events.map((e) => e.event_id).sort(), expected.sort());
  const times = events.map((e) => Number(e.event_ms));
  assert.deepEqual(
    times,
    [...times].sort((a, b) => a - b),
  );
});

test("a campaign's accounting: users not pushed by reason, pairs submitted and arrived", async () => {
  const accepted = workload.outcomes.filter((o) => o.status === 'ACCEPTED').slice(0, 3);
  const business = { sender: 'shop', category: 'CAMPAIGN', campaign_id: 'camp-1' };
  const suppressed = workload.outcomes.find((o) => o.status === 'SUPPRESSED')!;
  await engine.client.insert({
    table: 'push_events',
    values: [
      ...accepted.map((o) => ({ ...rowFromOutcome({ ...o, event_id: `${o.event_id}-c`, task_id: `${o.task_id}-c` }), ...business })),
      { ...rowFromOutcome({ ...suppressed, event_id: 'camp-suppressed', uid: 'u-quiet' }), ...business },
    ],
    format: 'JSONEachRow',
  });
  const reader = new CampaignProgressReader({ read: async () => undefined }, engine.client);
  assert.deepEqual(await reader.accounting('camp-1'), { suppressed: { dnd: 1 }, submitted: 3, arrived: 3 });
});
