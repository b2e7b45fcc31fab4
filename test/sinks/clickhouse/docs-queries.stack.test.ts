import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { rowFromOutcome, rowFromReceipt } from '../../../sinks/clickhouse/rows.ts';
import { PushEventWriter } from '../../../sinks/clickhouse/writer.ts';
import { buildWorkload, perVendorFromQuery, truthBy, type PerVendorRow } from './fixtures.ts';
import { createTestDatabase, type TestDatabase } from './support.ts';

/** The ready queries of docs/data.md run on the stack's ClickHouse and give the workload's figures. */
describe('docs/data.md queries', () => {
  const queries = [...readFileSync(new URL('../../../docs/data.md', import.meta.url), 'utf8').matchAll(/```sql\n([\s\S]*?)```/g)].map((m) => m[1]!.trim());
  const workload = buildWorkload(300, 21, Math.floor((Date.now() - 3 * 3_600_000) / 3_600_000) * 3_600_000);
  let db: TestDatabase;

  before(async () => {
    db = await createTestDatabase('docs');
    const writer = new PushEventWriter({ connection: db.connection });
    for (const o of workload.outcomes) writer.add(rowFromOutcome(o));
    for (const r of workload.receipts) writer.add(rowFromReceipt(r, r.at - 100)!);
    await writer.flush();
    await writer.close();
  });
  after(async () => {
    await db?.drop();
  });

  test('every query runs', async () => {
    assert.ok(queries.length >= 6, `found ${queries.length} queries`);
    for (const query of queries) {
      const rs = await db.client.query({ query, format: 'JSONEachRow' });
      await rs.json();
    }
  });

  test('the per-vendor query gives the ground truth', async () => {
    const rs = await db.client.query({ query: queries[0]!, format: 'JSONEachRow' });
    assert.deepEqual(perVendorFromQuery(await rs.json<PerVendorRow>()), truthBy(workload.truth, 0));
  });
});
