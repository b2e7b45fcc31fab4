/**
 * The HTTP entry on the real stack (Kafka, registry, MariaDB, ClickHouse): API keys stored as
 * hashes, 401 without a valid key, 400 naming the field, 429 with Retry-After over a key's rate,
 * accepted requests in push.requests / push.campaigns with the key's business as sender, and a
 * campaign's progress from the expansion (run here) and ClickHouse.
 */
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import type { RowDataPacket } from 'mysql2/promise';
import { requestId } from '../../processors/business/transfer.ts';
import type { PushCampaignRecord, PushRequestRecord } from '../../processors/campaigns/records.ts';
import type { StreamsApp } from '../../topology/runtime.ts';
import { call, readAll, sha256, startEntryStack, startExpansion, type EntryStack } from './support.ts';

let stack: EntryStack;
let key: string;
let keyId: string;
const apps: StreamsApp[] = [];

before(async () => {
  stack = await startEntryStack();
  ({ key, keyId } = await stack.keys.create('order-service'));
});

after(async () => {
  for (const app of apps) await app.close();
  await stack?.cleanup();
});

test('a key is stored only as the sha256 of its secret; requests without a valid key get 401', async () => {
  assert.match(key, /^pk_[0-9a-f]{16}\.[A-Za-z0-9_-]{43}$/);
  const [rows] = await stack.pool.query<RowDataPacket[]>('SELECT * FROM push_business_key');
  assert.equal(rows.length, 1);
  const stored = JSON.stringify(rows[0], (_k, v: unknown) => (Buffer.isBuffer(v) ? v.toString('hex') : v));
  const secret = key.split('.')[1]!;
  assert.ok(!stored.includes(secret) && !stored.includes(key), 'neither the key nor its secret is in the table');
  assert.deepEqual(rows[0]!.secret_sha256, sha256(secret));
  assert.equal(rows[0]!.business, 'order-service');

  const push = { uid: 'u-1', app_id: 'im.demo', title: 't', body: 'b' };
  for (const k of [undefined, 'pk_0000000000000000.' + 'A'.repeat(43), `${key.slice(0, -1)}x`, 'garbage']) {
    const answer = await call(stack, 'POST', '/v1/pushes', k, push);
    assert.equal(answer.status, 401, String(k));
    assert.equal((answer.body.error as { field: string }).field, 'authorization');
  }
  const other = await stack.keys.create('revoked-business');
  assert.equal((await call(stack, 'POST', '/v1/pushes', other.key, push)).status, 202);
  assert.equal(await stack.keys.revoke(other.keyId), true);
  assert.equal((await call(stack, 'POST', '/v1/pushes', other.key, push)).status, 401, 'a revoked key is refused');
  assert.equal((await stack.keys.list('order-service')).map((k) => k.keyId).join(), keyId);
});

