/**
 * Campaign cancellation on the real stack: after DELETE /v1/campaigns/{id} is
 * acknowledged, the expansion produces nothing more within 5 s (every request of the campaign in
 * push.requests is stamped before ack + 5 s, and the count stops), the progress says cancelled with
 * what was expanded, and the cancellation reaches push.campaign-control, where the business stage's
 * reader (pipeline/campaign-control.ts) finds it. Another business cannot cancel the campaign.
 */
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { KafkaCampaignCancellations } from '../../pipeline/campaign-control.ts';
import type { PushCampaignRecord, PushRequestRecord } from '../../processors/campaigns/records.ts';
import type { StreamsApp } from '../../topology/runtime.ts';
import { call, endpoints, readAll, registry, startEntryStack, startExpansion, type EntryStack } from './support.ts';

let stack: EntryStack;
let app: StreamsApp | undefined;
let reader: KafkaCampaignCancellations | undefined;

before(async () => {
  stack = await startEntryStack();
});

after(async () => {
  await reader?.close();
  await app?.close();
  await stack?.cleanup();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test('a cancelled campaign expands nothing after the cancel is acknowledged + 5 s; the stages after it learn of it', async (t) => {
  const owner = await stack.keys.create('marketing');
  const stranger = await stack.keys.create('someone-else');
  const uids = Array.from({ length: 5_000 }, (_, i) => `cancel-u-${i}`);
  const created = await call(stack, 'POST', '/v1/campaigns', owner.key, { app_id: 'im.demo', title: 'Sale', body: 'Today only', uids });
  assert.equal(created.status, 202);
  const id = created.body.campaign_id as string;
  app = await startExpansion(stack, 250); // 20 s for the whole list

  const progress = async () => (await call(stack, 'GET', `/v1/campaigns/${id}`, owner.key)).body;
  const deadline = Date.now() + 60_000;
  while (Number((await progress()).expanded ?? 0) < 500 && Date.now() < deadline) await sleep(100);

  // Another business's DELETE changes nothing (the expansion dead-letters a foreign CANCEL).
  assert.equal((await call(stack, 'DELETE', `/v1/campaigns/${id}`, stranger.key)).status, 202);
  assert.equal((await call(stack, 'GET', `/v1/campaigns/${id}`, stranger.key)).status, 404);
  const beforeForeign = Number((await progress()).expanded);
  await sleep(1_500);
  const afterForeign = await progress();
  assert.equal(afterForeign.state, 'expanding');
  assert.ok(Number(afterForeign.expanded) > beforeForeign, 'still expanding after the foreign cancel');

  const cancel = await call(stack, 'DELETE', `/v1/campaigns/${id}`, owner.key);
  const ackedAt = Date.now();
  assert.equal(cancel.status, 202, JSON.stringify(cancel.body));
  assert.equal(cancel.body.state, 'cancelling');

  await sleep(6_000);
  const requests = (await readAll<PushRequestRecord>(stack, 'requests')).filter((r) => r.value.campaign_id === id);
  const late = requests.filter((r) => r.timestamp > ackedAt + 5_000);
  assert.deepEqual(late.length, 0, `${late.length} requests expanded more than 5 s after the cancel was acknowledged`);
  assert.ok(requests.length < uids.length, `stopped early (${requests.length} of ${uids.length})`);
  t.diagnostic(`last request stamped ${Math.max(...requests.map((r) => r.timestamp)) - ackedAt} ms after the cancel was acknowledged`);
  assert.equal(new Set(requests.map((r) => r.key)).size, requests.length, 'no uid twice');

  const report = await progress();
  assert.equal(report.state, 'cancelled');
  assert.equal(report.total, uids.length);
  assert.equal(report.expanded, requests.length, 'the progress counts what reached push.requests');
  assert.equal(typeof report.cancelled_at, 'string');
  assert.equal((await call(stack, 'DELETE', `/v1/campaigns/${id}`, owner.key)).status, 200, 'a second DELETE answers the report');

  await sleep(2_000);
  assert.equal(
    (await readAll<PushRequestRecord>(stack, 'requests')).filter((r) => r.value.campaign_id === id).length,
    requests.length,
    'and nothing later either',
  );

  const control = await readAll<PushCampaignRecord>(stack, 'campaignControl');
  assert.deepEqual(
    control.map((r) => [r.key, r.value.action, r.value.sender, r.value.uids.length]),
    [[id, 'CANCEL', 'marketing', 0]],
  );
  reader = new KafkaCampaignCancellations({ endpoints, registry, topicPrefix: stack.topics.prefix });
  await reader.start();
  assert.equal(typeof reader.cancelledAt(id), 'number');
  assert.equal(reader.cancelledAt('c_not_cancelled'), undefined);
});
