/**
 * A stage with several sources (co-partitioned topics) tells their records apart by shape, so it
 * never needs topic names. A value of no known shape breaks the topic contract: ContractError, which
 * the runtime routes to the DLQ.
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

export function classifyInput(value: unknown): DecisionInput {
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