test('/metrics counts answers by route and status, without a key and without naming a campaign', async () => {
  const scrape = async () => (await fetch(`${stack.url}/metrics`)).text();
  const count = (text: string, route: string, status: number) =>
    Number(new RegExp(`^push_entry_requests_total\\{route="${route}",status="${status}"\\} (\\d+)$`, 'm').exec(text)?.[1] ?? 0);
  const before = await scrape();
  await call(stack, 'POST', '/v1/pushes', undefined, { uid: 'u-m' });
  await call(stack, 'GET', '/v1/campaigns/c-metrics-1', key);
  await call(stack, 'GET', '/v1/campaigns/c-metrics-2', key);
  const text = await scrape();
  assert.equal(count(text, 'pushes', 401), count(before, 'pushes', 401) + 1);
  assert.equal(count(text, 'campaign', 404), count(before, 'campaign', 404) + 2);
  assert.doesNotMatch(text, /c-metrics/, 'a campaign id is not a label');
  assert.match(text, /^# TYPE push_entry_requests_total counter$/m);
});

test('a valid push is answered 202 with its request id and is in push.requests, keyed by uid, sent by the key business', async () => {
  const answer = await call(
    stack,
    'POST',
    '/v1/pushes',
    key,
    { uid: 'u-42', app_id: 'im.demo', category: 'reminder', template_id: 'order_shipped', template_params: { order: '77' }, data: { link: 'app://o/77' } },
    { 'idempotency-key': 'order-77:shipped' },
  );
  assert.equal(answer.status, 202, JSON.stringify(answer.body));
  // The request id names the push's task rows (uid, biz:<request id>, 0, device) and events (msg_id).
  assert.deepEqual(answer.body, { request_id: requestId('u-42', 'order-service', 'order-77:shipped'), idempotency_key: 'order-77:shipped' });
  assert.match(answer.body.request_id as string, /^[0-9a-f]{32}$/);
  const records = (await readAll<PushRequestRecord>(stack, 'requests')).filter((r) => r.value.sender === 'order-service');
  assert.equal(records.length, 1);
  const r = records[0]!;
  assert.equal(r.key, 'u-42');
  assert.equal(r.value.idempotency_key, 'order-77:shipped');
  assert.equal(r.value.category, 'REMINDER');
  assert.equal(r.value.template_id, 'order_shipped');
  assert.deepEqual(r.value.template_params, { order: '77' });
  assert.equal(r.value.campaign_id, null);
});

test('invalid requests get 400 naming the field (or 413, 415 also without a Content-Type, 404, 405) and nothing reaches Kafka', async () => {
  const before = (await readAll(stack, 'requests')).length;
  const cases: Array<[string, string, unknown, number, string]> = [
    ['POST', '/v1/pushes', { uid: 'u-1', app_id: 'im.demo' }, 400, 'title'],
    ['POST', '/v1/pushes', { uid: 'u-1', app_id: 'im.demo', title: 't', body: 'b', sender: 'x' }, 400, 'sender'],
    ['POST', '/v1/pushes', { uid: 'u-1', app_id: 'im.demo', title: 't', body: 'b', expire_at: 1 }, 400, 'expire_at'],
    ['POST', '/v1/pushes', { uid: 'u-1', app_id: 'im.demo', title: 't', body: 'b', expire_at: '2099-01-01T00:00:00' }, 400, 'expire_at'],
    ['POST', '/v1/pushes', '{"uid": ', 400, 'body'],
    ['POST', '/v1/pushes', { uid: 'u-1', app_id: 'im.demo', title: 'x'.repeat(1_000_000) }, 413, 'body'],
    ['POST', '/v1/campaigns', { app_id: 'im.demo', title: 't', body: 'b', uids: 'u-1' }, 400, 'uids'],
    ['GET', '/v1/pushes', undefined, 405, 'method'],
    ['POST', '/v1/elsewhere', {}, 404, 'path'],
  ];
  for (const [method, path, body, status, field] of cases) {
    const answer = await call(stack, method, path, key, body);
    assert.equal(answer.status, status, `${method} ${path} ${JSON.stringify(answer.body)}`);
    assert.equal((answer.body.error as { field: string }).field, field);
    assert.equal(typeof (answer.body.error as { message: string }).message, 'string');
  }
  // A JSON body is refused unless the request says it is JSON: another type, or none at all (a Buffer body gets no Content-Type from fetch).
  const push = Buffer.from(JSON.stringify({ uid: 'u-1', app_id: 'im.demo', title: 't', body: 'b' }));
  for (const type of [undefined, 'text/plain', 'application/json-patch+json']) {
    const res = await fetch(`${stack.url}/v1/pushes`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, ...(type ? { 'content-type': type } : {}) },
      body: push,
    });
    assert.equal(res.status, 415, String(type));
    assert.deepEqual(await res.json(), { error: { field: 'content-type', message: 'expected application/json' } });
  }
  assert.equal((await readAll(stack, 'requests')).length, before);
  const charset = await call(stack, 'POST', '/v1/pushes', key, push.toString(), { 'content-type': 'application/json; charset=utf-8' });
  assert.equal(charset.status, 202, 'application/json with a charset is JSON');
  assert.equal((await readAll(stack, 'requests')).length, before + 1);
});

test('over the key rate: 429 with Retry-After; another key is not affected', async () => {
  const slow = await stack.keys.create('slow-sender', 3);
  const push = { uid: 'u-9', app_id: 'im.demo', title: 't', body: 'b' };
  const statuses: number[] = [];
  let retryAfter: string | null = null;
  for (let i = 0; i < 5; i++) {
    const answer = await call(stack, 'POST', '/v1/pushes', slow.key, push);
    statuses.push(answer.status);
    if (answer.status === 429) retryAfter = answer.headers.get('retry-after');
  }
  assert.deepEqual(statuses.slice(0, 3), [202, 202, 202]);
  assert.ok(
    statuses.slice(3).every((s) => s === 429),
    statuses.join(),
  );
  assert.ok(Number(retryAfter) >= 1, `Retry-After ${retryAfter}`);
  assert.equal((await call(stack, 'POST', '/v1/pushes', key, push)).status, 202);
  await new Promise((r) => setTimeout(r, 1_100));
  assert.equal((await call(stack, 'POST', '/v1/pushes', slow.key, push)).status, 202, 'allowed again after Retry-After');
});

