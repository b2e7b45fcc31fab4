/**
 * A campaign end to end through real worker processes (`pushctl run` with the campaigns, business,
 * fan-out-business, receipts and clickhouse stages) and the vendor emulators, with the worker
 * SIGKILLed while the campaign is being expanded and sent, then started again: every user gets the
 * campaign, and its arrival in ClickHouse (`pushctl arrival --by campaign`) equals what the
 * emulators recorded, exactly: submitted = the distinct devices the emulator got a request for,
 * arrived = the distinct devices it accepted, both the campaign's size.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startEnvironment, type Environment } from '../../demo/environment.ts';
import { trafficProducer, type TrafficProducer } from '../../demo/traffic.ts';
import { readEndpoints } from '../../common/endpoints.ts';
import { connectionFromEndpoints, createClickhouseClient } from '../../sinks/clickhouse/client.ts';
import { queryArrival } from '../../sinks/clickhouse/arrival-query.ts';
import type { PushCampaignRecord } from '../../processors/campaigns/records.ts';
import { campaignUserRecords, noonZone } from '../../bench/campaign-phase.ts';
import { deleteRunTopics } from '../support/run-topics.ts';

const USERS = 2_000;

test(
  `a ${USERS}-user campaign with a worker SIGKILLed mid-expansion: ClickHouse arrival by campaign equals the emulators' recordings`,
  { timeout: 360_000 },
  async (t) => {
    let env: Environment | undefined;
    let traffic: TrafficProducer | undefined;
    const clickhouse = createClickhouseClient(connectionFromEndpoints(readEndpoints()));
    try {
      env = await startEnvironment({
        instances: 1,
        partitions: 3,
        verbose: false,
        // The expansion at 200 uids/s takes ~15 s with its slow start (processors/campaigns/pace.ts), so the kill lands in the middle of it.
        workerEnv: { PUSH_STAGES: 'campaigns,business,fan-out-business,receipts,clickhouse', PUSH_CAMPAIGN_EXPANSION_RATE: '200' },
      });
      await env.waitReady();
      traffic = await trafficProducer(env.topicPrefix);
      const now = Date.now();
      const since = Math.floor(now / 1000) - 60;
      const uids = Array.from({ length: USERS }, (_, i) => `${env!.run}-cu${i}`);
      const tokenOf = new Map(uids.map((uid) => [env!.emulators.token('fcm', uid), uid]));
      // A zone where it is about noon: the night rule does not hold the campaign back, whatever the hour.
      const { tokens, settings } = campaignUserRecords(tokenOf, env.appId, noonZone(now), now);
      await traffic.send('tokens', tokens);
      await traffic.send('settings', settings);
      await new Promise((resolve) => setTimeout(resolve, 3000));

      const campaignId = `${env.run}-spring`;
      const campaign: PushCampaignRecord = {
        campaign_id: campaignId,
        action: 'CREATE',
        sender: 'marketing',
        app_id: env.appId,
        category: 'CAMPAIGN',
        priority: 'LOW',
        title: 'Spring sale',
        body: 'Today only',
        template_id: null,
        template_params: {},
        data: {},
        collapse_key: 'spring',
        expire_at: null,
        uids,
        uid_file: null,
        requested_at: Date.now(),
      };
      await traffic.send('campaigns', [{ key: campaignId, value: campaign }]);

      const reached = () =>
        new Set(
          env!.emulators.fcm
            .accepted()
            .filter((p) => tokenOf.has(p.token))
            .map((p) => p.token),
        ).size;
      const wait = async (what: string, done: () => boolean | Promise<boolean>, timeoutMs: number) => {
        const deadline = Date.now() + timeoutMs;
        while (!(await done())) {
          assert.ok(Date.now() < deadline, `${what}: not after ${timeoutMs} ms (${reached()} of ${USERS} users reached)`);
          await new Promise((resolve) => setTimeout(resolve, 250));
        }
      };
      await wait('the campaign under way', () => reached() >= USERS / 10, 120_000);
      const atKill = reached();
      env.workers[0]!.process.kill('SIGKILL');
      t.diagnostic(`worker SIGKILLed with ${atKill} of ${USERS} users reached`);
      assert.ok(atKill < USERS / 2, 'the kill landed in the middle of the campaign');
      await new Promise((resolve) => setTimeout(resolve, 1000));
      await env.startWorker(0);
      await env.waitReady();
      await wait('every user reached', () => reached() === USERS, 240_000);

      const requests = env.emulators.fcm.received.filter((p) => tokenOf.has(p.token));
      const submittedDevices = new Set(requests.map((p) => p.token)).size;
      const arrivedDevices = new Set(requests.filter((p) => p.answer === 'accepted').map((p) => p.token)).size;
      t.diagnostic(`${requests.length} campaign requests at the emulator for ${submittedDevices} devices`);
      let row: Awaited<ReturnType<typeof queryArrival>>[number] | undefined;
      await wait(
        'ClickHouse caught up',
        async () => {
          row = (await queryArrival(clickhouse, 'campaign', since)).find((r) => r.key === campaignId);
          return row !== undefined && row.submitted >= submittedDevices && row.arrived >= arrivedDevices;
        },
        120_000,
      );
      // A little longer: a late duplicate row must not change the figures (they count distinct pairs).
      await new Promise((resolve) => setTimeout(resolve, 3000));
      row = (await queryArrival(clickhouse, 'campaign', since)).find((r) => r.key === campaignId);
      assert.deepEqual({ submitted: row?.submitted, arrived: row?.arrived }, { submitted: submittedDevices, arrived: arrivedDevices });
      assert.equal(arrivedDevices, USERS);
    } finally {
      await traffic?.close();
      await env?.close();
      if (env) await deleteRunTopics(env.topicPrefix).catch(() => undefined);
      await clickhouse.close();
    }
  },
);
