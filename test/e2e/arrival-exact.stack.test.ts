/**
 * The arrival figures per vendor in ClickHouse (submitted, arrived,
 * delivered, unknown pairs) equal, exactly, what the vendor emulators themselves recorded (what
 * each was sent and accepted, and which receipts each posted), with receipts duplicated and lost,
 * (1) after a first stretch of traffic, (2) after the workers' ClickHouse was unreachable for 60 s
 * while traffic flowed, and (3) after a second ClickHouse sink replayed push.outcomes and
 * push.receipts from the beginning. The shared ClickHouse and Kafka servers are never stopped: the
 * workers reach ClickHouse through a TCP forwarder this test cuts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import type { ClickHouseClient } from '@clickhouse/client';
import { startRun, type PipelineRun } from '../../chaos/harness.ts';
import { messageOf, recordings } from '../../chaos/verify.ts';
import { pushKey } from '../../chaos/scenario.ts';
import { chaosAdmin, sleep } from '../../chaos/drain.ts';
import { groupStatus } from '../../pipeline/group-status.ts';
import { readEndpoints } from '../../common/endpoints.ts';
import { createLogger } from '../../common/log.ts';
import { registryValueSerdes } from '../../pipeline/serdes.ts';
import { topicName } from '../../pipeline/topics.ts';
import { queryArrival } from '../../sinks/clickhouse/arrival-query.ts';
import { connectionFromEndpoints, createClickhouseClient } from '../../sinks/clickhouse/client.ts';
import { buildClickhouseSinkTopology } from '../../pipeline/apps/clickhouse.ts';
import { PushEventWriter } from '../../sinks/clickhouse/writer.ts';
import { VENDORS, type Vendor } from '../../processors/fan-out/vendor-port.ts';
import { StreamsApp } from '../../topology/runtime.ts';
import type { ReceivedPush } from '../../emulators/index.ts';
import { schemaRegistryClient } from '../../common/registry-client.ts';

type ReceiptOutcome = 'delivered' | 'failed' | 'dead-token';
interface Figures {
  submitted: number;
  arrived: number;
  delivered: number;
  unknown: number;
}
type ByVendor = Record<string, Figures>;

const RECEIPT_VENDORS = ['hms', 'xiaomi', 'oppo', 'vivo'] as const;
const OUTAGE_MS = 60_000;

/** What a receipt says about a token: mostly delivered, some failed, a few dead (stable per token). */
function receiptVerdict(token: string): ReceiptOutcome {
  const b = createHash('sha256').update(token).digest()[0]!;
  return b < 26 ? 'failed' : b < 38 ? 'dead-token' : 'delivered';
}

/**
 * Ground truth from the emulators alone. A pair is one (vendor, token, conversation, seq) the vendor
 * was sent; arrived when the vendor accepted it; delivered when the vendor posted a delivered
 * receipt about it; unknown when accepted and no receipt was posted at all. Receipts name a token,
 * so the test first checks that no token was accepted twice (then a token names one push).
 */
function groundTruth(received: readonly ReceivedPush[], receiptsPosted: ReadonlyMap<string, ReceiptOutcome[]>): ByVendor {
  const pairs = new Map<string, { vendor: Vendor; token: string; accepted: boolean }>();
  for (const r of received) {
    const m = messageOf(r);
    assert.ok(m, `a ${r.vendor} request without the conversation and seq in its data`);
    const key = pushKey(r.vendor, r.token, m.convId, m.seq);
    const pair = pairs.get(key) ?? { vendor: r.vendor, token: r.token, accepted: false };
    pair.accepted ||= r.answer === 'accepted';
    pairs.set(key, pair);
  }
  const acceptedPerToken = new Map<string, number>();
  for (const p of pairs.values()) if (p.accepted) acceptedPerToken.set(`${p.vendor}|${p.token}`, (acceptedPerToken.get(`${p.vendor}|${p.token}`) ?? 0) + 1);
  assert.deepEqual(
    [...acceptedPerToken.entries()].filter(([, n]) => n > 1),
    [],
    'tokens that received more than one push',
  );
  const out: ByVendor = {};
  for (const p of pairs.values()) {
    const f = (out[p.vendor] ??= { submitted: 0, arrived: 0, delivered: 0, unknown: 0 });
    f.submitted++;
    if (!p.accepted) continue;
    f.arrived++;
    const posted = receiptsPosted.get(`${p.vendor}|${p.token}`) ?? [];
    if (posted.includes('delivered')) f.delivered++;
    if (posted.length === 0) f.unknown++;
  }
  return out;
}

