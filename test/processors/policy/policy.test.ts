/**
 * docs/design.md, "policy", through the TopologyTestDriver: mute, quiet hours, @mention rule,
 * private mode and sensitive conversations, channel choice and fallback, invalid tokens, the quota
 * ledger. Every device is offline, so each first message of a conversation reaches the policy at
 * once.
 */
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigError } from '../../../common/errors.ts';
import { compilePolicyOptions, parseQuotas, policyOptionsFromEnv } from '../../../processors/policy/options.ts';
import { DecisionsHarness, briefOutcome, T0, type HarnessOptions } from '../harness.ts';

async function withHarness(options: HarnessOptions, body: (h: DecisionsHarness) => Promise<void>): Promise<void> {
  const h = DecisionsHarness.create(options);
  try {
    await body(h);
  } finally {
    await h.close();
  }
}

const night = { start_minute: 22 * 60, end_minute: 7 * 60 };

describe('policy: mute, quiet hours and the @mention rule', () => {
  const rows: Array<{ name: string; options?: HarnessOptions; mention?: 'NONE' | 'DIRECT' | 'ALL'; muted?: boolean; quiet?: boolean; expect: string }> = [
    { name: 'plain message, nothing set → dispatched', expect: 'dispatch' },
    { name: 'muted conversation → suppressed (mute)', muted: true, expect: 'SUPPRESSED mute' },
    { name: 'muted, @mention, rule mute (default) → dispatched', muted: true, mention: 'DIRECT', expect: 'dispatch' },
    { name: 'muted, @all, @all does not count by default → suppressed', muted: true, mention: 'ALL', expect: 'SUPPRESSED mute' },
    { name: 'muted, @all, PUSH_MENTION_ALL on → dispatched', options: { policy: { mentionAllCounts: true } }, muted: true, mention: 'ALL', expect: 'dispatch' },
    {
      name: 'muted, @mention, rule none → suppressed',
      options: { policy: { mentionRule: 'none' } },
      muted: true,
      mention: 'DIRECT',
      expect: 'SUPPRESSED mute',
    },
    { name: 'quiet hours → suppressed (dnd)', quiet: true, expect: 'SUPPRESSED dnd' },
    { name: 'quiet hours, @mention, rule mute → still suppressed', quiet: true, mention: 'DIRECT', expect: 'SUPPRESSED dnd' },
    {
      name: 'quiet hours, @mention, rule mute-and-quiet-hours → dispatched',
      options: { policy: { mentionRule: 'mute-and-quiet-hours' } },
      quiet: true,
      mention: 'DIRECT',
      expect: 'dispatch',
    },
  ];
  for (const row of rows) {
    test(row.name, () =>
      withHarness(row.options ?? {}, async (h) => {
        await h.token('u1', 'd1', 'fcm');
        // T0 is 12:00 UTC = 20:00 in Shanghai; quiet hours 22–07 there, checked at 22:30 local.
        await h.settings('u1', { time_zone: 'Asia/Shanghai', quiet_hours: night, muted_conversations: row.muted ? ['c1'] : ['other'] });
        await h.advanceTo(row.quiet ? 2.5 * 3_600_000 : 1_000, 3_600_000);
        await h.message('u1', 'c1', { mention: row.mention ?? 'NONE' });
        const { dispatches, outcomes } = h.drain();
        if (row.expect === 'dispatch') {
          assert.equal(dispatches.length, 1);
          assert.deepEqual(outcomes, []);
        } else {
          assert.deepEqual(dispatches, []);
          assert.deepEqual(
            outcomes.map((o) => `${o.status} ${o.reason}`),
            [row.expect],
          );
          assert.equal(outcomes[0]!.stage, 'policy');
          assert.equal(outcomes[0]!.device_id, 'd1');
        }
      }),
    );
  }

  test('quiet hours follow the user zone: the same instant is quiet in Shanghai, not in London', () =>
    withHarness({}, async (h) => {
      await h.token('sh', 'd1', 'fcm');
      await h.token('ldn', 'd2', 'fcm');
      await h.settings('sh', { time_zone: 'Asia/Shanghai', quiet_hours: night });
      await h.settings('ldn', { time_zone: 'Europe/London', quiet_hours: night });
      await h.advanceTo(3 * 3_600_000, 3_600_000); // 15:00 UTC: 23:00 Shanghai, 15:00 London
      await h.message('sh', 'c1');
      await h.message('ldn', 'c1');
      const { dispatches, outcomes } = h.drain();
      assert.deepEqual(
        dispatches.map((d) => d.uid),
        ['ldn'],
      );
      assert.deepEqual(
        outcomes.map((o) => `${o.uid} ${o.reason}`),
        ['sh dnd'],
      );
    }));

  test('quiet hours end on a DST change day at 07:00 local, not 07:00 standard time', () =>
    withHarness({ startMs: Date.parse('2026-03-08T10:30:00Z') }, async (h) => {
      // New York springs forward on 2026-03-08: 10:30 UTC = 06:30 EDT (quiet), 11:05 UTC = 07:05 EDT (not).
      await h.token('ny', 'd1', 'fcm');
      await h.settings('ny', { time_zone: 'America/New_York', quiet_hours: night });
      await h.message('ny', 'c1');
      await h.advanceTo(35 * 60_000, 60_000);
      await h.message('ny', 'c2');
      const { dispatches, outcomes } = h.drain();
      assert.deepEqual(
        outcomes.map((o) => `${o.conv_id} ${o.reason}`),
        ['c1 dnd'],
      );
      assert.deepEqual(
        dispatches.map((d) => d.conv_id),
        ['c2'],
      );
    }));

  test('the latest settings win; older settings arriving late are ignored', () =>
    withHarness({}, async (h) => {
      await h.token('u1', 'd1', 'fcm');
      await h.settings('u1', { muted_conversations: ['c1'], updated_at: T0 + 10 });
      await h.settings('u1', { muted_conversations: [], updated_at: T0 + 5 });
      await h.message('u1', 'c1');
      assert.deepEqual(
        h.outcomes().map((o) => o.reason),
        ['mute'],
      );
    }));
});

