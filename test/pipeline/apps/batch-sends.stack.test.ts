/**
 * Campaign sends use the vendors' multi-token APIs (docs/entry.md) on the real stack
 * (Kafka, registry, MariaDB, the HMS, Xiaomi and vivo emulators): a 3,000-user campaign goes
 * through `business` and then `fan-out-business` (started on the campaign's backlog), run in this
 * process as the worker runs them. A campaign's pushes carry the same payload apart from the token
 * (collapse id of the campaign, campaign-level data, one TTL per 10 s step), so the pushes that
 * meet in one submit call go as one request per vendor. Checked from the emulators: every user got exactly one push, the number
 * of send requests is far below the number of users, and a dead token in a batch fails only its
 * own push and invalidates only its own device.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { kafkaClient } from '../../../common/kafka-client.ts';
import { schemaRegistryClient } from '../../../common/registry-client.ts';
import type { ReceivedPush } from '../../../emulators/index.ts';
import { registryValueSerdes } from '../../../pipeline/serdes.ts';
import { topicName, type TopicKey } from '../../../pipeline/topics.ts';
import { buildBusinessTopology, businessLaneVendors } from '../../../pipeline/apps/business.ts';
import { buildFanOutTopology } from '../../../pipeline/apps/fan-out.ts';
import { MysqlPushTaskLedger } from '../../../sinks/mysql/tasks.ts';
import { createVendorRegistry } from '../../../sinks/vendors/registry.ts';
import type { PushOutcome, TokenReport } from '../../../processors/model/records.ts';
import { campaignRequest } from '../../../bench/campaign-phase.ts';
import { stackEndpoints, uniqueName } from '../../support/stack.ts';
import { LaneStack } from './lane-stack.ts';
import { committedAll, progressOf } from './group-progress.ts';

const USERS = 3_000;
const VENDORS = ['hms', 'xiaomi', 'vivo'] as const;
type BatchVendor = (typeof VENDORS)[number];
const PARTITIONS = 3;
const APP = 'app-1';
/** The business lane's fan-out: dispatches in flight per task, and claims per INSERT (the ledger's chunk). */
const MAX_IN_FLIGHT = 1_000;
const CLAIM_ROWS = 500;
const endpoints = stackEndpoints();
const kafka = kafkaClient(endpoints, { clientId: 'business-batch-sends' });
const registry = schemaRegistryClient(endpoints);

