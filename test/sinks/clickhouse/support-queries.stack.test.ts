/**
 * The support desk's ready queries (docs/data.md, "Support desk") on the stack's ClickHouse: read
 * from the document itself, run on a fresh database holding a known history (a user's decisions
 * and vendor answers, with their details; a merge burst on two devices; other users, another app,
 * events older than the queries' range; every outcome written twice, as a replay would), and each
 * must give exactly what that history says.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { receiptEventId } from '../../../processors/model/ids.ts';
import type { OutcomeStatus, PushOutcome } from '../../../processors/model/records.ts';
import { rowFromOutcome, rowFromReceipt } from '../../../sinks/clickhouse/rows.ts';
import { PushEventWriter } from '../../../sinks/clickhouse/writer.ts';
import { createTestDatabase, type TestDatabase } from './support.ts';

const doc = readFileSync(new URL('../../../docs/data.md', import.meta.url), 'utf8');
const section = doc.slice(doc.indexOf('## Support desk'));
const [userDay, suppressions, merges] = [...section.matchAll(/```sql\n([\s\S]*?)```/g)].map((m) => m[1]!.trim());

const UID = 'u-support-1';
const APP = 'app-support';
const CONV = 'c-burst';
const HOUR = 3_600_000;
const base = Date.now() - 2 * HOUR;

/** The doc's example uid, app and conversation replaced by the test's. */
const ours = (query: string) => query.replaceAll("'u-123'", `'${UID}'`).replaceAll("'im.demo'", `'${APP}'`).replaceAll("'c-42'", `'${CONV}'`);

let n = 0;
function outcome(o: {
  uid?: string;
  app?: string;
  device: string | null;
  conv: string;
  seq: number;
  stage: string;
  status: OutcomeStatus;
  reason?: string;
  vendor?: string;
  detail?: string;
  at: number;
}): PushOutcome {
  n++;
  return {
    event_id: `ev-${n}`,
    task_id: `task-${o.uid ?? UID}-${o.conv}-${o.seq}-${o.device ?? ''}`,
    uid: o.uid ?? UID,
    device_id: o.device,
    conv_id: o.conv,
    seq: o.seq,
    msg_id: `m-${o.conv}-${o.seq}`,
    app_id: o.app ?? APP,
    platform: 'android',
    vendor: o.vendor ?? null,
    stage: o.stage,
    status: o.status,
    reason: o.reason ?? null,
    code: null,
    vendor_message_id: o.status === 'ACCEPTED' ? `vm-${n}` : null,
    collapse_id: null,
    attempts: o.stage === 'fan-out' ? 1 : 0,
    persisted_at: o.at - 50,
    at: o.at,
    latency_ms: o.status === 'ACCEPTED' ? 50 : null,
    detail: o.detail ?? null,
  };
}

const push = (device: string, vendor: string) => 'on=OFFLINE;ch=' + vendor + ';why=' + (device === 'd1' ? 'maker' : 'only');
const history: PushOutcome[] = [
  // The user's day: a burst on two devices (leading, merged into seq 3, trailing).
  ...(['d1', 'd2'] as const).flatMap((device, k) => {
    const vendor = k === 0 ? 'hms' : 'fcm';
    return [
      outcome({ device, conv: CONV, seq: 1, stage: 'fan-out', status: 'ACCEPTED', vendor, detail: push(device, vendor), at: base + 1000 + k }),
      outcome({ device, conv: CONV, seq: 2, stage: 'merge', status: 'MERGED', reason: 'merged', detail: 'by=3;win=5000', at: base + 1200 + k }),
      outcome({ device, conv: CONV, seq: 3, stage: 'fan-out', status: 'ACCEPTED', vendor, detail: push(device, vendor), at: base + 6500 + k }),
    ];
  }),
  outcome({
    device: 'd1',
    conv: 'c-quiet',
    seq: 1,
    stage: 'policy',
    status: 'SUPPRESSED',
    reason: 'dnd',
    detail: 'tz=Asia/Tokyo;qh=22:00-07:00;local=23:10',
    at: base + 20_000,
  }),
  outcome({ device: 'd2', conv: 'c-muted', seq: 4, stage: 'policy', status: 'SUPPRESSED', reason: 'mute', at: base + 30_000 }),
  outcome({
    device: 'd1',
    conv: 'c-chat',
    seq: 9,
    stage: 'online-filter',
    status: 'SUPPRESSED',
    reason: 'online_ack',
    detail: 'hb=12000;hold=10000;ack=300',
    at: base + 40_000,
  }),
  outcome({ device: null, conv: 'c-chat', seq: 10, stage: 'online-filter', status: 'DROPPED', reason: 'no_token', at: base + 50_000 }),
  // Older than a day (and than a week): in no range of the queries.
  outcome({ device: 'd1', conv: 'c-old', seq: 1, stage: 'policy', status: 'SUPPRESSED', reason: 'dnd', at: Date.now() - 2 * 24 * HOUR }),
  outcome({ device: 'd1', conv: CONV, seq: 0, stage: 'fan-out', status: 'ACCEPTED', vendor: 'hms', at: Date.now() - 8 * 24 * HOUR }),
  // Other users of the app; another app.
  outcome({ uid: 'u-support-2', device: 'x1', conv: 'c-x', seq: 1, stage: 'policy', status: 'SUPPRESSED', reason: 'dnd', at: base + 60_000 }),
  outcome({ uid: 'u-support-2', device: 'x1', conv: 'c-x', seq: 2, stage: 'policy', status: 'SUPPRESSED', reason: 'dnd', at: base + 61_000 }),
  outcome({
    uid: 'u-support-3',
    device: 'y1',
    conv: 'c-y',
    seq: 1,
    stage: 'policy',
    status: 'DROPPED',
    reason: 'quota',
    detail: 'skip=xiaomi,fcm',
    at: base + 62_000,
  }),
  outcome({
    uid: 'u-support-3',
    device: 'y1',
    conv: CONV,
    seq: 2,
    stage: 'merge',
    status: 'MERGED',
    reason: 'merged',
    detail: 'by=3;win=5000',
    at: base + 63_000,
  }),
  outcome({ uid: 'u-other', app: 'app-other', device: 'z1', conv: 'c-z', seq: 1, stage: 'policy', status: 'SUPPRESSED', reason: 'mute', at: base + 64_000 }),
  outcome({ uid: 'u-support-3', device: 'y1', conv: 'c-y', seq: 3, stage: 'policy', status: 'SUPPRESSED', reason: 'dnd', at: Date.now() - 8 * 24 * HOUR }),
];
const firstAccepted = history[0]!;
const receipt = {
  event_id: receiptEventId('hms', firstAccepted.vendor_message_id!, firstAccepted.task_id, 'd1', 'DELIVERED'),
  vendor: 'hms',
  vendor_message_id: firstAccepted.vendor_message_id!,
  status: 'DELIVERED' as const,
  code: '0',
  at: base + 3000,
  received_at: base + 3100,
  matched: true,
  task_id: firstAccepted.task_id,
  uid: UID,
  device_id: 'd1',
  app_id: APP,
  platform: 'android',
  conv_id: CONV,
  seq: 1,
};

