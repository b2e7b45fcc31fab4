/**
 * The user's timeline as `pushctl trace` prints it (cli/commands/trace.ts): the push_events rows
 * from ClickHouse, the push tasks and the token state from MySQL, built into one list of lines in
 * time order, each with its reason in words. Returns data; printing stays in the command.
 */
import mysql from 'mysql2/promise';
import { readEndpoints } from '../common/endpoints.ts';
import { connectionFromEndpoints, createClickhouseClient, sqlString } from '../sinks/clickhouse/client.ts';
import { parseDuration } from './duration.ts';

/** One line of the timeline (`--json` prints these, one per line; the fields are stable). */
export interface TraceLine {
  /** ISO 8601, UTC, ms. */
  time: string;
  msg_id: string;
  conv_id: string;
  seq: number | null;
  /** Empty for a decision about the user as a whole (no device with a token). */
  device_id: string;
  /** `persisted`, `online-filter`, `merge`, `policy`, `fan-out`, `receipt-join`, `token`. */
  stage: string;
  /** The push_events kind (`accepted`, `suppressed`, ...), `persisted`, or `invalidated` for a token. */
  outcome: string;
  /** The pipeline's reason code (`online_ack`, `dnd`, `mute`, `merged`, `dead_token`, ...); empty when none. */
  reason: string;
  vendor: string;
  /** For pushes of a conversation with merged messages: `leading` (pushed at once) or `trailing` (the update). */
  merge: 'leading' | 'trailing' | '';
  /** The line in words. */
  words: string;
}

/** A row of push_events as trace reads it (migrations/clickhouse/001_push_events.sql, 004_trace_columns.sql). */
export interface TraceEvent {
  event_id: string;
  event_ms: number;
  kind: string;
  source: 'outcome' | 'receipt';
  stage: string;
  task_id: string;
  device_id: string;
  conv_id: string;
  seq: number;
  msg_id: string;
  vendor: string;
  reason: string;
  code: string;
  attempts: number;
  latency_ms: number | null;
  persisted_ms: number | null;
  collapse_id: string | null;
  token_hash: string | null;
}

/** A row of im_push_task (migrations/mysql/001_im_push_task.sql; merge_kind where the table has it). */
export interface TraceTask {
  task_id: string;
  conv_id: string;
  seq: number;
  device_id: string;
  msg_id: string;
  vendor: string;
  status: number;
  attempts: number;
  merge_kind?: string;
}

/** A row of im_push_token (migrations/mysql/003_im_push_token.sql); the token itself is never read. */
export interface TraceToken {
  device_id: string;
  vendor: string;
  status: number;
  invalid_reason: string | null;
  invalidated_at: Date | null;
  token_hash: string;
}

const VENDOR_NAMES: Readonly<Record<string, string>> = { apns: 'APNs', fcm: 'FCM', hms: 'Huawei (HMS)', xiaomi: 'Xiaomi', oppo: 'OPPO', vivo: 'vivo' };
const vendorName = (v: string) => VENDOR_NAMES[v] ?? (v || 'the vendor');

/** What a fan-out or receipt failure reason means, in words. */
const FAILURE_WORDS: Readonly<Record<string, string>> = {
  rate_limited: 'the vendor throttled the request',
  quota: "the app's daily quota on this vendor was used up",
  payload_too_large: 'the notification was too large for the vendor',
  payload_rejected: 'the vendor refused a field of the notification',
  unknown_code: 'the vendor answered with a code we do not know',
  auth_failed: "the vendor refused the app's credentials",
  permanent: 'the vendor refused the request for good',
  retries_exhausted: 'the vendor kept failing until every retry was used',
  vendor_unreachable: 'the vendor could not be reached (the request never got to it)',
  max_age_exceeded: 'the vendor kept failing until the message was too old to push',
  parked_evicted: 'it waited too long for a retry while the push service was overloaded',
  no_adapter: 'the app has no account with that vendor',
  duplicate: 'it had already been sent once',
};

const ms = (n: number) => `${Math.max(0, Math.round(n))} ms`;
const tries = (n: number) => (n > 1 ? ` (it took ${n} attempts)` : '');

