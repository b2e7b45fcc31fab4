/**
 * The ingest rules (docs/design.md, "Ingest validation"): what a record from outside the pipeline
 * must satisfy before any stage keeps it in state or decides on it. Each rule has a stable name that
 * the DLQ reason carries (`breaks ingest rule future_skew: ...`), so an operator can tell from the
 * DLQ headers which rule a record broke, and the reason never quotes a token or a secret.
 *
 * The checks run once per input record on the hot path: plain comparisons, no regular expression,
 * no allocation unless a rule is broken. Zone lookups are cached (building an Intl formatter costs
 * ~0.1 ms).
 */
import { checkKey, readKey, type Env } from '../../common/config.ts';
import { CONFIG_KEYS } from '../../common/config-keys.ts';

/** Options of the ingest rules; every stage that reads an outside topic takes them. */
export interface IngestOptions {
  /**
   * How far an event time (persisted_at, presence `at`, a receipt's time) may lie in the past, ms.
   * Env PUSH_INGEST_MAX_PAST_SKEW_MS; default 7 days (the input topics' default retention, so a
   * replay or a catch-up after a day-long outage passes untouched); allowed 1 minute–365 days.
   * Version stamps of compacted topics (token reported_at, settings updated_at) have no past bound:
   * a compacted topic legitimately holds a user's settings from years ago.
   */
  maxPastSkewMs?: number;
  /**
   * How far any time stamp may lie in the future, ms. Env PUSH_INGEST_MAX_FUTURE_SKEW_MS; default
   * 5 minutes (clock drift between hosts, not more: a token or settings record stamped ahead would
   * refuse every correct update until its stamp); allowed 1 second–1 day.
   */
  maxFutureSkewMs?: number;
}

export interface IngestRules {
  readonly maxPastSkewMs: number;
  readonly maxFutureSkewMs: number;
}

const PAST = CONFIG_KEYS.PUSH_INGEST_MAX_PAST_SKEW_MS;
const FUTURE = CONFIG_KEYS.PUSH_INGEST_MAX_FUTURE_SKEW_MS;

/** Validates the options once (ConfigError naming the PUSH_* key). */
export function compileIngestRules(options: IngestOptions = {}): IngestRules {
  return Object.freeze({
    maxPastSkewMs: checkKey(PAST, options.maxPastSkewMs),
    maxFutureSkewMs: checkKey(FUTURE, options.maxFutureSkewMs),
  });
}

/** PUSH_INGEST_MAX_PAST_SKEW_MS and PUSH_INGEST_MAX_FUTURE_SKEW_MS. */
export function ingestOptionsFromEnv(env: Env): IngestOptions {
  return { maxPastSkewMs: readKey(env, PAST), maxFutureSkewMs: readKey(env, FUTURE) };
}

/**
 * Longest accepted strings, in UTF-16 code units (never fewer than the code points MySQL counts):
 * the VARCHAR sizes of migrations/mysql/ for what is stored there, generous bounds for the rest.
 */
export const MAX_LENGTH = {
  /** im_push_task.uid, im_push_token.uid. */
  uid: 64,
  /** im_push_task.conv_id. */
  convId: 64,
  /** im_push_task.msg_id. */
  msgId: 64,
  /** im_push_task.app_id, im_push_token.app_id. */
  appId: 64,
  /** im_push_task.device_id, im_push_token.device_id. */
  deviceId: 128,
  /** im_push_task.platform, im_push_token.platform. */
  platform: 16,
  /** im_push_token.token. */
  token: 512,
  /** im_push_token.invalid_reason. */
  reason: 64,
  manufacturer: 64,
  /** The longest IANA zone name is 32 characters. */
  timeZone: 64,
  /** Titles are cut to each vendor's limit later; this bounds what state may hold. */
  title: 1_024,
  /** Summaries are cut to PUSH_SUMMARY_MAX_CHARS (≤ 100) later; this bounds what state may hold. */
  summary: 8_192,
} as const;

/**
 * Muted conversations per user (each one a conv_id). Bounds the settings the policy keeps in its
 * store: 2,000 ids of 64 characters stay well under the broker's 1 MB record limit in the store's
 * JSON changelog even when every character takes 6 bytes (a JSON \u escape); 10,000 did not.
 */