const DAY_AGO = () => Date.now() - 24 * HOUR;
const WEEK_AGO = () => Date.now() - 7 * 24 * HOUR;

describe('docs/data.md, Support desk: the three ready queries', () => {
  let db: TestDatabase;

  before(async () => {
    db = await createTestDatabase('support');
    // Written twice, in two inserts: a replay's duplicates must not show.
    for (let copy = 0; copy < 2; copy++) {
      const writer = new PushEventWriter({ connection: db.connection });
      for (const o of history) writer.add(rowFromOutcome(o));
      writer.add(rowFromReceipt(receipt, firstAccepted.persisted_at)!);
      await writer.flush();
      await writer.close();
    }
  });
  after(async () => {
    await db?.drop();
  });

  const run = async <T>(query: string) => (await db.client.query({ query: ours(query), format: 'JSONEachRow' })).json<T>();

  test("a user's last 24 hours: each decision and answer once, in order, with its reason and facts", async () => {
    const rows = await run<Record<string, string | number | null>>(userDay!);
    const want = history
      .filter((o) => o.uid === UID && o.at >= DAY_AGO())
      .map((o) => ({
        at: o.at,
        id: o.event_id,
        stage: o.stage,
        kind: o.status.toLowerCase(),
        reason: o.reason ?? '',
        device: o.device_id ?? '',
        seq: o.seq,
        detail: o.detail,
      }))
      .concat([{ at: receipt.at, id: receipt.event_id, stage: 'receipt-join', kind: 'delivered', reason: '', device: 'd1', seq: 1, detail: null }])
      .sort((a, b) => a.at - b.at || a.id.localeCompare(b.id))
      .map(({ stage, kind, reason, device, seq, detail }) => ({ stage, kind, reason, device, seq, detail }));
    assert.deepEqual(
      rows.map((r) => ({ stage: r.stage, kind: r.kind, reason: r.reason, device: r.device_id, seq: Number(r.seq), detail: r.detail })),
      want,
    );
  });

  test('suppressions by reason for an app: distinct messages not pushed and users, by stage and reason, this app and week only', async () => {
    const rows = await run<{ stage: string; kind: string; reason: string; not_pushed: string; users: string }>(suppressions!);
    const groups = new Map<string, { events: Set<string>; users: Set<string> }>();
    for (const o of history) {
      if (o.app_id !== APP || (o.status !== 'SUPPRESSED' && o.status !== 'DROPPED') || o.at < WEEK_AGO()) continue;
      const key = `${o.stage}|${o.status.toLowerCase()}|${o.reason}`;
      const g = groups.get(key) ?? { events: new Set(), users: new Set() };
      g.events.add(o.event_id);
      g.users.add(o.uid);
      groups.set(key, g);
    }
    const want = Object.fromEntries([...groups].map(([key, g]) => [key, [g.events.size, g.users.size]]));
    assert.deepEqual(Object.fromEntries(rows.map((r) => [`${r.stage}|${r.kind}|${r.reason}`, [Number(r.not_pushed), Number(r.users)]])), want);
    assert.deepEqual(want['policy|suppressed|dnd'], [4, 2], 'the history has what the query must group (two days old counts in the week)');
    assert.equal(Number(rows[0]!.not_pushed), 4, 'largest first');
  });

  test("a conversation's merges: per device, each accepted push with the messages merged into it", async () => {
    const rows = await run<{ device_id: string; pushed_as_seq: string | number; seq: string | number; kind: string }>(merges!);
    assert.deepEqual(
      rows.map((r) => `${r.device_id}: ${r.kind} seq ${Number(r.seq)} → push ${Number(r.pushed_as_seq)}`),
      [
        'd1: accepted seq 1 → push 1',
        'd1: merged seq 2 → push 3',
        'd1: accepted seq 3 → push 3',
        'd2: accepted seq 1 → push 1',
        'd2: merged seq 2 → push 3',
        'd2: accepted seq 3 → push 3',
        'y1: merged seq 2 → push 3',
      ],
    );
  });
});
