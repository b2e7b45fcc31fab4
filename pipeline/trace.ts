/**
 * The user's timeline as `pushctl trace` prints it (cli/commands/trace.ts): the push_events rows
 * from ClickHouse, the push tasks and the token state from MySQL, built into one list of lines in
 * time order, each with its reason in words. Returns data; printing stays in the command.
 */
import mysql from 'mysql2/promise';
import { readEndpoints } from '../common/endpoints.ts';
import { shardUrlOf } from '../sinks/mysql/shards.ts';
import { connectionFromEndpoints, createClickhouseClient, sqlString } from '../sinks/clickhouse/client.ts';
import { parseDetail } from '../processors/model/outcomes.ts';
import { parseDuration } from './duration.ts';
import { eventWords, vendorName } from './trace-words.ts';
import { mysqlClientOptions } from '../common/mysql-url.ts';

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
  /**
   * The facts the stage recorded behind the decision (the outcome's `detail`, keys in
   * processors/model/outcomes.ts: `hb`, `hold`, `ack`, `tz`, `qh`, `local`, `mention`, `over`,
   * `private`, `on`, `ch`, `why`, `skip`, `by`, `win`); empty when none.
   */
  facts: Record<string, string>;
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
  /** `k=v;...` (migrations/clickhouse/005_decision_detail.sql); null when none was recorded. */
  detail: string | null;
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
      facts: {},
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
      facts: parseDetail(e.detail),
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
      facts: {},
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

/** The user's push_events since `sinceMs` (of one conversation when `conv` is given), in time order. */
export function traceEventsQuery(uid: string, conv: string | undefined, sinceMs: number): string {
  // Messages persisted before the range may still have events in it; a minute of slack on event_time.
  return `SELECT event_id, event_ms, kind, source, stage, task_id, device_id, conv_id, seq, msg_id, vendor, reason, code, attempts, latency_ms, persisted_ms, collapse_id, token_hash, detail
FROM push_events
WHERE uid = ${sqlString(uid)} AND event_time >= ${Math.floor(sinceMs / 1000) - 60}${conv === undefined ? '' : ` AND conv_id = ${sqlString(conv)}`}
ORDER BY event_ms, event_id`;
}

async function readEvents(uid: string, conv: string | undefined, sinceMs: number): Promise<TraceEvent[]> {
  const client = createClickhouseClient(connectionFromEndpoints(readEndpoints()));
  try {
    const rs = await client.query({ query: traceEventsQuery(uid, conv, sinceMs), format: 'JSONEachRow' });
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
      detail: r.detail === null || r.detail === undefined ? null : String(r.detail),
    }));
  } finally {
    await client.close();
  }
}

async function readMysql(uid: string, conv: string | undefined, sinceMs: number): Promise<{ tasks: TraceTask[]; tokens: TraceToken[] }> {
  // The user's shard (sinks/mysql/shards.ts) holds their tasks and tokens.
  const endpoints = readEndpoints();
  const connection = await mysql.createConnection({ ...mysqlClientOptions(shardUrlOf(endpoints.mysqlShards, uid), endpoints.mysqlSecurity), timezone: 'Z' });
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