export const MAX_MUTED_CONVERSATIONS = 2_000;

/** Avro `int` (unread_cnt, the dispatch badge). */
export const INT32_MAX = 2_147_483_647;

/**
 * Each check returns undefined when the value passes, else `<rule>: <what is wrong>`. The rule
 * names are stable (docs/design.md, "Ingest validation"); details quote numbers, never strings
 * from the record other than a zone name.
 */
export function id(field: string, value: string | null | undefined, max: number): string | undefined {
  if (!value) return `non_empty: ${field} is empty`;
  return value.length > max ? `max_length: ${field} has ${value.length} characters (max ${max})` : undefined;
}

export function text(field: string, value: string | null | undefined, max: number): string | undefined {
  return value && value.length > max ? `max_length: ${field} has ${value.length} characters (max ${max})` : undefined;
}

/** An integer in [min, max] (Avro and column ranges). */
export function int(field: string, value: number, min: number, max: number): string | undefined {
  return Number.isSafeInteger(value) && value >= min && value <= max ? undefined : `int_range: ${field} must be an integer in [${min}, ${max}], got ${value}`;
}

/**
 * An event time: an integer epoch ms within [now - maxPastSkewMs, now + maxFutureSkewMs].
 * `now` is the stage's wall clock (or, for a receipt's own time, when the receiver got it).
 */
export function eventTime(field: string, value: number, now: number, rules: IngestRules): string | undefined {
  if (!Number.isSafeInteger(value) || value <= 0) return `epoch_ms: ${field} must be a positive integer epoch ms, got ${value}`;
  if (value > now + rules.maxFutureSkewMs)
    return `future_skew: ${field} is ${value - now} ms ahead of now (max ${rules.maxFutureSkewMs}, PUSH_INGEST_MAX_FUTURE_SKEW_MS)`;
  if (value < now - rules.maxPastSkewMs)
    return `past_skew: ${field} is ${now - value} ms before now (max ${rules.maxPastSkewMs}, PUSH_INGEST_MAX_PAST_SKEW_MS)`;
  return undefined;
}

/**
 * The version stamp of a compacted topic's record (token reported_at, settings updated_at): a
 * positive integer epoch ms, not ahead of now by more than maxFutureSkewMs (a stamp far ahead would
 * outrank every later correction). No past bound (see IngestOptions.maxPastSkewMs).
 */
export function versionStamp(field: string, value: number, now: number, rules: IngestRules): string | undefined {
  if (!Number.isSafeInteger(value) || value <= 0) return `epoch_ms: ${field} must be a positive integer epoch ms, got ${value}`;
  return value > now + rules.maxFutureSkewMs
    ? `future_skew: ${field} is ${value - now} ms ahead of now (max ${rules.maxFutureSkewMs}, PUSH_INGEST_MAX_FUTURE_SKEW_MS)`
    : undefined;
}

/** Zone name → its canonical IANA name, or null when Intl does not know it. Bounded. */
const zones = new Map<string, string | null>();
const MAX_CACHED_ZONES = 4_096;

/**
 * The canonical IANA name of a zone the runtime's tz database knows (`asia/shanghai` →
 * `Asia/Shanghai`, `US/Eastern` → `America/New_York`), or undefined for an unknown zone.
 */
export function canonicalZone(zone: string): string | undefined {
  let canonical = zones.get(zone);
  if (canonical === undefined) {
    try {
      canonical = new Intl.DateTimeFormat('en-US', { timeZone: zone }).resolvedOptions().timeZone;
    } catch {
      // Intl throws a RangeError for a zone it does not know: that is the answer asked for (null:
      // unknown), which the caller turns into a refused record naming the field, not an error.
      canonical = null;
    }
    // Past the bound (only reachable with made-up names), answers are computed, not kept.
    if (zones.size < MAX_CACHED_ZONES) zones.set(zone, canonical);
  }
  return canonical ?? undefined;
}

export function knownZone(field: string, zone: string): string | undefined {
  if (zone.length > MAX_LENGTH.timeZone) return `max_length: ${field} has ${zone.length} characters (max ${MAX_LENGTH.timeZone})`;
  return canonicalZone(zone) === undefined ? `known_zone: ${field} ${JSON.stringify(zone)} is not an IANA time zone` : undefined;
}
