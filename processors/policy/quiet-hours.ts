/**
 * Night quiet hours in the user's own IANA time zone. Local time comes from Intl (the runtime's tz
 * database), so DST changes are handled by the zone rules: a range is compared with the local
 * wall-clock minute of the moment, whatever the UTC offset on that day.
 */
import { detailString } from '../model/outcomes.ts';

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(timeZone: string): Intl.DateTimeFormat {
  let f = formatters.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', { timeZone, hourCycle: 'h23', hour: '2-digit', minute: '2-digit' });
    formatters.set(timeZone, f);
  }
  return f;
}

/**
 * Whether Intl knows the zone. Settings naming an unknown zone are refused at ingest
 * (processors/model/inputs.ts); one kept in state from before that rule falls back to UTC here.
 */
const invalidZones = new Set<string>();

export function isValidTimeZone(timeZone: string): boolean {
  if (invalidZones.has(timeZone)) return false;
  try {
    formatter(timeZone);
    return true;
  } catch {
    // Intl throws a RangeError for a zone it does not know: that is the answer asked for (false),
    // and the caller falls back to UTC (see above), so nothing is lost by not rethrowing it.
    if (invalidZones.size < 10_000) invalidZones.add(timeZone);
    return false;
  }
}

/** Minute of the local day (0..1439) at epoch ms `at` in `timeZone`. */
export function localMinuteOfDay(at: number, timeZone: string): number {
  const parts = formatter(isValidTimeZone(timeZone) ? timeZone : 'UTC').formatToParts(new Date(at));
  const hour = Number(parts.find((p) => p.type === 'hour')?.value ?? 0);
  const minute = Number(parts.find((p) => p.type === 'minute')?.value ?? 0);
  return (hour % 24) * 60 + minute;
}

export interface QuietRange {
  /** Local minute the quiet period starts (inclusive), 0..1439. */
  start_minute: number;
  /** Local minute it ends (exclusive), 0..1439. A start after the end crosses midnight; equal means off. */
  end_minute: number;
}

/** Whether the local time of `at` in `timeZone` falls in the range. */
export function inQuietHours(at: number, timeZone: string, range: QuietRange | null | undefined): boolean {
  if (!range || range.start_minute === range.end_minute) return false;
  const m = localMinuteOfDay(at, timeZone);
  return range.start_minute < range.end_minute ? m >= range.start_minute && m < range.end_minute : m >= range.start_minute || m < range.end_minute;
}

const dayFormatters = new Map<string, Intl.DateTimeFormat>();

/** The calendar day (YYYY-MM-DD) of `at` in `timeZone`: the quota ledger's day. */
export function localDay(at: number, timeZone: string): string {
  const zone = isValidTimeZone(timeZone) ? timeZone : 'UTC';
  let f = dayFormatters.get(zone);
  if (!f) dayFormatters.set(zone, (f = new Intl.DateTimeFormat('en-CA', { timeZone: zone, year: 'numeric', month: '2-digit', day: '2-digit' })));
  return f.format(new Date(at));
}

/**
 * The first instant after `at` when the quiet range ends (local minute `end_minute`, at :00 s) in
 * `timeZone`. Computed from the local minute of `at`, then corrected for a UTC offset change (DST)
 * between `at` and the candidate; on a day when that local minute does not exist, the first instant
 * after the gap.
 */
export function quietHoursEnd(at: number, timeZone: string, range: QuietRange): number {
  const minute = 60_000;
  const startOfMinute = at - (at % minute);
  let candidate = startOfMinute + ((range.end_minute - localMinuteOfDay(at, timeZone) + 1440) % 1440 || 1440) * minute;
  for (let i = 0; i < 3; i++) {
    const drift = ((((localMinuteOfDay(candidate, timeZone) - range.end_minute) % 1440) + 1440 + 720) % 1440) - 720;
    if (drift === 0) break;
    candidate -= drift * minute;
  }
  // A local time skipped by a DST jump has no instant: the corrections oscillate around the gap.
  // Step to the first minute after it that is no longer quiet.
  for (let i = 0; i < 180 && inQuietHours(candidate, timeZone, range); i++) candidate += minute;
  return candidate <= at ? candidate + 1440 * minute : candidate;
}

const hhmm = (minute: number) => `${String(Math.floor(minute / 60)).padStart(2, '0')}:${String(minute % 60).padStart(2, '0')}`;

/**
 * A quiet-hours suppression's detail (processors/model/outcomes.ts): the user's zone, the range and
 * the local time of `at` there, and the mention that did not override it, if any.
 */
export function quietDetail(timeZone: string, range: QuietRange, at: number, mention: string | null): string | null {
  return detailString({
    tz: timeZone,
    qh: `${hhmm(range.start_minute)}-${hhmm(range.end_minute)}`,
    local: hhmm(localMinuteOfDay(at, timeZone)),
    mention,
  });
}
