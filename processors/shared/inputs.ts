/**
 * A stage with several sources (co-partitioned topics) tells their records apart by shape, so it
 * never needs topic names. A value of no known shape, or one that decodes but breaks the topic's
 * contract (empty ids, a negative seq, a uid that is not the record key, ...), is a ContractError,
 * which the runtime routes to the DLQ with the reason instead of letting it become a push decision.
 */
import { ContractError } from '../../common/errors.ts';
import type { MessagePersisted, PresenceEvent, PushCandidate, PushMerged, TokenReport, UserSettings } from './records.ts';

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
  throw new ContractError('UNEXPECTED_RECORD', 'record matches none of the stage input schemas');
}

const VENDORS = new Set(['apns', 'fcm', 'hms', 'xiaomi', 'oppo', 'vivo']);

/** The first contract rule the input breaks, or undefined. */
function violation(input: DecisionInput, key: string | null | undefined): string | undefined {
  const v = input.value;
  if (!v.uid) return 'uid is empty';
  if (key !== undefined && key !== null && key !== v.uid) return 'uid differs from the record key (topics are keyed by recipient uid)';
  switch (input.kind) {
    case 'message': {
      const m = input.value;
      if (!m.msg_id || !m.conv_id || !m.app_id) return 'msg_id, conv_id and app_id must not be empty';
      if (!Number.isSafeInteger(m.seq) || m.seq < 0) return `seq must be a non-negative integer, got ${m.seq}`;
      if (m.unread_cnt < 0) return `unread_cnt must not be negative, got ${m.unread_cnt}`;
      if (!(m.persisted_at > 0)) return 'persisted_at must be a positive epoch ms';
      return undefined;
    }
    case 'presence': {
      const p = input.value;
      if (!p.device_id) return 'device_id is empty';
      if ((p.kind === 'ACK' || p.kind === 'READ') && (!p.conv_id || p.seq === null || p.seq < 0)) return `${p.kind} needs conv_id and a non-negative seq`;
      return undefined;
    }
    case 'token': {
      const t = input.value;
      if (!t.device_id || !t.app_id) return 'device_id and app_id must not be empty';
      if (!VENDORS.has(t.vendor)) return `unknown vendor ${JSON.stringify(t.vendor)}`;
      if (t.state === 'VALID' && !t.token) return 'a VALID token report needs a token';
      return undefined;
    }
    case 'settings': {
      const q = input.value.quiet_hours;
      if (q && !(q.start_minute >= 0 && q.start_minute < 1440 && q.end_minute >= 0 && q.end_minute < 1440)) return 'quiet hours minutes must be within 0..1439';
      return undefined;
    }
    default:
      return input.value.conv_id ? undefined : 'conv_id is empty';
  }
}

/** Tells the record's kind by shape and checks its contract; `key` is the record key (the uid). */
export function classifyInput(value: unknown, key?: string | null): DecisionInput {
  const input = shapeOf(value);
  const broken = violation(input, key);
  if (broken) throw new ContractError('CONTRACT_VIOLATION', `${input.kind} record: ${broken}`);
  return input;
}
