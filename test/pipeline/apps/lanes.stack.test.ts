/**
 * Priority lanes on the real stack (Kafka, registry, MariaDB, the FCM emulator): a 5,000-user
 * campaign floods the business lane while IM pushes keep coming, and IM pushes never wait behind
 * the campaign's. Three applications run in this process as the worker runs them: `business`
 * (push.requests → push.dispatch.business), `fan-out-business` (its own consumer group and vendor
 * gates, with PUSH_BUSINESS_VENDOR_RATE_PERCENT of the vendor's rate) and IM's `fan-out`. The
 * campaign's sender rate is unlimited, so its 5,000 dispatches queue on the business lane at once and
 * drain at the lane's vendor rate (30 % of 1 000/s: about 17 s), both lanes sending to the same
 * vendor and app. What is checked is order, not speed: every IM push produced while most of the
 * campaign was still unsent reached the vendor before the campaign's last push, overtaking at
 * least half of the campaign pushes still unsent when it was produced; and every push reached the
 * vendor (repeated only after a lost answer, with its collapse id).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { kafkaClient } from '../../../common/kafka-client.ts';
import { schemaRegistryClient } from '../../../common/registry-client.ts';
import { registryValueSerdes } from '../../../pipeline/serdes.ts';
import { topicName } from '../../../pipeline/topics.ts';
import { buildBusinessTopology, businessLaneVendors } from '../../../pipeline/apps/business.ts';
import { buildFanOutTopology } from '../../../pipeline/apps/fan-out.ts';
import { MysqlPushTaskLedger } from '../../../sinks/mysql/tasks.ts';
import { createVendorRegistry } from '../../../sinks/vendors/registry.ts';
import type { PushOutcome } from '../../../processors/model/records.ts';
import { campaignRequest, campaignUserRecords } from '../../../bench/campaign-phase.ts';
import { stackEndpoints } from '../../support/stack.ts';
import { LaneStack } from './lane-stack.ts';
import { readUntil } from '../../support/read-until.ts';
import { dispatch } from '../../processors/fan-out/support.ts';
import { committedAll } from './group-progress.ts';

const USERS = 5_000;
const IM_PUSHES = 40;
const APP = 'app-1';
const endpoints = stackEndpoints();
const kafka = kafkaClient(endpoints, { clientId: 'business-lanes' });
const registry = schemaRegistryClient(endpoints);

describe('business and IM lanes on the real stack', () => {
  let stack: LaneStack;
  before(async () => {
    stack = await LaneStack.start('lanes', 3, { ratePerSecond: 1000 });
  });
  after(async () => stack?.close());

  test(`a ${USERS}-user campaign on the business lane: IM pushes to the same vendor overtake it, every push arrives`, { timeout: 240_000 }, async (t) => {
    const { em, db, prefix } = stack;
    const produce = stack.produce.bind(stack);
    const app = stack.app.bind(stack);
    const now = Date.now();
    const uids = Array.from({ length: USERS }, (_, i) => `cu-${i}`);
    const { tokens: tokenRecords } = campaignUserRecords(new Map(uids.map((uid) => [em.token('fcm', uid), uid])), APP, 'UTC', now);
    const tokens = tokenRecords.map((r) => r.value);
    await produce(
      'tokens',
      tokens.map((t) => ({ key: t.uid, value: t })),
    );

    const vendors = createVendorRegistry(em.appsConfig);
    const lane = businessLaneVendors(vendors, 30, { ratePerSecond: 500, concurrency: 64 });
    const wiring = stack.wiring;
    const ledger = (table: string) => new MysqlPushTaskLedger({ pool: db.pool, table });
    // The campaign's sender is unlimited and the night rule is off, so the whole campaign reaches the lane at once, whatever the hour.
    const business = app(
      'business',
      buildBusinessTopology({
        ...wiring,
        business: { overrides: { marketing: { senderRatePerSecond: 0, categories: { CAMPAIGN: { night: 'deliver' } } } }, partitionCount: 3 },
      }),
    );
    const imFanOut = app('fan-out', buildFanOutTopology({ ...wiring, fanOut: { vendors, ledger: ledger(db.table) } }));
    const businessFanOut = app('fan-out-business', buildFanOutTopology({ ...wiring, lane: 'business', fanOut: { ...lane, ledger: ledger(db.table) } }));
    await Promise.all([business.start(), imFanOut.start(), businessFanOut.start()]);
    // The stage reads push.tokens and push.requests side by side in fetch order: a request read before
    // its user's token ends DROPPED no_token, so the campaign comes once the tokens are in.
    await committedAll(kafka, `${prefix}business`, topicName('tokens', prefix), 60_000);

    const requests = uids.map((uid) => campaignRequest(uid, { sender: 'marketing', app_id: APP, campaign_id: 'spring' }));
    await produce(
      'requests',
      requests.map((r) => ({ key: r.uid, value: r })),
    );
    const campaignTokens = new Set(tokens.map((t) => t.token));
    const campaignReceived = () => em.fcm.accepted().filter((p) => campaignTokens.has(p.token));

    // IM pushes, one every 100 ms, each produced when the campaign has most of its pushes still unsent.
    const im: Array<{ token: string; producedAt: number; unsentThen: number }> = [];
    for (let i = 0; i < IM_PUSHES; i++) {
      const unsent = USERS - campaignReceived().length;
      if (unsent < USERS / 2) break;
      const d = dispatch({
        uid: `im-${i}`,
        device: 'phone',
        conv_id: 'chat',
        seq: 1,
        app_id: APP,
        channels: [{ vendor: 'fcm', token: em.token('fcm', `im-${i}`) }],
      });
      im.push({ token: d.channels[0]!.token, producedAt: Date.now(), unsentThen: unsent });
      await produce('dispatch', [{ key: d.uid, value: d }]);
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.ok(im.length >= 10, `IM pushes were produced while most of the campaign was unsent (${im.length})`);

    const deadline = Date.now() + 200_000;
    const distinct = () => new Set(em.fcm.accepted().map((p) => p.token)).size;
    while (distinct() < USERS + im.length) {
      if (Date.now() >= deadline) {
        // What the fan-outs decided so far tells a stalled lane from refused or failed pushes.
        const decided = new Map<string, number>();
        for (const o of await readOutcomes(prefix, Number.POSITIVE_INFINITY, 5_000)) {
          const what = [o.status, o.reason, o.code].filter(Boolean).join('/');
          decided.set(what, (decided.get(what) ?? 0) + 1);
        }
        assert.fail(
          `${distinct()} of ${USERS + im.length} pushes reached the vendor (${em.fcm.received.length} calls); outcomes: ${JSON.stringify(Object.fromEntries(decided))}`,
        );
      }
      await new Promise((r) => setTimeout(r, 250));
    }
    const accepted = em.fcm.accepted();
    const perToken = new Map<string, number>();
    for (const p of accepted) perToken.set(p.token, (perToken.get(p.token) ?? 0) + 1);
    // A push whose vendor answer was lost (a 10 s timeout under this load) is sent again on the same
    // channel with the same collapse id (docs/design.md, "At most one visible notification"): the
    // device shows one notification.
    const twice = [...perToken].filter(([, n]) => n > 1).map(([token]) => accepted.filter((p) => p.token === token));
    for (const repeats of twice) t.diagnostic(`sent ${repeats.length} times (answer lost): ${repeats.map((p) => p.at - now).join(', ')} ms after the start`);
    assert.ok(
      twice.every((repeats) => new Set(repeats.map((p) => p.collapseId)).size === 1),
      'a repeated push keeps its collapse id',
    );
    assert.equal(perToken.size, USERS + im.length, 'every push reached the vendor');
    assert.ok(twice.length <= USERS / 100, `${twice.length} pushes sent more than once`);

    const campaignTimes = accepted.filter((p) => campaignTokens.has(p.token)).map((p) => p.at);
    const lastCampaign = Math.max(...campaignTimes);
    for (const push of im) {
      const at = accepted.find((p) => p.token === push.token)!.at;
      assert.ok(at < lastCampaign, 'an IM push waited for the end of the campaign');
      const overtaken = campaignTimes.filter((t) => t > at).length;
      assert.ok(
        overtaken >= push.unsentThen / 2,
        `an IM push overtook only ${overtaken} of the ${push.unsentThen} campaign pushes unsent when it was produced`,
      );
    }

    // Every campaign push ended ACCEPTED on push.outcomes with its business tag (the accounting's input).
    const outcomes = await readOutcomes(prefix, USERS + im.length);
    const campaignAccepted = outcomes.filter((o) => o.status === 'ACCEPTED' && o.business?.campaign_id === 'spring');
    assert.equal(new Set(campaignAccepted.map((o) => o.task_id)).size, USERS);
    assert.ok(campaignAccepted.every((o) => o.business?.sender === 'marketing' && o.business.category === 'CAMPAIGN'));
    assert.equal(outcomes.filter((o) => o.status === 'ACCEPTED' && !o.business).length, im.length);
  });
});

/** Reads push.outcomes (read_committed) until `count` ACCEPTED outcomes are in or `waitMs` passed. */
function readOutcomes(prefix: string, count: number, waitMs = 60_000): Promise<PushOutcome[]> {
  const topic = topicName('outcomes', prefix);
  const serde = registryValueSerdes(registry, prefix)('outcomes');
  const accepted = (read: readonly PushOutcome[]) => read.filter((o) => o.status === 'ACCEPTED').length >= count;
  return readUntil(kafka, topic, (value) => serde.deserialize(topic, value), accepted, waitMs);
}
