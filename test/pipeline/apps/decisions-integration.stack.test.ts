/**
 * The decision stages on the real stack (Kafka, schema registry): a scripted workload of presence
 * and messages for 1,000 users produces exactly the dispatch records the ground-truth model predicts;
 * and a group storm is merged to at most 30 % of its triggers with every final unread count delivered.
 */
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { StreamsApp } from '../../../topology/runtime.ts';
import { buildDecisionsTopology, type DecisionsTopologyOptions } from '../../../pipeline/apps/decisions.ts';
import type { MessagePersisted, PushDispatch, PushOutcome } from '../../../processors/model/records.ts';
import { uniqueName } from '../../support/stack.ts';
import { APP, dispatchKey, expectedDispatches, makeUsers, messageRecords, setupRecords } from './decisions-workload.ts';
import { createTestTopics, endpoints, produce, readDecoded, useAdmin, waitConsumed, type TestTopics } from './stack-io.ts';

const admin = useAdmin();

async function startApp(t: TestTopics, options: Omit<DecisionsTopologyOptions, 'valueSerdes' | 'topicPrefix'>): Promise<{ app: StreamsApp; groupId: string }> {
  const groupId = uniqueName('decisions-app');
  const topology = buildDecisionsTopology({ ...options, valueSerdes: t.serdes, topicPrefix: t.prefix });
  const app = new StreamsApp({
    applicationId: groupId,
    topology,
    brokers: endpoints.kafkaBrokers,
    dlqTopic: t.name('dlq'),
    processingGuarantee: 'exactly_once',
    commitIntervalMs: 100,
  });
  await app.start();
  return { app, groupId };
}

const stamp = <T extends object>(records: T[], at: (r: T) => number) =>
  records.map((r) => ({ ...r, timestamp: at(r) })) as Array<T & { uid: string; timestamp: number }>;