async function clickhouseFigures(client: ClickHouseClient, sinceSeconds: number, appId: string): Promise<ByVendor> {
  const rows = await queryArrival(client, 'vendor', sinceSeconds, appId);
  return Object.fromEntries(rows.map((r) => [r.key, { submitted: r.submitted, arrived: r.arrived, delivered: r.delivered, unknown: r.unknown }]));
}

const sorted = (f: ByVendor): ByVendor =>
  Object.fromEntries(
    Object.keys(f)
      .sort()
      .map((k) => [k, f[k]!]),
  );
const total = (f: ByVendor, field: keyof Figures) => Object.values(f).reduce((n, v) => n + v[field], 0);

test(
  "per-vendor arrival in ClickHouse equals the emulators' ground truth: duplicate and lost receipts, a 60 s ClickHouse outage, a replay",
  { timeout: 330_000 },
  async (t) => {
    let run: PipelineRun | undefined;
    let replay: StreamsApp | undefined;
    let writer: PushEventWriter | undefined;
    const endpoints = readEndpoints();
    // Read directly, not through the workers' forwarder.
    const clickhouse = createClickhouseClient(connectionFromEndpoints(endpoints));
    const admin = chaosAdmin();
    await admin.connect();
    try {
      run = await startRun({ instances: 1, partitions: 4, users: 300, messagesPerUser: 1, burstEvery: 0, durationMs: 90_000, forwardStores: true });
      const r = run;
      const since = Math.floor(r.startedAtMs / 1000) - 60;
      const appId = r.env.appId;

      // Receipts: delayed, 30 % posted twice, 15 % never posted; each posted copy is recorded as the vendor sends it.
      const receiptsPosted = new Map<string, ReceiptOutcome[]>();
      for (const vendor of RECEIPT_VENDORS) {
        const emulator = r.env.emulators[vendor];
        Object.assign(emulator.receipts, {
          delayMs: 300,
          duplicateRate: 0.3,
          lossRate: 0.15,
          outcomeFor: (token: string): ReceiptOutcome => {
            const verdict = emulator.deadTokens.has(token) ? 'dead-token' : receiptVerdict(token);
            const key = `${vendor}|${token}`;
            receiptsPosted.set(key, [...(receiptsPosted.get(key) ?? []), verdict]);
            return verdict;
          },
        });
      }
      const truth = () => sorted(groundTruth(recordings(r.env.emulators, appId), receiptsPosted));
      /** Polls ClickHouse until it equals the ground truth (or the deadline), then asserts equality. */
      const assertExact = async (label: string): Promise<ByVendor> => {
        const expected = truth();
        const deadline = Date.now() + 60_000;
        let actual: ByVendor = {};
        for (;;) {
          // A failed query counts as no figures yet: the loop asks again, and the assertion below shows what was missing.
          actual = sorted(await clickhouseFigures(clickhouse, since, appId).catch(() => ({})));
          if (JSON.stringify(actual) === JSON.stringify(expected) || Date.now() > deadline) break;
          await sleep(500); // one small query per ask: asked often, so the test goes on as soon as ClickHouse has caught up
        }
        t.diagnostic(`${label}: ${JSON.stringify(expected)}`);
        assert.deepEqual(actual, expected, `${label}: ClickHouse (actual) vs the emulators (expected)`);
        return expected;
      };

      const timeline = r.scenario.timeline;
      const split = timeline[0]!.at + 12_000;

      // 1. A first stretch of traffic with ClickHouse up.
      await r.traffic.play(timeline.filter((x) => x.at < split));
      await r.drain(90_000);
      const first = await assertExact('before the outage');
      assert.ok(total(first, 'arrived') > 0, 'pushes were accepted in the first stretch');

      // 2. The workers' ClickHouse is unreachable for 60 s while the rest of the traffic flows.
      const cutAt = Date.now();
      await r.stores!.clickhouse.cut();
      const playing = r.traffic.play(timeline.filter((x) => x.at >= split));
      await sleep(5000);
      const frozenEarly = sorted(await clickhouseFigures(clickhouse, since, appId));
      await sleep(Math.max(0, cutAt + OUTAGE_MS - 3000 - Date.now()));
      const frozenLate = sorted(await clickhouseFigures(clickhouse, since, appId));
      const duringOutage = truth();
      await sleep(Math.max(0, cutAt + OUTAGE_MS - Date.now()));
      await r.stores!.clickhouse.restore();
      assert.deepEqual(frozenLate, frozenEarly, 'nothing reached ClickHouse while it was cut off');
      assert.ok(total(duringOutage, 'arrived') > total(frozenLate, 'arrived'), 'pushes were accepted during the outage that ClickHouse had not seen');
      await playing;
      await r.drain(120_000);
      const afterOutage = await assertExact('after the 60 s outage');
      assert.ok(total(afterOutage, 'submitted') > total(first, 'submitted'));
      for (const vendor of VENDORS) assert.ok((afterOutage[vendor]?.arrived ?? 0) > 0, `no ${vendor} push accepted`);

      // The receipt knobs really were exercised.
      const posted = [...receiptsPosted.values()];
      assert.ok(
        posted.some((p) => p.length > 1),
        'some receipts were posted twice',
      );
      const acceptedWithReceipts = RECEIPT_VENDORS.reduce((n, v) => n + (afterOutage[v]?.arrived ?? 0) - (afterOutage[v]?.unknown ?? 0), 0);
      assert.ok(
        RECEIPT_VENDORS.some((v) => (afterOutage[v]?.unknown ?? 0) > 0),
        'some receipts were lost',
      );
      assert.ok(acceptedWithReceipts > 0 && total(afterOutage, 'delivered') < acceptedWithReceipts, 'some receipts said failed or dead token');

      // 3. A second ClickHouse sink replays push.outcomes and push.receipts from the beginning.
      const registry = schemaRegistryClient(endpoints);
      const serdes = registryValueSerdes(registry, r.env.topicPrefix);
      writer = new PushEventWriter({ connection: connectionFromEndpoints(endpoints) });
      const replayId = `${r.env.applicationId}-replay-clickhouse`;
      replay = new StreamsApp({
        applicationId: replayId,
        topology: buildClickhouseSinkTopology({
          valueSerdes: serdes,
          topicPrefix: r.env.topicPrefix,
          writer,
        }),
        brokers: endpoints.kafkaBrokers,
        processingGuarantee: 'at_least_once',
        commitIntervalMs: 500,
        autoOffsetReset: 'earliest',
        dlqTopic: topicName('dlq', r.env.topicPrefix),
        logger: createLogger({ service: 'replay-clickhouse' }, 'warn'),
      });
      await replay.start();
      // Done when the replay group has committed up to the end of both topics (past the commit
      // markers that end every partition written transactionally) and its offsets have stood still
      // there for 2 s. Asked every 500 ms, so the wait ends soon after those 2 s.
      let previous = '';
      let stillSince = Date.now();
      let replayed = 0;
      const deadline = Date.now() + 90_000;
      for (;;) {
        await sleep(500);
        const status = await groupStatus(admin, replayId).catch(() => undefined); // no status this round: the loop asks again
        const parts = status?.topics.flatMap((x) => x.partitions.map((p) => ({ ...p, topic: x.topic }))) ?? [];
        const snapshot = JSON.stringify(parts);
        const complete = status?.state === 'Stable' && new Set(parts.map((p) => p.topic)).size === 2 && parts.every((p) => p.lag === 0);
        if (!complete || snapshot !== previous) stillSince = Date.now();
        if (complete && snapshot === previous && Date.now() - stillSince >= 2000) {
          replayed = parts.reduce((n, p) => n + p.committed, 0);
          break;
        }
        assert.ok(Date.now() < deadline, `the replay did not reach the end of push.outcomes and push.receipts: ${snapshot}`);
        previous = snapshot;
      }
      assert.ok(replayed > total(afterOutage, 'submitted'), `the replay read every outcome and receipt again (${replayed} records)`);
      const afterReplay = sorted(await clickhouseFigures(clickhouse, since, appId));
      assert.deepEqual(afterReplay, afterOutage, 'the replay changed no figure');
      assert.deepEqual(truth(), afterOutage, 'the emulators saw nothing new during the replay');
    } finally {
      // Best-effort teardown: the test's own error (if any) is the one to report.
      await replay?.close().catch(() => undefined);
      await writer?.close().catch(() => undefined);
      await admin.disconnect().catch(() => undefined);
      await clickhouse.close();
      await run?.close();
    }
  },
);
