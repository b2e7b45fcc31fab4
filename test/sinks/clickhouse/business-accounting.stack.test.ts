/**
 * Accounting of business pushes on the stack's real ClickHouse (migrations up to 006): outcomes
 * tagged with sender, category and campaign become rows carrying them, and `pushctl arrival --by
 * campaign|sender` counts distinct (task, device) pairs exactly as for IM (duplicates and receipts
 * change nothing, IM pairs are left out). Expected figures are counted by hand from the scripted rows.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { PassThrough } from 'node:stream';
import { arrival } from '../../../cli/commands/arrival.ts';
import { rowFromOutcome, rowFromReceipt } from '../../../sinks/clickhouse/rows.ts';
import { PushEventWriter } from '../../../sinks/clickhouse/writer.ts';
import type { BusinessTag, OutcomeStatus, PushOutcome, PushReceipt } from '../../../processors/model/records.ts';
import { createTestDatabase, type TestDatabase } from './support.ts';

const AT = Date.UTC(2026, 0, 15, 12, 0);

function outcome(task: string, status: OutcomeStatus, business: BusinessTag | null, n: number): PushOutcome {
  return {
    event_id: `${task}-${status}-${n}`,
    task_id: task,
    uid: `u-${task}`,
    device_id: 'd1',
    conv_id: 'biz:x',
    seq: 0,
    msg_id: task,
    app_id: 'im.demo',
    platform: 'android',
    vendor: 'hms',
    stage: 'fan-out',
    status,
    reason: null,
    code: null,
    vendor_message_id: `vm-${task}`,
    collapse_id: null,
    attempts: 1,
    persisted_at: AT - 1000,
    at: AT,
    latency_ms: 1000,
    token_hash: null,
    business,
  };
}

function receipt(task: string): PushReceipt {
  return {
    event_id: `r-${task}`,
    vendor: 'hms',
    vendor_message_id: `vm-${task}`,
    status: 'DELIVERED',
    code: '0',
    at: AT + 2000,
    received_at: AT + 2100,
    matched: true,
    task_id: task,
    uid: `u-${task}`,
    device_id: 'd1',
    app_id: 'im.demo',
    platform: 'android',
    conv_id: 'biz:x',
    seq: 0,
  };
}

describe('business accounting in ClickHouse', () => {
  let db: TestDatabase;
  before(async () => {
    db = await createTestDatabase('business_accounting');
  });
  after(async () => {
    await db?.drop();
  });

  test('arrival by campaign and by sender counts each pair once; IM pairs are not in them', async () => {
    const spring: BusinessTag = { sender: 'marketing', category: 'CAMPAIGN', campaign_id: 'spring', expire_at: null };
    const orders: BusinessTag = { sender: 'orders', category: 'REMINDER', campaign_id: null, expire_at: null };
    const writer = new PushEventWriter({ connection: db.connection });
    // spring: 3 pairs accepted (one twice: a replay), 1 failed, 1 delivered by receipt. orders: 2 accepted. IM: 4 accepted.
    const rows = [
      outcome('s1', 'ACCEPTED', spring, 1),
      outcome('s1', 'ACCEPTED', spring, 1),
      outcome('s2', 'ACCEPTED', spring, 1),
      outcome('s3', 'ACCEPTED', spring, 1),
      outcome('s4', 'FAILED', spring, 1),
      outcome('o1', 'ACCEPTED', orders, 1),
      outcome('o2', 'ACCEPTED', orders, 1),
      ...['i1', 'i2', 'i3', 'i4'].map((t) => outcome(t, 'ACCEPTED', null, 1)),
    ];
    for (const o of rows) writer.add(rowFromOutcome(o));
    writer.add(rowFromReceipt(receipt('s2'), AT - 1000)!);
    writer.add(rowFromReceipt(receipt('s2'), AT - 1000)!);
    await writer.flush();
    await writer.close();
    const out = new PassThrough();
    const now = () => AT + 60_000;
    const brief = (r: { key: string; submitted: number; arrived: number; delivered: number; unknown: number }) => [
      r.key,
      r.submitted,
      r.arrived,
      r.delivered,
      r.unknown,
    ];
    const byCampaign = await arrival({ since: '1h', by: 'campaign', client: db.client, out, now });
    assert.deepEqual(byCampaign.map(brief), [['spring', 4, 3, 1, 2]]);
    const bySender = await arrival({ since: '1h', by: 'sender', client: db.client, out, now });
    assert.deepEqual(bySender.map(brief), [
      ['marketing', 4, 3, 1, 2],
      ['orders', 2, 2, 0, 2],
    ]);
    const byApp = await arrival({ since: '1h', by: 'app', client: db.client, out, now });
    assert.deepEqual(byApp.map(brief), [['im.demo', 10, 9, 1, 8]], 'by app every pair, IM and business, once');
    const stored = await db.client.query({
      query: "SELECT DISTINCT sender, category, campaign_id FROM push_events WHERE source = 'outcome' ORDER BY sender",
      format: 'JSONEachRow',
    });
    assert.deepEqual(await stored.json(), [
      { sender: '', category: '', campaign_id: '' },
      { sender: 'marketing', category: 'CAMPAIGN', campaign_id: 'spring' },
      { sender: 'orders', category: 'REMINDER', campaign_id: '' },
    ]);
    // docs/entry.md's query for the data team gives the same figures.
    const [query] = [...readFileSync(new URL('../../../docs/entry.md', import.meta.url), 'utf8').matchAll(/```sql\n([\s\S]*?)```/g)].map((m) => m[1]!);
    const docs = await db.client.query({ query: query!, format: 'JSONEachRow' });
    const figures = (await docs.json<Record<string, string | number>>()).map((r) => [
      r.campaign,
      Number(r.submitted),
      Number(r.arrived),
      Number(r.arrival_rate),
    ]);
    assert.deepEqual(figures, [['spring', 4, 3, 0.75]]);
  });
});