describe('policy: payload', () => {
  test('private mode: generic title and text only; no payload contains the summary', () =>
    withHarness({}, async (h) => {
      await h.token('u1', 'd1', 'fcm');
      await h.token('u1', 'd2', 'apns');
      await h.settings('u1', { private_mode: true });
      for (let i = 0; i < 4; i++) {
        await h.advanceTo(i * 2_000);
        await h.message('u1', 'c1', { summary: `the launch code is 0000-${i}`, title: 'Alice' });
      }
      await h.advanceTo(30_000, 500);
      const dispatches = h.dispatches();
      assert.ok(dispatches.length >= 4, 'leading and trailing pushes on both devices');
      for (const d of dispatches) {
        assert.equal(d.body, 'You have a new message');
        assert.equal(d.title, 'New message');
        assert.doesNotMatch(JSON.stringify(d), /launch code|Alice/);
      }
    }));

  test('sensitive conversation: generic text only, for users not in private mode', () =>
    withHarness({ policy: { genericText: 'New message for you' } }, async (h) => {
      await h.token('u1', 'd1', 'fcm');
      await h.message('u1', 'c1', { summary: 'salary details', sensitive: true });
      await h.message('u1', 'c2', { summary: 'see you at 5' });
      const [sensitive, normal] = h.dispatches();
      assert.equal(sensitive?.body, 'New message for you');
      assert.doesNotMatch(JSON.stringify(sensitive), /salary/);
      assert.equal(normal?.body, 'see you at 5');
    }));

  test('the summary is cut to 100 characters without splitting a character', () =>
    withHarness({}, async (h) => {
      await h.token('u1', 'd1', 'fcm');
      await h.message('u1', 'c1', { summary: '😀'.repeat(150) });
      const [d] = h.dispatches();
      assert.equal(Array.from(d!.body).length, 100);
      assert.equal(d!.body, '😀'.repeat(100));
    }));

  test('dispatch carries badge, collapse id per (uid, conv), deterministic task id per device', () =>
    withHarness({}, async (h) => {
      await h.token('u1', 'd1', 'fcm');
      await h.token('u1', 'd2', 'fcm');
      await h.message('u1', 'c1', { unread_cnt: 42 });
      const ds = h.dispatches();
      assert.equal(ds.length, 2);
      assert.equal(ds[0]!.badge, 42);
      assert.equal(ds[0]!.collapse_id, ds[1]!.collapse_id);
      assert.notEqual(ds[0]!.task_id, ds[1]!.task_id);
      assert.match(ds[0]!.task_id, /^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    }));
});

describe('policy: channel choice', () => {
  const rows: Array<{ name: string; tokens: Array<[string, Record<string, string | null>?]>; expect: string[] }> = [
    { name: 'iOS → APNs', tokens: [['apns', { platform: 'ios' }]], expect: ['apns'] },
    {
      name: 'Huawei with HMS and FCM tokens → HMS, then FCM',
      tokens: [
        ['fcm', { manufacturer: 'huawei' }],
        ['hms', { manufacturer: 'huawei' }],
      ],
      expect: ['hms', 'fcm'],
    },
    { name: 'Honor → HMS', tokens: [['hms', { manufacturer: 'HONOR' }]], expect: ['hms'] },
    {
      name: 'Xiaomi → Xiaomi, then FCM',
      tokens: [
        ['fcm', { manufacturer: 'xiaomi' }],
        ['xiaomi', { manufacturer: 'xiaomi' }],
      ],
      expect: ['xiaomi', 'fcm'],
    },
    {
      name: 'OPPO → OPPO',
      tokens: [
        ['oppo', { manufacturer: 'oppo' }],
        ['fcm', { manufacturer: 'oppo' }],
      ],
      expect: ['oppo', 'fcm'],
    },
    {
      name: 'vivo → vivo',
      tokens: [
        ['fcm', { manufacturer: 'vivo' }],
        ['vivo', { manufacturer: 'vivo' }],
      ],
      expect: ['vivo', 'fcm'],
    },
    {
      name: 'Samsung (others) → FCM first',
      tokens: [
        ['fcm', { manufacturer: 'samsung' }],
        ['hms', { manufacturer: 'samsung' }],
      ],
      expect: ['fcm', 'hms'],
    },
    { name: 'no maker reported: the vendor-specific token first', tokens: [['fcm'], ['xiaomi']], expect: ['xiaomi', 'fcm'] },
  ];
  for (const row of rows) {
    test(row.name, () =>
      withHarness({}, async (h) => {
        for (const [vendor, extra] of row.tokens) await h.token('u1', 'd1', vendor, extra as never);
        await h.message('u1', 'c1');
        const [d] = h.dispatches();
        assert.deepEqual(
          d?.channels.map((c) => c.vendor),
          row.expect,
        );
        assert.deepEqual(
          d?.channels.map((c) => c.token),
          row.expect.map((v) => `${v}-token-d1`),
        );
      }),
    );
  }

  test('IM classification per vendor is carried in the dispatch', () =>
    withHarness({}, async (h) => {
      for (const v of ['hms', 'xiaomi', 'oppo', 'vivo', 'fcm']) await h.token('u1', `d-${v}`, v, { manufacturer: v === 'hms' ? 'huawei' : v });
      await h.message('u1', 'c1');
      const byVendor = Object.fromEntries(h.dispatches().map((d) => [d.channels[0]!.vendor, d.channels[0]!.classification]));
      assert.deepEqual(byVendor, {
        hms: { category: 'IM' },
        xiaomi: { channel: 'private' },
        oppo: { category: 'IM', notify_level: '2' },
        vivo: { classification: '1', category: 'IM' },
        fcm: {},
      });
    }));

  test('an INVALID token is never chosen; a stale invalidation does not kill a newer token; a new report revives', () =>
    withHarness({}, async (h) => {
      await h.token('u1', 'd1', 'hms', { manufacturer: 'huawei', token: 'hms-old' });
      await h.token('u1', 'd1', 'fcm', { manufacturer: 'huawei' });
      await h.token('u1', 'd1', 'hms', { state: 'INVALID', source: 'RECEIPT', token: 'hms-old', reason: 'dead_token' });
      await h.message('u1', 'c1');
      assert.deepEqual(
        h.dispatches()[0]?.channels.map((c) => c.vendor),
        ['fcm'],
      );
      await h.advanceTo(1_000);
      await h.token('u1', 'd1', 'hms', { manufacturer: 'huawei', token: 'hms-new' }); // revived with a new token
      await h.token('u1', 'd1', 'hms', { state: 'INVALID', source: 'FAN_OUT', token: 'hms-old', reason: 'dead_token' }); // stale
      await h.message('u1', 'c2');
      assert.deepEqual(
        h.dispatches()[0]?.channels.map((c) => `${c.vendor}:${c.token}`),
        ['hms:hms-new', 'fcm:fcm-token-d1'],
      );
      await h.token('u1', 'd1', 'fcm', { state: 'INVALID', source: 'SWEEP', reason: 'stale' });
      await h.token('u1', 'd1', 'hms', { state: 'INVALID', source: 'RECEIPT', token: 'hms-new', reason: 'consecutive_failures' });
      await h.message('u1', 'c3');
      assert.deepEqual(h.dispatches(), []);
      assert.deepEqual(h.outcomes().map(briefOutcome), ['-:c3#1 DROPPED no_token']);
    }));
});

describe('policy: vendor daily quota', () => {
  test('over quota → the next channel of the device, else DROPPED quota; never retried', () =>
    withHarness({ policy: { quotas: { hms: { '*': 2 } } } }, async (h) => {
      await h.token('u1', 'both', 'hms', { manufacturer: 'huawei' });
      await h.token('u1', 'both', 'fcm', { manufacturer: 'huawei' });
      await h.token('u1', 'hmsonly', 'hms', { manufacturer: 'huawei' });
      // Conversation c1 → both devices (2 hms charges); c2 → 'both' falls back to fcm, 'hmsonly' is dropped.
      await h.message('u1', 'c1');
      await h.message('u1', 'c2');
      const { dispatches, outcomes } = h.drain();
      assert.deepEqual(
        dispatches.map((d) => `${d.conv_id} ${d.device_id} ${d.channels.map((c) => c.vendor).join(',')}`),
        ['c1 both hms,fcm', 'c1 hmsonly hms', 'c2 both fcm'],
      );
      assert.deepEqual(
        outcomes.map((o) => `${o.conv_id} ${o.device_id} ${o.status} ${o.reason} ${o.vendor}`),
        ['c2 hmsonly DROPPED quota hms'],
      );
    }));

  test('the daily quota is split evenly across partitions and resets on the next quota day', () =>
    withHarness({ policy: { quotas: { xiaomi: { 'im.demo': 9 } }, partitionCount: 4, quotaTimeZone: 'UTC' } }, async (h) => {
      await h.token('u1', 'd1', 'xiaomi', { manufacturer: 'xiaomi' });
      for (const conv of ['c1', 'c2', 'c3']) await h.message('u1', conv);
      const first = h.drain();
      assert.equal(first.dispatches.length, 2, 'floor(9 / 4) = 2 on this partition');
      assert.deepEqual(
        first.outcomes.map((o) => o.reason),
        ['quota'],
      );
      await h.advanceTo(12 * 3_600_000, 3_600_000); // T0 + 12 h = next UTC day
      await h.message('u1', 'c4');
      assert.equal(h.dispatches().length, 1);
    }));
});

describe('policy options', () => {
  test('bad values fail at start naming their key', () => {
    assert.throws(
      () => compilePolicyOptions({ mentionRule: 'always' as never }),
      (e: unknown) => e instanceof ConfigError && e.key === 'PUSH_MENTION_RULE',
    );
    assert.throws(() => compilePolicyOptions({ quotaTimeZone: 'Nowhere/City' }), /PUSH_QUOTA_TIME_ZONE/);
    assert.throws(() => compilePolicyOptions({ partitionCount: 0 }), /PUSH_PARTITIONS/);
    assert.throws(() => parseQuotas('hms=5'), /PUSH_VENDOR_QUOTAS/);
    assert.throws(() => policyOptionsFromEnv({ PUSH_MENTION_RULE: 'x' }), /PUSH_MENTION_RULE/);
    assert.deepEqual(parseQuotas('hms:im.demo=100, xiaomi:*=5'), { hms: { 'im.demo': 100 }, xiaomi: { '*': 5 } });
  });
});

describe('policy: deferred release at the end of quiet hours', () => {
  test('one DEFERRED push per still-unread conversation, with the latest unread count, when quiet hours end', () =>
    withHarness({ startMs: Date.parse('2026-01-15T14:30:00Z'), policy: { deferredRelease: true } }, async (h) => {
      // 22:30 in Shanghai; quiet 22:00–07:00 local, which ends at 23:00 UTC.
      await h.token('u1', 'd1', 'fcm');
      await h.settings('u1', { time_zone: 'Asia/Shanghai', quiet_hours: night });
      await h.message('u1', 'c1');
      await h.advanceTo(1_000);
      await h.message('u1', 'c1');
      await h.message('u1', 'c1');
      await h.message('u1', 'c2');
      await h.advanceTo(20_000);
      await h.presence('u1', 'd1', 'READ', 'c2', 1);
      const night1 = h.drain();
      assert.deepEqual(night1.dispatches, []);
      assert.deepEqual(night1.outcomes.map(briefOutcome).sort(), ['d1:c1#1 SUPPRESSED dnd', 'd1:c1#2 MERGED merged', 'd1:c2#1 SUPPRESSED read']);
      const quietEnd = Date.parse('2026-01-15T23:00:00Z') - Date.parse('2026-01-15T14:30:00Z');
      await h.advanceTo(quietEnd - 1_000, 600_000);
      assert.deepEqual(h.dispatches(), [], 'nothing before the quiet period ends');
      await h.advanceTo(quietEnd + 1_000);
      const { dispatches, outcomes } = h.drain();
      assert.deepEqual(outcomes, []);
      assert.equal(dispatches.length, 1);
      const d = dispatches[0]!;
      assert.deepEqual([d.conv_id, d.seq, d.badge, d.kind, d.silent, d.merged_count], ['c1', 3, 3, 'DEFERRED', false, 3]);
      assert.ok(d.decided_at >= Date.parse('2026-01-15T23:00:00Z'));
    }));

  test('without the option, quiet-hour pushes are only suppressed and counted', () =>
    withHarness({ startMs: Date.parse('2026-01-15T14:30:00Z') }, async (h) => {
      await h.token('u1', 'd1', 'fcm');
      await h.settings('u1', { time_zone: 'Asia/Shanghai', quiet_hours: night });
      await h.message('u1', 'c1');
      await h.advanceTo(10 * 3_600_000, 3_600_000);
      const { dispatches, outcomes } = h.drain();
      assert.deepEqual(dispatches, []);
      assert.deepEqual(outcomes.map(briefOutcome), ['d1:c1#1 SUPPRESSED dnd']);
    }));
});