test('a campaign: 202 with its id, expanded once per distinct uid, progress with ClickHouse figures', async () => {
  const uids = Array.from({ length: 300 }, (_, i) => `cu-${i}`);
  const body = { app_id: 'im.demo', title: 'Sale', body: 'Today only', uids: [...uids, 'cu-1'], idempotency_key: 'spring' };
  const answer = await call(stack, 'POST', '/v1/campaigns', key, body);
  assert.equal(answer.status, 202, JSON.stringify(answer.body));
  const id = answer.body.campaign_id as string;
  assert.equal(answer.body.uids, 300);
  assert.equal((await call(stack, 'POST', '/v1/campaigns', key, body)).body.campaign_id, id, 'a retried POST names the same campaign');
  assert.equal((await call(stack, 'GET', `/v1/campaigns/${id}`, key)).status, 404, 'not known before the expansion took it');

  apps.push(await startExpansion(stack, 10_000));
  const deadline = Date.now() + 60_000;
  let report: Record<string, unknown> = {};
  while (Date.now() < deadline) {
    const got = await call(stack, 'GET', `/v1/campaigns/${id}`, key);
    if (got.status === 200) report = got.body;
    if (report.state === 'done') break;
    await new Promise((r) => setTimeout(r, 250));
  }
  assert.equal(report.state, 'done', JSON.stringify(report));
  assert.equal(report.total, 300);
  assert.equal(report.expanded, 300);
  const requests = (await readAll<PushRequestRecord>(stack, 'requests')).filter((r) => r.value.campaign_id === id);
  assert.deepEqual(requests.map((r) => r.key).sort(), [...uids].sort(), 'each uid once, though listed twice and POSTed twice');
  assert.equal((await readAll<PushCampaignRecord>(stack, 'campaigns')).filter((r) => r.key === id).length, 2);

  // Another business cannot see it.
  const other = await stack.keys.create('marketing');
  assert.equal((await call(stack, 'GET', `/v1/campaigns/${id}`, other.key)).status, 404);

  // The accounting as the ClickHouse sink writes it (push_events with the campaign's columns).
  const rows = [
    ['e1', 'submitted', 'outcome', 't1', 'cu-1', 'd1', ''],
    ['e2', 'accepted', 'outcome', 't1', 'cu-1', 'd1', ''],
    ['e3', 'submitted', 'outcome', 't2', 'cu-2', 'd2', ''],
    ['e4', 'suppressed', 'outcome', 't3', 'cu-3', '', 'night_rule'],
    ['e5', 'suppressed', 'outcome', 't4', 'cu-4', '', 'opted_out'],
    ['e6', 'suppressed', 'outcome', 't5', 'cu-5', '', 'opted_out'],
  ].map(([event_id, kind, source, task_id, uid, device_id, reason]) => ({
    event_id,
    event_time: '2026-12-01 10:00:00',
    event_ms: 1,
    kind,
    source,
    stage: 'test',
    task_id,
    uid,
    device_id,
    conv_id: '',
    seq: 0,
    msg_id: '',
    app_id: 'im.demo',
    platform: 'android',
    vendor: device_id ? 'fcm' : '',
    reason,
    code: '',
    vendor_message_id: '',
    attempts: 1,
    persisted_time: '2026-12-01 10:00:00',
    campaign_id: id,
    sender: 'order-service',
  }));
  // A delivery receipt of t2 carries no campaign: the pair still counts as arrived.
  rows.push({ ...rows[2]!, event_id: 'e7', kind: 'delivered', source: 'receipt', campaign_id: '', sender: '' });
  await stack.clickhouse.insert({ table: 'push_events', values: rows, format: 'JSONEachRow' });
  const full = (await call(stack, 'GET', `/v1/campaigns/${id}`, key)).body;
  assert.deepEqual(
    { suppressed: full.suppressed, submitted: full.submitted, arrived: full.arrived },
    { suppressed: { night_rule: 1, opted_out: 2 }, submitted: 2, arrived: 2 },
  );
});
