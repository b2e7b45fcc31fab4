/**
 * A stage with several sources (co-partitioned topics) tells their records apart by shape, so it
 * never needs topic names. This is the decisions' validation boundary at ingest (docs/design.md,
 * "Ingest validation"): a value of no known shape, or one that decodes but breaks a rule of its
 * topic (an empty or oversized id, an integer outside its Avro or column range, a time stamp too far
 * from now, an unknown zone, a uid that is not the record key, ...), is a ContractError, which the
 * runtime routes to the DLQ with the rule in the reason instead of letting it reach state or become
 * a push decision. A tombstone (null value) on a compacted topic read as a table deletes the key's
 * state (`classifyTombstone`).
 */
import { ContractError } from '../../common/errors.ts';
import {
  compileIngestRules,
  eventTime,
  id,
  int,
  INT32_MAX,
  knownZone,
  MAX_LENGTH,
  MAX_MUTED_CONVERSATIONS,
  text,
  versionStamp,
  type IngestRules,
} from './ingest.ts';
import type { MessagePersisted, PresenceEvent, PushCandidate, PushMerged, TokenReport, UserSettings } from './records.ts';
import { VENDORS } from './vendors.ts';

export type DecisionInput =
  | { kind: 'message'; value: MessagePersisted }
  | { kind: 'presence'; value: PresenceEvent }
  | { kind: 'token'; value: TokenReport }
  | { kind: 'settings'; value: UserSettings }
  | { kind: 'candidate'; value: PushCandidate }
  | { kind: 'merged'; value: PushMerged };

const has = (v: object, ...fields: string[]) => fields.every((f) => f in v);

function shapeOf(value: unknown): DecisionInput {
  if (value !== null && typeof value === 'object') {
    if (has(value, 'token', 'vendor', 'device_id')) return { kind: 'token', value: value as TokenReport };
    if (has(value, 'time_zone', 'muted_conversations')) return { kind: 'settings', value: value as UserSettings };
    if (has(value, 'collapse_id', 'window_start')) return { kind: 'merged', value: value as PushMerged };
    if (has(value, 'presence', 'decided_at', 'kind')) return { kind: 'candidate', value: value as PushCandidate };
    if (has(value, 'kind', 'device_id', 'at')) return { kind: 'presence', value: value as PresenceEvent };
    if (has(value, 'msg_id', 'persisted_at', 'seq', 'uid')) return { kind: 'message', value: value as MessagePersisted };
  }
  if (value === null) throw new ContractError('CONTRACT_VIOLATION', 'breaks ingest rule tombstone: a null value on a topic that is not read as a table');
  throw new ContractError('UNEXPECTED_RECORD', 'record matches none of the stage input schemas');
}

const VENDOR_NAMES = new Set<string>(VENDORS);

function message(m: MessagePersisted, now: number, rules: IngestRules): string | undefined {
  return (
    id('msg_id', m.msg_id, MAX_LENGTH.msgId) ??
    id('conv_id', m.conv_id, MAX_LENGTH.convId) ??
    id('app_id', m.app_id, MAX_LENGTH.appId) ??
    text('sender_uid', m.sender_uid, MAX_LENGTH.uid) ??
    text('title', m.title, MAX_LENGTH.title) ??
    text('summary', m.summary, MAX_LENGTH.summary) ??
    int('seq', m.seq, 0, Number.MAX_SAFE_INTEGER) ??
    int('unread_cnt', m.unread_cnt, 0, INT32_MAX) ??
    eventTime('persisted_at', m.persisted_at, now, rules)
  );
}

function presence(p: PresenceEvent, now: number, rules: IngestRules): string | undefined {
  const broken =
    id('device_id', p.device_id, MAX_LENGTH.deviceId) ??
    text('conv_id', p.conv_id, MAX_LENGTH.convId) ??
    (p.seq === null ? undefined : int('seq', p.seq, 0, Number.MAX_SAFE_INTEGER)) ??
    eventTime('at', p.at, now, rules);
  if (broken) return broken;
  if ((p.kind === 'ACK' || p.kind === 'READ') && (!p.conv_id || p.seq === null)) return `ack_target: ${p.kind} needs conv_id and seq`;
  return undefined;
}

function token(t: TokenReport, now: number, rules: IngestRules): string | undefined {
  const broken =
    id('device_id', t.device_id, MAX_LENGTH.deviceId) ??
    id('app_id', t.app_id, MAX_LENGTH.appId) ??
    text('platform', t.platform, MAX_LENGTH.platform) ??
    text('token', t.token, MAX_LENGTH.token) ??
    text('reason', t.reason, MAX_LENGTH.reason) ??
    text('manufacturer', t.manufacturer, MAX_LENGTH.manufacturer) ??
    versionStamp('reported_at', t.reported_at, now, rules);
  if (broken) return broken;
  if (!VENDOR_NAMES.has(t.vendor)) return `known_vendor: unknown vendor ${JSON.stringify(t.vendor.slice(0, 16))}`;
  if (t.state === 'VALID' && !t.token) return 'token_present: a VALID token report needs a token';
  return undefined;
}