describe('campaign sends on the vendors batch APIs (real stack)', () => {
  let stack: LaneStack;
  before(async () => {
    stack = await LaneStack.start('batch', PARTITIONS);
  });
  after(async () => stack?.close());

  test(`a ${USERS}-user campaign on HMS, Xiaomi and vivo: one push each, few requests, a dead token fails alone`, { timeout: 120_000 }, async (t) => {
    const { em, db, prefix } = stack;
    const produce = stack.produce.bind(stack);
    const app = stack.app.bind(stack);
    const now = Date.now();
    const vendorOf = (i: number): BatchVendor => VENDORS[i % VENDORS.length]!;
    const users = Array.from({ length: USERS }, (_, i) => ({ uid: `bu-${i}`, vendor: vendorOf(i), token: em.token(vendorOf(i), `bu-${i}`) }));
    // Two dead tokens each on the vendors that answer per token in the request (HMS illegal_tokens, vivo invalidUsers).
    const pick = (vendor: BatchVendor, at: readonly number[]) => users.filter((u) => u.vendor === vendor).filter((_, k) => at.includes(k));
    const dead = [...pick('hms', [100, 700]), ...pick('vivo', [300, 900])];
    for (const u of dead) em[u.vendor as 'hms' | 'vivo'].deadTokens.add(u.token);
    assert.equal(dead.length, 4);
    const deadTokens = new Set(dead.map((u) => u.token));
    const tokens: TokenReport[] = users.map((u) => ({
      uid: u.uid,
      device_id: 'phone',
      platform: 'android',
      vendor: u.vendor,
      app_id: APP,
      token: u.token,
      reported_at: now,
      state: 'VALID',
      source: 'CLIENT',
      reason: null,
      manufacturer: { hms: 'huawei', xiaomi: 'xiaomi', vivo: 'vivo' }[u.vendor],
    }));
    await produce(
      'tokens',
      tokens.map((t) => ({ key: t.uid, value: t })),
    );

    const vendors = createVendorRegistry(em.appsConfig);
    const lane = businessLaneVendors(vendors, 30, { ratePerSecond: 500, concurrency: 64 });
    const wiring = stack.wiring;
    // The sender is unlimited and the night rule is off, so the whole campaign reaches the lane at once, whatever the hour.
    const business = app(
      'business',
      buildBusinessTopology({
        ...wiring,
        business: { overrides: { autumn: { senderRatePerSecond: 0, categories: { CAMPAIGN: { night: 'deliver' } } } }, partitionCount: PARTITIONS },
      }),
    );
    await business.start();
    // The users' tokens are in the business stage's table before their requests come (else they end no_token).
    await committedAll(kafka, `${prefix}business`, topicName('tokens', prefix), 60_000);
    const expireAt = now + 3_600_000;
    await produce(
      'requests',
      users.map((u) => ({ key: u.uid, value: campaignRequest(u.uid, { sender: 'autumn', app_id: APP, campaign_id: 'autumn-sale', expire_at: expireAt }) })),
    );
    // The lane's fan-out starts on the campaign's whole backlog, as when a campaign reaches the lane faster than the vendors
    // take it: what meets in one submit call then follows from the fan-out's settings alone (the bound below).
    await committedAll(kafka, `${prefix}business`, topicName('requests', prefix), 60_000);
    const ledger = new MysqlPushTaskLedger({ pool: db.pool, table: db.table, maxBatchRows: CLAIM_ROWS });
    const fanOut = app('fan-out-business', buildFanOutTopology({ ...wiring, lane: 'business', fanOut: { ...lane, ledger, maxInFlight: MAX_IN_FLIGHT } }));
    await fanOut.start();

    const recorded = () => VENDORS.flatMap((v) => em[v].received);
    const deadline = Date.now() + 60_000;
    for (;;) {
      const answered = new Set(recorded().map((p) => p.token)).size;
      if (answered >= USERS) break;
      if (Date.now() >= deadline) {
        const by = VENDORS.map((v) => `${v} ${new Set(em[v].received.map((p) => p.token)).size}`).join(', ');
        const fanOutProgress = await progressOf(kafka, `${prefix}fan-out-business`, topicName('dispatchBusiness', prefix));
        assert.fail(`${answered} of ${USERS} users' pushes reached the vendors (${by}); fan-out-business: ${JSON.stringify(fanOutProgress)}`);
      }
      await new Promise((r) => setTimeout(r, 200));
    }
    // A moment for a push sent twice to show.
    await new Promise((r) => setTimeout(r, 1000));

    // Every user got exactly one push; a dead token's push was refused, never shown.
    const accepted = VENDORS.flatMap((v) => em[v].accepted());
    const perToken = new Map<string, number>();
    for (const p of accepted) perToken.set(p.token, (perToken.get(p.token) ?? 0) + 1);
    assert.deepEqual(
      users.filter((u) => !deadTokens.has(u.token) && perToken.get(u.token) !== 1).map((u) => `${u.uid} ${perToken.get(u.token) ?? 0}`),
      [],
      'every user with a live token got exactly one push',
    );
    assert.deepEqual(
      dead.filter((u) => perToken.has(u.token)).map((u) => u.uid),
      [],
    );

    // The campaign's payloads are identical apart from the token: one collapse id and one data per vendor, TTL by the expiry.
    for (const v of VENDORS) {
      const mine = em[v].received;
      assert.equal(new Set(mine.map((p) => String(p.collapseId))).size, 1, `${v}: one collapse id for the whole campaign`);
      assert.equal(new Set(mine.map((p) => JSON.stringify(p.data))).size, 1, `${v}: one custom data for the whole campaign`);
      assert.ok(
        mine.every((p) => !JSON.stringify(p.data).includes('bu-')),
        `${v}: no recipient in the custom data`,
      );
    }
    for (const p of em.hms.received) {
      const ttl = Number.parseInt((p.request as { android: { ttl: string } }).android.ttl, 10);
      assert.ok(ttl <= (expireAt - now) / 1000 && ttl >= (expireAt - now) / 1000 - 120, `HMS TTL ${ttl} s ends by the expiry`);
    }

    // Requests: a fan-out task keeps up to MAX_IN_FLIGHT dispatches in flight and claims them in INSERTs of CLAIM_ROWS; the pushes
    // whose claims are answered together meet in one submit call per vendor, sent as ceil(tokens / maxBatchSize) requests
    // (HMS, Xiaomi) or twice that (a vivo list push is saveListPayload + pushToList). With the campaign's backlog waiting,
    // a task makes ceil(its dispatches / CLAIM_ROWS) such rounds. Allowing twice that (partitions a little uneven, a
    // backlog read in more than one fetch), the bound is still a small fraction of the users.
    const rounds = Math.ceil(Math.ceil(USERS / PARTITIONS) / Math.min(CLAIM_ROWS, MAX_IN_FLIGHT));
    const perRound = (v: BatchVendor) => Math.ceil(CLAIM_ROWS / VENDORS.length / vendors.adapter(v, APP)!.maxBatchSize) * (v === 'vivo' ? 2 : 1);
    const bound = 2 * PARTITIONS * rounds * VENDORS.reduce((n, v) => n + perRound(v), 0);
    const requests = Object.fromEntries(VENDORS.map((v) => [v, em[v].sendRequests]));
    const total = VENDORS.reduce((n, v) => n + em[v].sendRequests, 0);
    t.diagnostic(`${total} send requests for ${USERS} users: ${JSON.stringify(requests)} (bound ${bound})`);
    assert.ok(bound <= USERS / 50, `the bound itself is far below one request per user (${bound})`);
    assert.ok(total <= bound, `${total} send requests for ${USERS} users (${JSON.stringify(requests)}); at most ${bound} expected`);

    // A dead token shared its request with live ones: only its own push failed (dead_token) and only its device was invalidated.
    for (const u of dead) {
      const refusal = em[u.vendor].received.find((p) => p.token === u.token)!;
      const sharedWith = sameRequest(u.vendor, refusal, em[u.vendor].received).filter((p) => p.token !== u.token);
      assert.ok(sharedWith.length > 0, `${u.uid}'s push was sent in a batch`);
      assert.ok(
        sharedWith.every((p) => p.answer === 'accepted' || deadTokens.has(p.token)),
        `the other tokens of ${u.uid}'s request were accepted`,
      );
    }
    const { outcomes, invalidations } = await readOutputs(prefix, USERS - dead.length, dead.length);
    const notAccepted = outcomes.filter((o) => o.status !== 'ACCEPTED');
    assert.deepEqual(notAccepted.map((o) => `${o.uid} ${o.status} ${o.reason}`).sort(), dead.map((u) => `${u.uid} DEAD_TOKEN dead_token`).sort());
    assert.deepEqual(invalidations.map((r) => `${r.uid} ${r.vendor} ${r.token}`).sort(), dead.map((u) => `${u.uid} ${u.vendor} ${u.token}`).sort());
    const acceptedOutcomes = outcomes.filter((o) => o.status === 'ACCEPTED' && o.business?.campaign_id === 'autumn-sale');
    assert.equal(new Set(acceptedOutcomes.map((o) => o.uid)).size, USERS - dead.length);
  });
});

