/** Quiet hours in the user's IANA zone: pure functions, including midnight ranges and DST days. */
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { inQuietHours, localDay, localMinuteOfDay, quietHoursEnd } from '../../../processors/policy/quiet-hours.ts';

const night = { start_minute: 22 * 60, end_minute: 7 * 60 }; // 22:00–07:00, crosses midnight
const lunch = { start_minute: 12 * 60, end_minute: 13 * 60 + 30 };

describe('quiet hours', () => {
  const cases: Array<[string, string, string, typeof night | null, boolean]> = [
    // [description, UTC instant, zone, range, quiet?]
    ['Shanghai 23:30 local is inside 22–07', '2026-01-15T15:30:00Z', 'Asia/Shanghai', night, true],
    ['Shanghai 06:59 local is inside', '2026-01-15T22:59:00Z', 'Asia/Shanghai', night, true],
    ['Shanghai 07:00 local is outside (end exclusive)', '2026-01-15T23:00:00Z', 'Asia/Shanghai', night, false],
    ['Shanghai 22:00 local is inside (start inclusive)', '2026-01-15T14:00:00Z', 'Asia/Shanghai', night, true],
    ['the same instant is 15:30 in London: outside', '2026-01-15T15:30:00Z', 'Europe/London', night, false],
    ['New York 00:10 local (05:10 UTC) is inside', '2026-01-15T05:10:00Z', 'America/New_York', night, true],
    ['a range within one day: 12:45 inside', '2026-01-15T12:45:00Z', 'UTC', lunch, true],
    ['a range within one day: 13:30 outside', '2026-01-15T13:30:00Z', 'UTC', lunch, false],
    ['no range: never quiet', '2026-01-15T23:00:00Z', 'UTC', null, false],
    ['Kathmandu (+05:45): 22:05 local', '2026-01-15T16:20:00Z', 'Asia/Kathmandu', night, true],
    // DST: New York springs forward on 2026-03-08 at 02:00 EST → 03:00 EDT.
    ['New York DST day: 06:30 EDT (10:30 UTC) inside', '2026-03-08T10:30:00Z', 'America/New_York', night, true],
    ['New York DST day: 07:05 EDT (11:05 UTC) outside, though 06:05 in standard time', '2026-03-08T11:05:00Z', 'America/New_York', night, false],
    ['New York the day before DST: 06:05 EST (11:05 UTC) inside', '2026-03-07T11:05:00Z', 'America/New_York', night, true],
    // Berlin falls back on 2026-10-25 at 03:00 CEST → 02:00 CET.
    ['Berlin fall-back day: 06:30 CET (05:30 UTC) inside', '2026-10-25T05:30:00Z', 'Europe/Berlin', night, true],
    ['Berlin fall-back day: 07:30 CET (06:30 UTC) outside', '2026-10-25T06:30:00Z', 'Europe/Berlin', night, false],
    ['Berlin the day before: 06:30 UTC is 08:30 CEST, outside', '2026-10-24T06:30:00Z', 'Europe/Berlin', night, false],
    ['Berlin the day before: 04:30 UTC is 06:30 CEST, inside', '2026-10-24T04:30:00Z', 'Europe/Berlin', night, true],
    ['an unknown zone falls back to UTC', '2026-01-15T23:00:00Z', 'Mars/Olympus', night, true],
  ];
  for (const [name, iso, zone, range, quiet] of cases) {
    test(name, () => assert.equal(inQuietHours(Date.parse(iso), zone, range), quiet));
  }

  test('local minute of day and local day', () => {
    assert.equal(localMinuteOfDay(Date.parse('2026-03-08T07:30:00Z'), 'America/New_York'), 3 * 60 + 30); // 03:30 EDT, 02:30 never exists
    assert.equal(localMinuteOfDay(Date.parse('2026-01-15T00:00:00Z'), 'UTC'), 0);
    assert.equal(localDay(Date.parse('2026-01-15T16:30:00Z'), 'Asia/Shanghai'), '2026-01-16');
    assert.equal(localDay(Date.parse('2026-01-15T16:30:00Z'), 'UTC'), '2026-01-15');
  });

  const ends: Array<[string, string, string, string]> = [
    // [description, now (UTC), zone, expected end (UTC)]
    ['Shanghai 23:30 → 07:00 next morning', '2026-01-15T15:30:00Z', 'Asia/Shanghai', '2026-01-15T23:00:00Z'],
    ['Shanghai 02:10:30 → 07:00 the same morning', '2026-01-15T18:10:30Z', 'Asia/Shanghai', '2026-01-15T23:00:00Z'],
    ['New York, the night DST starts: 23:00 EST → 07:00 EDT (11:00 UTC, not 12:00)', '2026-03-08T04:00:00Z', 'America/New_York', '2026-03-08T11:00:00Z'],
    ['Berlin, the night DST ends: 23:30 CEST → 07:00 CET (06:00 UTC)', '2026-10-24T21:30:00Z', 'Europe/Berlin', '2026-10-25T06:00:00Z'],
  ];
  for (const [name, now, zone, expected] of ends) {
    test(`quiet hours end: ${name}`, () =>
      assert.equal(new Date(quietHoursEnd(Date.parse(now), zone, night)).toISOString(), new Date(Date.parse(expected)).toISOString()));
  }

  test('quiet hours end on a local time that a DST jump skips: the first instant after the gap', () => {
    // 02:30 does not exist in New York on 2026-03-08 (02:00 EST → 03:00 EDT).
    const end = quietHoursEnd(Date.parse('2026-03-08T05:00:00Z'), 'America/New_York', { start_minute: 0, end_minute: 150 });
    assert.equal(new Date(end).toISOString(), '2026-03-08T07:00:00.000Z'); // 03:00 EDT, the first minute after the gap
    assert.equal(inQuietHours(end, 'America/New_York', { start_minute: 0, end_minute: 150 }), false);
    assert.equal(inQuietHours(end - 60_000, 'America/New_York', { start_minute: 0, end_minute: 150 }), true);
  });
});