/** The words of one push_events row. `merge` is the row's place in a burst, `mergedCount` the messages merged into its conversation. */
export function eventWords(e: TraceEvent, merge: TraceLine['merge'], mergedCount: number): string {
  const v = vendorName(e.vendor);
  const since = e.persisted_ms !== null ? e.event_ms - e.persisted_ms : null;
  const code = e.code ? ` (code ${e.code})` : '';
  if (e.source === 'receipt') {
    if (e.kind === 'delivered')
      return `${v} reported the notification delivered to the device${since === null && e.latency_ms === null ? '' : ` ${ms(e.latency_ms ?? since!)} after the message`}`;
    if (e.kind === 'dead_token')
      return `${v} reported the device's push token is no longer valid${code} (the app was uninstalled or its token expired): the token was marked invalid`;
    return `${v} reported it could not deliver the notification to the device${code}`;
  }
  switch (`${e.kind}/${e.reason}`) {
    case 'suppressed/online_ack':
      return `not pushed: the device was online and acknowledged the message${since === null ? '' : ` ${ms(since)} later`}`;
    case 'suppressed/read':
      return 'not pushed: the user read the conversation before the notification went out';
    case 'suppressed/background_cooldown':
      return 'not pushed: the app was in the background and the device had been woken less than 10 s before';
    case 'suppressed/dnd':
      return "not pushed: the message arrived during the user's quiet hours (do not disturb, in the user's time zone)";
    case 'suppressed/mute':
      return 'not pushed: the user muted this conversation';
    case 'dropped/no_token':
      return e.device_id
        ? 'not pushed: the device has no valid push token for this app (it never registered one, or every token was invalidated)'
        : 'not pushed: none of the user’s devices has a valid push token for this app';
    case 'dropped/quota':
      return `not pushed: every push channel of the device (${v} first) had used up today's quota`;
    case 'merged/merged':
      return `not pushed on its own: merged into one notification for this conversation with the messages around it (a burst)`;
  }
  switch (e.kind) {
    case 'accepted': {
      const when = e.latency_ms !== null ? ` ${ms(e.latency_ms)} after the message` : '';
      if (merge === 'leading') return `pushed: ${v} accepted the notification${when}${tries(e.attempts)}; it was the first of a burst, pushed at once`;
      if (merge === 'trailing')
        return `pushed: ${v} accepted the notification${when}${tries(e.attempts)}; it was the update for the burst, sent when its merge window closed, covering the ${mergedCount} message(s) merged into it`;
      return `pushed: ${v} accepted the notification${when}${tries(e.attempts)}`;
    }
    case 'submitted':
      return `sent to ${v}; no answer recorded yet`;
    case 'dead_token':
      return `${v} refused the device's push token${e.token_hash ? ` (fingerprint ${e.token_hash.slice(0, 10)})` : ''} as no longer valid${code}: the token was marked invalid and the next channel of the device, if any, was tried`;
    case 'throttled':
      return `${v} throttled the request${code}: ${e.reason === 'quota' ? "the app's daily quota there was used up, the next channel was tried" : 'it was retried later or on another channel'}`;
    case 'failed':
      return `not delivered by ${v}: ${FAILURE_WORDS[e.reason] ?? `the request failed (${e.reason || 'no reason recorded'})`}${code}${tries(e.attempts)}`;
    case 'skipped_duplicate':
      return `not sent again: the notification had already been sent to ${v} (a replay or a retry)`;
    case 'suppressed':
      return `not pushed: ${e.reason === 'read' ? 'the user read the conversation before the notification went out' : `suppressed (${e.reason})`}`;
    case 'dropped':
      return `not pushed: ${FAILURE_WORDS[e.reason] ?? `dropped (${e.reason})`}`;
    default:
      return `${e.kind}${e.reason ? ` (${e.reason})` : ''}`;
  }
}

const iso = (msValue: number) => new Date(msValue).toISOString();

/**
 * The timeline from the three sources, in time order: one `persisted` line per message, one line
 * per push_events row (each event once), one per token invalidated in the range. Pure: the test
 * and the command share it.
 */