function settings(s: UserSettings, now: number, rules: IngestRules): string | undefined {
  const q = s.quiet_hours;
  const broken =
    knownZone('time_zone', s.time_zone) ??
    (q ? (int('quiet_hours.start_minute', q.start_minute, 0, 1439) ?? int('quiet_hours.end_minute', q.end_minute, 0, 1439)) : undefined) ??
    versionStamp('updated_at', s.updated_at, now, rules);
  if (broken) return broken;
  const muted = s.muted_conversations;
  if (muted.length > MAX_MUTED_CONVERSATIONS) return `max_length: muted_conversations has ${muted.length} entries (max ${MAX_MUTED_CONVERSATIONS})`;
  for (const conv of muted) {
    const bad = id('muted_conversations[]', conv, MAX_LENGTH.convId);
    if (bad) return bad;
  }
  return undefined;
}

/** The first ingest rule the input breaks (`<rule>: <detail>`), or undefined. */
function violation(input: DecisionInput, key: string | null | undefined, now: number, rules: IngestRules): string | undefined {
  const v = input.value;
  const uid = id('uid', v.uid, MAX_LENGTH.uid);
  if (uid) return uid;
  if (key !== undefined && key !== null && key !== v.uid) return 'key_is_uid: uid differs from the record key (topics are keyed by recipient uid)';
  switch (input.kind) {
    case 'message':
      return message(input.value, now, rules);
    case 'presence':
      return presence(input.value, now, rules);
    case 'token':
      return token(input.value, now, rules);
    case 'settings':
      return settings(input.value, now, rules);
    default:
      // Candidates and merged notifications are hand-overs inside the decisions, built from checked input.
      return input.value.conv_id ? undefined : 'non_empty: conv_id is empty';
  }
}

/**
 * The last value classified, and how. A token or presence record reaches two processors of the
 * same task one after the other (online-filter, policy); both must take the same verdict (a record
 * one of them kept is not also dead-lettered by the other), so the second gets the first's answer.
 * Compared by identity: the same decoded value object.
 */
let lastValue: unknown;
let lastKey: string | null | undefined;
let lastInput: DecisionInput | undefined;

const DEFAULT_RULES = compileIngestRules();

/**
 * Tells the record's kind by shape and checks the ingest rules; `key` is the record key (the uid),
 * `now` the stage's wall clock (epoch ms; default Date.now()), `rules` the compiled PUSH_INGEST_*
 * options (default their defaults). Throws a ContractError naming the broken rule.
 */
export function classifyInput(value: unknown, key?: string | null, now = Date.now(), rules: IngestRules = DEFAULT_RULES): DecisionInput {
  if (value === lastValue && key === lastKey && lastInput) return lastInput;
  const input = shapeOf(value);
  const broken = violation(input, key, now, rules);
  if (broken) throw new ContractError('CONTRACT_VIOLATION', `${input.kind} record breaks ingest rule ${broken}`);
  lastValue = value;
  lastKey = key;
  lastInput = input;
  return input;
}

/**
 * The compacted topics a stage reads as tables (pipeline/topics.ts: push.tokens, push.settings),
 * by topic name as the wiring names them. A tombstone on one of them deletes the key's state.
 */
export interface TableTopics {
  readonly tokens?: string;
  readonly settings?: string;
}

/** A tombstone on a table topic: delete what is kept for `uid` from that topic. */
export interface Tombstone {
  readonly table: keyof TableTopics;
  readonly uid: string;
}

/**
 * A record with a null value: a tombstone when it came from a table topic (`topic`, from the record
 * metadata) with a usable uid key; otherwise a ContractError (the DLQ), as any null value was before.
 * Both tables are keyed by uid, so a tombstone deletes the user's settings, or all of the user's
 * tokens (log compaction drops every earlier report of that key the same way); one device's token
 * is withdrawn with an INVALID report instead.
 */
export function classifyTombstone(topic: string | undefined, key: string | null | undefined, tables: TableTopics): Tombstone {
  const table = topic === undefined ? undefined : topic === tables.settings ? 'settings' : topic === tables.tokens ? 'tokens' : undefined;
  if (!table) throw new ContractError('CONTRACT_VIOLATION', 'breaks ingest rule tombstone: a null value on a topic that is not read as a table');
  const broken = id('key', key, MAX_LENGTH.uid);
  if (broken) throw new ContractError('CONTRACT_VIOLATION', `${table} tombstone breaks ingest rule ${broken}`);
  return { table, uid: key! };
}
