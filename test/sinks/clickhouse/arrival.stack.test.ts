import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { arrival } from '../../../cli/commands/arrival.ts';
import { rowFromOutcome, rowFromReceipt } from '../../../sinks/clickhouse/rows.ts';
import { PushEventWriter } from '../../../sinks/clickhouse/writer.ts';
import { ARRIVAL_VIEW_QUERY, arrivalFromView, buildWorkload, type ArrivalTruth, type ArrivalViewRow } from './fixtures.ts';
import { createTestDatabase, type TestDatabase } from './support.ts';

/** Runs on the stack's real ClickHouse (18.16): DDL, writer, views, exactness under duplicates. */
describe('ClickHouse push events and arrival views', () => {
  let db: TestDatabase;
  before(async () => {
    db = await createTestDatabase('arrival');
  });
  after(async () => {
    await db?.drop();
  });

  const workload = buildWorkload(600);

  async function arrivalByVendorAppHour(): Promise<Map<string, ArrivalTruth & { rate: number }>> {
    const rs = await db.client.query({ query: ARRIVAL_VIEW_QUERY, format: 'JSONEachRow' });
    return arrivalFromView(await rs.json<ArrivalViewRow>());
  }

  function assertMatchesTruth(actual: Map<string, ArrivalTruth & { rate: number }>) {
    assert.equal(actual.size, workload.truth.size, 'one row per (vendor, app, hour)');
    for (const [key, expected] of workload.truth) {
      const got = actual.get(key);
      assert.ok(got, `row for ${key}`);
      assert.deepEqual({ submitted: got.submitted, arrived: got.arrived, delivered: got.delivered, unknown: got.unknown }, expected, key);
      assert.equal(got.rate, Math.round((expected.arrived / expected.submitted) * 1e6) / 1e6, `rate of ${key}`);
    }
  }

  async function writeAll(writer: PushEventWriter, receiptsOnly = false) {
    if (!receiptsOnly) for (const o of workload.outcomes) writer.add(rowFromOutcome(o));
    for (const r of workload.receipts) writer.add(rowFromReceipt(r, r.at - 1000)!);
    await writer.flush();
  }

  test('arrival per vendor, app and hour equals the ground truth, and stays equal after duplicate receipts and a full replay', async () => {
    const writer = new PushEventWriter({ connection: db.connection, maxBatchRows: 250 });
    try {
      await writeAll(writer);
      assertMatchesTruth(await arrivalByVendorAppHour());

      await writeAll(writer, true); // every receipt delivered twice
      await writeAll(writer, true);
      assertMatchesTruth(await arrivalByVendorAppHour());

      await writeAll(writer); // the outcomes topic replayed from the beginning
      assertMatchesTruth(await arrivalByVendorAppHour());

      const raw = await db.client.query({ query: 'SELECT count() AS c FROM push_events', format: 'JSONEachRow' });
      const [{ c }] = (await raw.json<{ c: string }>()) as [{ c: string }];
      assert.ok(Number(c) > workload.outcomes.length + workload.receipts.length, 'duplicates are really stored (figures stay exact regardless)');
    } finally {
      await writer.close();
    }
  });

  test('by app and hour each (task, device) pair counts once; outcome counts are exact under replay', async () => {
    const rs = await db.client.query({
      query: 'SELECT app_id, sum(pairs_submitted) AS s, sum(pairs_arrived) AS a FROM arrival_by_app_hour GROUP BY app_id ORDER BY app_id',
      format: 'JSONEachRow',
    });
    const byApp = await rs.json<{ app_id: string; s: string; a: string }>();
    const expected = new Map<string, { s: number; a: number }>();
    for (const [key, t] of workload.truth) {
      const app = key.split('|')[1]!;
      const e = expected.get(app) ?? { s: 0, a: 0 };
      e.s += t.submitted;
      e.a += t.arrived;
      expected.set(app, e);
    }
    assert.deepEqual(
      byApp.map((r) => ({ app: r.app_id, s: Number(r.s), a: Number(r.a) })),
      [...expected].sort().map(([app, e]) => ({ app, ...e })),
    );

    const counts = await db.client.query({
      query: "SELECT toString(kind) AS kind, sum(events) AS n FROM push_outcome_counts WHERE kind IN ('suppressed', 'merged', 'dropped') GROUP BY kind",
      format: 'JSONEachRow',
    });
    const got = Object.fromEntries((await counts.json<{ kind: string; n: string }>()).map((r) => [r.kind.toUpperCase(), Number(r.n)]));
    assert.deepEqual(got, Object.fromEntries(workload.otherOutcomes));
  });

  test('the same figures come out of the base table with FINAL (dedupe by event key)', async () => {
    await db.client.command({ query: 'OPTIMIZE TABLE push_events FINAL' });
    const rs = await db.client.query({ query: 'SELECT count() AS c FROM push_events FINAL', format: 'JSONEachRow' });
    const [{ c }] = (await rs.json<{ c: string }>()) as [{ c: string }];
    assert.equal(Number(c), workload.outcomes.length + workload.receipts.length);
    assertMatchesTruth(await arrivalByVendorAppHour());
  });

  test('pushctl arrival prints the same figures by vendor, app and hour', async () => {
    const now = () => Date.UTC(2026, 10, 20, 11, 0, 0);
    const sum = (pick: (key: string) => string) => {
      const out = new Map<string, { submitted: number; arrived: number; delivered: number; unknown: number }>();
      for (const [key, t] of workload.truth) {
        const k = pick(key);
        const e = out.get(k) ?? { submitted: 0, arrived: 0, delivered: 0, unknown: 0 };
        e.submitted += t.submitted;
        e.arrived += t.arrived;
        e.delivered += t.delivered;
        e.unknown += t.unknown;
        out.set(k, e);
      }
      return [...out].sort(([a], [b]) => a.localeCompare(b)).map(([key, e]) => ({ key, ...e }));
    };
    const hourKey = (key: string) => new Date(Number(key.split('|')[2]) * 1000).toISOString().replace('T', ' ').slice(0, 19);
    const expected = { vendor: sum((k) => k.split('|')[0]!), app: sum((k) => k.split('|')[1]!), hour: sum(hourKey) };
    for (const by of ['vendor', 'app', 'hour'] as const) {
      const out = new PassThrough();
      let printed = '';
      out.on('data', (c: Buffer) => (printed += c.toString()));
      const rows = await arrival({ since: '6h', by, client: db.client, out, now });
      assert.deepEqual(
        rows.map(({ key, submitted, arrived, delivered, unknown }) => ({ key, submitted, arrived, delivered, unknown })),
        expected[by],
        by,
      );
      for (const r of expected[by]) {
        assert.ok(printed.includes(r.key), `${by} table names ${r.key}`);
        assert.ok(printed.includes(`${((r.arrived / r.submitted) * 100).toFixed(2)}%`), `${by} table shows the rate of ${r.key}`);
      }
    }
    const out = new PassThrough();
    const none = await arrival({ since: '1h', by: 'vendor', client: db.client, out, now: () => Date.UTC(2026, 10, 25) });
    assert.deepEqual(none, [], 'nothing submitted in the last hour of another day');
    await assert.rejects(arrival({ since: 'yesterday', client: db.client, out }), /--since/);
    await assert.rejects(arrival({ by: 'device', client: db.client, out }), /--by/);
  });
});
