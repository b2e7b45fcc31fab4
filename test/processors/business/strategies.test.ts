/**
 * The common strategies of business pushes (docs/entry.md), each against an expected result worked
 * out by hand from the calendar and the rules (never from the code under test): per-user frequency
 * caps across senders and local days, night deferral in several zones across a DST change, expiry,
 * opt-outs and the sender's idempotency key.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { BusinessHarness, briefOutcome } from './harness.ts';

const HOUR = 3_600_000;

describe('business strategies', () => {
  test('frequency cap: at most 2 campaign pushes per user and local day, across senders; notices are not capped; the next local day counts afresh', async () => {
    // 2026-01-15 10:00 UTC = 19:00 in Tokyo (UTC+9, no DST). The default night (22:00–08:00) is not reached.
    const h = BusinessHarness.create(Date.UTC(2026, 0, 15, 10, 0));
    await h.settings('u1', { time_zone: 'Asia/Tokyo' });
    await h.device('u1');
    await h.request('u1', 'a1', { sender: 'shop', category: 'CAMPAIGN' });
    await h.request('u1', 'b1', { sender: 'travel', category: 'CAMPAIGN' });
    await h.request('u1', 'a2', { sender: 'shop', category: 'CAMPAIGN' });
    await h.request('u1', 'b2', { sender: 'travel', category: 'CAMPAIGN' });
    await h.request('u1', 'n1', { sender: 'shop', category: 'NOTICE' });
    await h.request('u1', 'n2', { sender: 'shop', category: 'NOTICE' });
    await h.request('u1', 'n3', { sender: 'shop', category: 'NOTICE' });
    assert.deepEqual(
      h.dispatches().map((d) => `${d.business?.sender} ${d.business?.category}`),
      ['shop CAMPAIGN', 'travel CAMPAIGN', 'shop NOTICE', 'shop NOTICE', 'shop NOTICE'],
    );
    assert.deepEqual(h.outcomes().map(briefOutcome), ['u1 DROPPED frequency_cap', 'u1 DROPPED frequency_cap']);
    // 15:00 UTC is Tokyo's midnight; 00:00 UTC on the 16th is 09:00 there: the next local day, after the night.
    await h.advanceTo(Date.UTC(2026, 0, 16, 0, 0), HOUR);
    await h.request('u1', 'a3', { sender: 'shop', category: 'CAMPAIGN' });
    await h.request('u1', 'a4', { sender: 'shop', category: 'CAMPAIGN' });
    await h.request('u1', 'a5', { sender: 'shop', category: 'CAMPAIGN' });
    assert.equal(h.dispatches().length, 2);
    assert.deepEqual(h.outcomes().map(briefOutcome), ['u1 DROPPED frequency_cap']);
    await h.close();
  });

  test('night deferral: campaigns wait for 08:00 in each user’s zone, including across the US DST change of 2026-03-08; notices go at once', async () => {
    // 2026-03-08 06:30 UTC. New York: 01:30 EST (UTC-5), night; at 02:00 the clocks jump to 03:00 EDT (UTC-4), so 08:00 EDT is 12:00 UTC.
    // Los Angeles: 22:30 PST on the 7th, night; its DST starts 02:00 on the 8th, so 08:00 PDT (UTC-7) is 15:00 UTC.
    // Berlin: 07:30 CET (UTC+1), night until 08:00 CET = 07:00 UTC. Shanghai: 14:30, day: sent at once.
    const start = Date.UTC(2026, 2, 8, 6, 30);
    const h = BusinessHarness.create(start);
    const zones = { ny: 'America/New_York', la: 'America/Los_Angeles', berlin: 'Europe/Berlin', shanghai: 'Asia/Shanghai' };
    for (const [uid, zone] of Object.entries(zones)) {
      await h.settings(uid, { time_zone: zone });
      await h.device(uid);
      await h.request(uid, `sale-${uid}`, { sender: 'marketing', category: 'CAMPAIGN', campaign_id: 'spring' });
      await h.request(uid, `notice-${uid}`, { sender: 'security', category: 'NOTICE' });
    }
    const atOnce = h.dispatches().map((d) => `${d.uid} ${d.business?.category}`);
    assert.deepEqual(atOnce.sort(), ['berlin NOTICE', 'la NOTICE', 'ny NOTICE', 'shanghai CAMPAIGN', 'shanghai NOTICE']);
    const released = new Map<string, number>();
    // Step a minute at a time to 16:00 UTC; note the minute each campaign push goes out.
    while (h.now < Date.UTC(2026, 2, 8, 16, 0)) {
      await h.driver.advanceWallClockTime(60_000);
      for (const d of h.dispatches()) released.set(d.uid, d.decided_at);
    }
    const minute = (t: number | undefined) => (t === undefined ? undefined : new Date(t - (t % 60_000)).toISOString());
    assert.deepEqual(Object.fromEntries(['berlin', 'ny', 'la'].map((u) => [u, minute(released.get(u))])), {
      berlin: '2026-03-08T07:00:00.000Z',
      ny: '2026-03-08T12:00:00.000Z',
      la: '2026-03-08T15:00:00.000Z',
    });
    assert.equal(released.size, 3);
    assert.deepEqual(h.outcomes(), []);
    await h.close();
  });

  test('night deferral follows the user’s own quiet hours when set, and a category whose rule is drop is suppressed', async () => {
    // 2026-06-01 12:00 UTC; the user's quiet hours 11:00–13:00 UTC.
    const h = BusinessHarness.create(Date.UTC(2026, 5, 1, 12, 0), { overrides: { 'promo-bot': { categories: { CAMPAIGN: { night: 'drop' } } } } });
    await h.settings('u1', { time_zone: 'UTC', quiet_hours: { start_minute: 11 * 60, end_minute: 13 * 60 } });
    await h.device('u1');
    await h.request('u1', 'c1', { sender: 'shop', category: 'CAMPAIGN' });
    await h.request('u1', 'c2', { sender: 'promo-bot', category: 'CAMPAIGN' });
    assert.deepEqual(h.dispatches(), []);
    assert.deepEqual(h.outcomes().map(briefOutcome), ['u1 SUPPRESSED dnd']);
    await h.advanceTo(Date.UTC(2026, 5, 1, 13, 1));
    const d = h.dispatches();
    assert.deepEqual(
      d.map((x) => [x.business?.sender, x.kind]),
      [['shop', 'DEFERRED']],
    );
    await h.close();
  });

  test('expiry: an expired reminder is dropped; one that would expire before the night ends is dropped; one expiring after is sent in the morning', async () => {
    // 2026-01-15 23:00 UTC, user in UTC: night until 08:00 on the 16th.
    const start = Date.UTC(2026, 0, 15, 23, 0);
    const h = BusinessHarness.create(start);
    await h.settings('u1', { time_zone: 'UTC' });
    await h.device('u1');
    await h.request('u1', 'past', { category: 'REMINDER', expire_at: start - 1 });
    await h.request('u1', 'before-morning', { category: 'REMINDER', expire_at: Date.UTC(2026, 0, 16, 7, 59) });
    await h.request('u1', 'after-morning', { category: 'REMINDER', expire_at: Date.UTC(2026, 0, 16, 9, 0) });
    await h.request('u1', 'notice', { category: 'NOTICE', expire_at: start + HOUR });
    assert.deepEqual(
      h.outcomes().map((o) => `${o.status} ${o.reason}`),
      ['DROPPED expired', 'DROPPED expired'],
    );
    assert.equal(h.dispatches().length, 1, 'the notice goes at once');
    await h.advanceTo(Date.UTC(2026, 0, 16, 8, 5));
    const morning = h.dispatches();
    assert.equal(morning.length, 1);
    assert.equal(morning[0]!.business?.expire_at, Date.UTC(2026, 0, 16, 9, 0));
    assert.equal(morning[0]!.decided_at, Date.UTC(2026, 0, 16, 8, 0));
    await h.close();
  });

  test('opt-out: a user who turned campaigns off gets notices but no campaigns; a muted sender gets nothing through', async () => {
    const h = BusinessHarness.create(Date.UTC(2026, 0, 15, 12, 0));
    await h.settings('u1', { opted_out_categories: ['CAMPAIGN'], muted_senders: ['spammy'] });
    await h.device('u1');
    await h.settings('u2');
    await h.device('u2');
    await h.request('u1', 'c', { category: 'CAMPAIGN' });
    await h.request('u1', 'n', { category: 'NOTICE' });
    await h.request('u1', 's', { category: 'NOTICE', sender: 'spammy' });
    await h.request('u2', 'c', { category: 'CAMPAIGN' });
    assert.deepEqual(
      h.dispatches().map((d) => `${d.uid} ${d.business?.category}`),
      ['u1 NOTICE', 'u2 CAMPAIGN'],
    );
    assert.deepEqual(h.outcomes().map(briefOutcome), ['u1 SUPPRESSED opt_out', 'u1 SUPPRESSED opt_out']);
    await h.close();
  });

  test("idempotency: a sender's key is sent once within the retention, other senders' same key is theirs, and after the retention it is new", async () => {
    const h = BusinessHarness.create(Date.UTC(2026, 0, 15, 12, 0), { idempotencyTtlMs: HOUR });
    await h.device('u1');
    await h.request('u1', 'order-7', { sender: 'orders' });
    await h.request('u1', 'order-7', { sender: 'orders', body: 'again' });
    await h.request('u1', 'order-7', { sender: 'billing' });
    assert.equal(h.dispatches().length, 2);
    assert.deepEqual(h.outcomes().map(briefOutcome), ['u1 SKIPPED_DUPLICATE duplicate']);
    await h.advanceTo(h.now + HOUR + 60_000);
    await h.request('u1', 'order-7', { sender: 'orders' });
    assert.equal(h.dispatches().length, 1);
    await h.close();
  });

  test('idempotency: each duplicate request has an outcome of its own (distinct event ids), the same when the requests are processed again', async () => {
    const run = async () => {
      const h = BusinessHarness.create(Date.UTC(2026, 0, 15, 12, 0));
      await h.device('u1');
      for (let i = 0; i < 3; i++) await h.request('u1', 'order-7:shipped', { sender: 'orders' });
      const result = { dispatches: h.dispatches().length, duplicates: h.outcomes().filter((o) => o.status === 'SKIPPED_DUPLICATE') };
      await h.close();
      return result;
    };
    const first = await run();
    assert.equal(first.dispatches, 1);
    assert.equal(first.duplicates.length, 2);
    assert.equal(new Set(first.duplicates.map((o) => o.event_id)).size, 2, 'ClickHouse counts distinct event ids: one per duplicate request');
    // A restarted task reads the same records again (exactly-once replay): the same ids, so nothing is counted twice.
    const replay = await run();
    assert.deepEqual(
      replay.duplicates.map((o) => o.event_id),
      first.duplicates.map((o) => o.event_id),
    );
  });

  test('sender rate: 10 requests a second are spaced 100 ms apart, the rest wait their turn', async () => {
    const start = Date.UTC(2026, 0, 15, 12, 0);
    const h = BusinessHarness.create(start, { overrides: { bulk: { senderRatePerSecond: 10 } } });
    for (let i = 0; i < 30; i++) {
      await h.device(`u${i}`);
      await h.request(`u${i}`, `k${i}`, { sender: 'bulk' });
    }
    assert.equal(h.dispatches().length, 1, 'the first goes at once');
    await h.advanceTo(start + 1000, 10);
    // Slots 0, 100, ..., 1000 ms: 11 in the first second, including the first.
    assert.equal(h.dispatches().length, 10);
    await h.advanceTo(start + 3000, 10);
    assert.equal(h.dispatches().length, 19);
    assert.deepEqual(h.outcomes(), []);
    await h.close();
  });

  test('priority: a HIGH request of a sender goes ahead of its requests kept for the rate, which then wait one slot longer', async () => {
    const start = Date.UTC(2026, 0, 15, 12, 0);
    const h = BusinessHarness.create(start, { overrides: { shop: { senderRatePerSecond: 1 } } });
    for (const uid of ['a', 'b', 'c', 'urgent']) await h.device(uid);
    await h.request('a', 'k', { sender: 'shop', category: 'CAMPAIGN' });
    await h.request('b', 'k', { sender: 'shop', category: 'CAMPAIGN' });
    await h.request('urgent', 'k', { sender: 'shop', category: 'NOTICE', priority: 'HIGH' });
    await h.request('c', 'k', { sender: 'shop', category: 'CAMPAIGN' });
    // Slots: a 0 s, b 1 s, urgent 2 s (sent at once), c 3 s.
    assert.deepEqual(
      h.dispatches().map((d) => d.uid),
      ['a', 'urgent'],
    );
    await h.advanceTo(start + 1500, 100);
    assert.deepEqual(
      h.dispatches().map((d) => d.uid),
      ['b'],
    );
    await h.advanceTo(start + 2500, 100);
    assert.deepEqual(h.dispatches(), []);
    await h.advanceTo(start + 3500, 100);
    assert.deepEqual(
      h.dispatches().map((d) => d.uid),
      ['c'],
    );
    await h.close();
  });
});