export function buildTimeline(events: readonly TraceEvent[], tasks: readonly TraceTask[], tokens: readonly TraceToken[], sinceMs: number): TraceLine[] {
  const unique = new Map<string, TraceEvent>();
  for (const e of events) if (!unique.has(e.event_id)) unique.set(e.event_id, e);
  const rows = [...unique.values()];
  const byTask = new Map(tasks.map((t) => [t.task_id, t]));
  // Receipts carry no msg_id: take it from the task (MySQL) or from an outcome of the same task.
  const msgOfTask = new Map<string, string>();
  for (const e of rows) if (e.msg_id) msgOfTask.set(e.task_id, e.msg_id);
  for (const t of tasks) if (t.msg_id && !msgOfTask.has(t.task_id)) msgOfTask.set(t.task_id, t.msg_id);

  // Merge bursts: per (device, conversation), the seqs merged away. A push before them opened the
  // burst (leading), a push after them carried the update (trailing). The task row's merge_kind,
  // where MySQL has it, is used first.
  const merged = new Map<string, number[]>();
  for (const e of rows) if (e.kind === 'merged') merged.set(`${e.device_id}|${e.conv_id}`, [...(merged.get(`${e.device_id}|${e.conv_id}`) ?? []), e.seq]);
  const mergeOf = (e: TraceEvent): { merge: TraceLine['merge']; count: number } => {
    const seqs = merged.get(`${e.device_id}|${e.conv_id}`) ?? [];
    const kind = byTask.get(e.task_id)?.merge_kind;
    if (kind === 'LEADING' && seqs.length > 0) return { merge: 'leading', count: seqs.length };
    if (kind === 'TRAILING') return { merge: 'trailing', count: seqs.filter((s) => s < e.seq).length };
    if (seqs.length === 0) return { merge: '', count: 0 };
    if (e.seq < Math.min(...seqs)) return { merge: 'leading', count: seqs.length };
    if (e.seq > Math.max(...seqs)) return { merge: 'trailing', count: seqs.filter((s) => s < e.seq).length };
    return { merge: '', count: 0 };
  };

  const lines: Array<TraceLine & { at: number; order: number }> = [];
  const persisted = new Map<string, { at: number; e: TraceEvent }>();
  for (const e of rows) {
    if (e.source === 'outcome' && e.msg_id && e.persisted_ms !== null && !persisted.has(e.msg_id)) persisted.set(e.msg_id, { at: e.persisted_ms, e });
  }
  for (const [msgId, { at, e }] of persisted) {
    if (at < sinceMs) continue;
    lines.push({
      at,
      order: 0,
      time: iso(at),
      msg_id: msgId,
      conv_id: e.conv_id,
      seq: e.seq,
      device_id: '',
      stage: 'persisted',
      outcome: 'persisted',
      reason: '',
      vendor: '',
      merge: '',
      words: `message ${msgId} (conversation ${e.conv_id}, seq ${e.seq}) was stored by IM`,
    });
  }
  const pushKinds = new Set(['accepted', 'submitted']);
  for (const e of rows) {
    const m = e.source === 'outcome' && pushKinds.has(e.kind) ? mergeOf(e) : { merge: '' as const, count: 0 };
    lines.push({
      at: e.event_ms,
      order: e.source === 'receipt' ? 2 : 1,
      time: iso(e.event_ms),
      msg_id: e.msg_id || msgOfTask.get(e.task_id) || '',
      conv_id: e.conv_id,
      seq: e.seq,
      device_id: e.device_id,
      stage: e.stage,
      outcome: e.kind,
      reason: e.reason,
      vendor: e.vendor,
      merge: m.merge,
      words: eventWords(e, m.merge, m.count),
    });
  }
  for (const t of tokens) {
    if (t.status === 1 || t.invalidated_at === null || t.invalidated_at.getTime() < sinceMs) continue;
    const at = t.invalidated_at.getTime();
    lines.push({
      at,
      order: 3,
      time: iso(at),
      msg_id: '',
      conv_id: '',
      seq: null,
      device_id: t.device_id,
      stage: 'token',
      outcome: 'invalidated',
      reason: t.invalid_reason ?? '',
      vendor: t.vendor,
      merge: '',
      words: `the device's ${vendorName(t.vendor)} token (fingerprint ${t.token_hash.slice(0, 10)}) was marked invalid${t.invalid_reason ? ` (${t.invalid_reason})` : ''}: no push goes to it until the app registers a new one`,
    });
  }
  lines.sort((a, b) => a.at - b.at || a.order - b.order || a.device_id.localeCompare(b.device_id) || a.conv_id.localeCompare(b.conv_id));
  return lines.map(({ at: _at, order: _order, ...line }) => line);
}

export interface TraceOptions {
  readonly uid: string;
  readonly conv?: string;
  /** Default 24h. */
  readonly since?: string;
  readonly now?: () => number;
}