describe('decisions on the real stack', () => {
  test('1,000 users: the dispatches are exactly what the ground-truth model predicts', { timeout: 240_000 }, async () => {
    const t = await createTestTopics(admin);
    const { app, groupId } = await startApp(t, { merge: { windowMs: 10_000 }, onlineFilter: { holdWindowMs: 10_000 } });
    try {
      const users = makeUsers(1_000, 20261129, 'user-');
      const setup = setupRecords(users, Date.now());
      await produce(
        t,
        'tokens',
        stamp(setup.tokens, (r) => r.reported_at),
      );
      await produce(
        t,
        'settings',
        stamp(setup.settings, (r) => r.updated_at),
      );
      await produce(
        t,
        'presence',
        stamp(setup.presence, (r) => r.at),
      );
      await waitConsumed(admin, groupId, [t.name('tokens'), t.name('settings'), t.name('presence')]);

      const { messages, acks } = messageRecords(users, Date.now());
      await Promise.all([
        produce(
          t,
          'persisted',
          stamp(messages, (r) => r.persisted_at),
        ),
        produce(
          t,
          'presence',
          stamp(acks, (r) => r.at),
        ),
      ]);

      const expected = expectedDispatches(users);
      const dispatches = await readDecoded<PushDispatch>(t, 'dispatch', (v) => v.length >= expected.length, 120_000);
      const actual = dispatches.map((d) => dispatchKey({ ...d, vendors: d.channels.map((c) => c.vendor) })).sort();
      const missing = expected.filter((e) => !actual.includes(e));
      const unexpected = actual.filter((a) => !expected.includes(a));
      assert.deepEqual({ missing: missing.slice(0, 10), unexpected: unexpected.slice(0, 10) }, { missing: [], unexpected: [] });
      assert.equal(actual.length, expected.length, 'no duplicates');
      assert.ok(expected.length > 1_000, `a meaningful workload (${expected.length} dispatches)`);

      // Every (message, device) that is not dispatched has exactly one outcome (docs/design.md,
      // "Nothing is lost; every ending is counted").
      const dispatchedTasks = new Set(dispatches.map((d) => `${d.uid}/${d.device_id}/${d.conv_id}#${d.seq}`));
      const pairs = users.reduce((n, u) => n + u.devices.length * (u.burst + 1), 0);
      const outcomes = await readDecoded<PushOutcome>(t, 'outcomes', (v) => v.length >= pairs - dispatchedTasks.size, 30_000, 2_000);
      const ended = new Map<string, number>();
      for (const o of outcomes)
        ended.set(`${o.uid}/${o.device_id}/${o.conv_id}#${o.seq}`, (ended.get(`${o.uid}/${o.device_id}/${o.conv_id}#${o.seq}`) ?? 0) + 1);
      const byUser = new Map<string, MessagePersisted[]>();
      for (const m of messages) byUser.set(m.uid, [...(byUser.get(m.uid) ?? []), m]);
      let unaccounted = 0;
      let twice = 0;
      for (const u of users) {
        for (const d of u.devices) {
          for (const m of byUser.get(u.uid) ?? []) {
            const k = `${u.uid}/${d.id}/${m.conv_id}#${m.seq}`;
            const n = (dispatchedTasks.has(k) ? 1 : 0) + (ended.get(k) ?? 0);
            if (n === 0) unaccounted++;
            if (n > 1) twice++;
          }
        }
      }
      assert.deepEqual({ unaccounted, twice }, { unaccounted: 0, twice: 0 });
    } finally {
      await app.close();
    }
  });

  test(
    'group storm: dispatches ≤ 30 % of triggers and the last dispatch of every (uid, conv) carries its final unread count',
    { timeout: 240_000 },
    async (ctx) => {
      const t = await createTestTopics(admin);
      const { app, groupId } = await startApp(t, {});
      try {
        const members = Array.from({ length: 60 }, (_, i) => `storm-${i}`);
        const tokens = members.map((uid) => ({
          uid,
          device_id: 'phone',
          platform: 'android',
          vendor: 'fcm',
          app_id: APP,
          token: `fcm:${uid}`,
          reported_at: Date.now(),
          state: 'VALID' as const,
          source: 'CLIENT' as const,
          reason: null,
          manufacturer: 'samsung',
        }));
        await produce(
          t,
          'tokens',
          stamp(tokens, (r) => r.reported_at),
        );
        await waitConsumed(admin, groupId, [t.name('tokens')]);

        // 3 groups × 80 messages over ~12 s; every member is in every group and offline.
        const groups = ['g1', 'g2', 'g3'];
        const final = new Map<string, number>();
        let triggers = 0;
        const start = Date.now();
        for (let i = 0; i < 80; i++) {
          const batch: MessagePersisted[] = [];
          for (const g of groups) {
            for (const uid of members) {
              const unread = i + 1;
              final.set(`${uid}/${g}`, unread);
              batch.push({
                msg_id: `${g}-${i}`,
                conv_id: g,
                conv_type: 'GROUP',
                seq: i + 1,
                sender_uid: 'loud',
                uid,
                unread_cnt: unread,
                title: g,
                summary: `msg ${i}`,
                sensitive: false,
                mention: 'NONE',
                persisted_at: Date.now(),
                app_id: APP,
              });
            }
          }
          triggers += batch.length;
          await produce(
            t,
            'persisted',
            stamp(batch, (r) => r.persisted_at),
          );
          const next = start + (i + 1) * 150;
          if (next > Date.now()) await new Promise((r) => setTimeout(r, next - Date.now()));
        }
        const lastSeq = (v: PushDispatch[]) => [...final.keys()].every((k) => v.some((d) => `${d.uid}/${d.conv_id}` === k && d.seq === 80));
        const dispatches = await readDecoded<PushDispatch>(t, 'dispatch', lastSeq, 120_000);
        ctx.diagnostic(`${dispatches.length} dispatches for ${triggers} triggers (${((100 * dispatches.length) / triggers).toFixed(1)} %)`);
        assert.ok(dispatches.length <= 0.3 * triggers, `${dispatches.length} dispatches for ${triggers} triggers`);
        // The last push a device got is the last one written for its uid (one partition, read in
        // order). Not the latest decided_at: a trailing update is stamped by the wall clock when its
        // window closes, a leading push by its message's time, so under a processing lag a window's
        // trailing update carries a later stamp than the next window's leading push.
        const lastByConv = new Map<string, PushDispatch>();
        for (const d of dispatches) lastByConv.set(`${d.uid}/${d.conv_id}`, d);
        const wrong = [...final].filter(([k, unread]) => lastByConv.get(k)?.badge !== unread).map(([k]) => k);
        assert.deepEqual(wrong, [], 'final unread count delivered for every (uid, conv)');
        assert.equal(lastByConv.size, final.size);
      } finally {
        await app.close();
      }
    },
  );
});