/** The recordings sent in the same vendor request as `push` (HMS: its token list; vivo: its list push's requestId; Xiaomi: its regid list). */
function sameRequest(vendor: BatchVendor, push: ReceivedPush, all: readonly ReceivedPush[]): ReceivedPush[] {
  if (vendor === 'hms') {
    const tokens = new Set((push.request as { token: string[] }).token);
    return all.filter((p) => tokens.has(p.token));
  }
  const id = (p: ReceivedPush) =>
    vendor === 'vivo' ? (p.request as { requestId?: string }).requestId : (p.request as { registration_id?: string }).registration_id;
  return all.filter((p) => id(p) === id(push));
}

/** Reads push.outcomes and push.tokens (read_committed) until `accepted` ACCEPTED outcomes and `invalid` FAN_OUT invalidations are in. */
async function readOutputs(prefix: string, accepted: number, invalid: number): Promise<{ outcomes: PushOutcome[]; invalidations: TokenReport[] }> {
  const topics = { outcomes: topicName('outcomes', prefix), tokens: topicName('tokens', prefix) };
  const serdes = registryValueSerdes(registry, prefix);
  const consumer = kafka.consumer({ groupId: uniqueName('batch-outputs'), maxWaitTimeInMs: 100, readUncommitted: false });
  const outcomes: PushOutcome[] = [];
  const invalidations: TokenReport[] = [];
  await consumer.connect();
  await consumer.subscribe({ topics: [topics.outcomes, topics.tokens], fromBeginning: true });
  await consumer.run({
    eachBatch: async ({ batch }) => {
      const key: TopicKey = batch.topic === topics.outcomes ? 'outcomes' : 'tokens';
      for (const m of batch.messages) {
        if (!m.value) continue;
        const value = await serdes(key).deserialize(batch.topic, m.value);
        if (key === 'outcomes') outcomes.push(value as PushOutcome);
        else if ((value as TokenReport).source === 'FAN_OUT') invalidations.push(value as TokenReport);
      }
    },
  });
  const deadline = Date.now() + 30_000;
  const done = () => outcomes.filter((o) => o.status === 'ACCEPTED').length >= accepted && invalidations.length >= invalid;
  while (!done() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
  await consumer.disconnect();
  return { outcomes, invalidations };
}