const num = (v: unknown): number => (typeof v === 'number' ? v : Number(v));
const numOrNull = (v: unknown): number | null => (v === null || v === undefined ? null : num(v));

async function readEvents(uid: string, conv: string | undefined, sinceMs: number): Promise<TraceEvent[]> {
  const client = createClickhouseClient(connectionFromEndpoints(readEndpoints()));
  try {
    // Messages persisted before the range may still have events in it; a minute of slack on event_time.
    const query = `SELECT event_id, event_ms, kind, source, stage, task_id, device_id, conv_id, seq, msg_id, vendor, reason, code, attempts, latency_ms, persisted_ms, collapse_id, token_hash
FROM push_events
WHERE uid = ${sqlString(uid)} AND event_time >= ${Math.floor(sinceMs / 1000) - 60}${conv === undefined ? '' : ` AND conv_id = ${sqlString(conv)}`}
ORDER BY event_ms, event_id`;
    const rs = await client.query({ query, format: 'JSONEachRow' });
    const rows = await rs.json<Record<string, unknown>>();
    return rows.map((r) => ({
      event_id: String(r.event_id),
      event_ms: num(r.event_ms),
      kind: String(r.kind),
      source: r.source === 'receipt' ? 'receipt' : 'outcome',
      stage: String(r.stage),
      task_id: String(r.task_id),
      device_id: String(r.device_id),
      conv_id: String(r.conv_id),
      seq: num(r.seq),
      msg_id: String(r.msg_id),
      vendor: String(r.vendor),
      reason: String(r.reason),
      code: String(r.code),
      attempts: num(r.attempts),
      latency_ms: numOrNull(r.latency_ms),
      persisted_ms: numOrNull(r.persisted_ms),
      collapse_id: r.collapse_id === null || r.collapse_id === undefined ? null : String(r.collapse_id),
      token_hash: r.token_hash === null || r.token_hash === undefined ? null : String(r.token_hash),
    }));
  } finally {
    await client.close();
  }
}

async function readMysql(uid: string, conv: string | undefined, sinceMs: number): Promise<{ tasks: TraceTask[]; tokens: TraceToken[] }> {
  const connection = await mysql.createConnection({ uri: readEndpoints().mysqlUrl, timezone: 'Z' });
  try {
    // SELECT *: merge_kind is read where the table has it (migrations/mysql/006_im_push_task_row.sql).
    const [taskRows] = await connection.query(
      `SELECT * FROM im_push_task WHERE uid = ? AND created_at >= ?${conv === undefined ? '' : ' AND conv_id = ?'} ORDER BY created_at`,
      conv === undefined ? [uid, new Date(sinceMs - 60_000)] : [uid, new Date(sinceMs - 60_000), conv],
    );
    // The token is hashed in MySQL and never leaves it: only a fingerprint reaches this process.
    const [tokenRows] = await connection.query(
      'SELECT device_id, vendor, status, invalid_reason, invalidated_at, SHA2(token, 256) AS token_hash FROM im_push_token WHERE uid = ? ORDER BY device_id, vendor',
      [uid],
    );
    const tasks = (taskRows as Array<Record<string, unknown>>).map((r) => ({
      task_id: String(r.task_id),
      conv_id: String(r.conv_id),
      seq: num(r.seq),
      device_id: String(r.device_id),
      msg_id: String(r.msg_id ?? ''),
      vendor: String(r.vendor ?? ''),
      status: num(r.status),
      attempts: num(r.attempts),
      ...(typeof r.merge_kind === 'string' ? { merge_kind: r.merge_kind } : {}),
    }));
    return { tasks, tokens: tokenRows as TraceToken[] };
  } finally {
    await connection.end();
  }
}

/** The user's timeline since `since`, from ClickHouse and MySQL. */
export async function trace(options: TraceOptions): Promise<TraceLine[]> {
  const sinceMs = (options.now ?? Date.now)() - parseDuration(options.since ?? '24h');
  const [events, { tasks, tokens }] = await Promise.all([readEvents(options.uid, options.conv, sinceMs), readMysql(options.uid, options.conv, sinceMs)]);
  return buildTimeline(
    events.filter((e) => e.event_ms >= sinceMs || (e.persisted_ms ?? 0) >= sinceMs),
    tasks,
    options.conv === undefined ? tokens : [],
    sinceMs,
  );
}
