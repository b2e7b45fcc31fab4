/**
 * Outcome records: every suppression, merge and drop a decision stage makes is emitted as one
 * push-outcome record (invariant 6: nothing is lost, every outcome is counted). Ids are
 * deterministic, so a replay emits identical records and ClickHouse dedupes them.
 */
import { outcomeEventId, taskId } from './ids.ts';
import type { OutcomeStatus, PushOutcome } from './records.ts';

/** The decision stages' names as they appear in `push-outcome.stage`. */
export type DecisionStage = 'online-filter' | 'merge' | 'policy';

/** Reasons the decision stages emit (push-outcome.reason). */
export type DecisionReason =
  | 'online_ack' // the online device ACKed the message within the hold window
  | 'read' // the conversation was read before the push went out
  | 'background_cooldown' // a push reached this background/exited device less than 10 s ago
  | 'no_token' // no valid token for the app on the device (or on any device of the user)
  | 'merged' // merged into a push of the same (uid, conv_id) window
  | 'dnd' // the user's quiet hours
  | 'mute' // the conversation is muted
  | 'quota'; // every channel of the device is over its daily quota

/** What an outcome is about: one message (or merged notification) for one device, or for the user when device is null. */
export type OutcomeSubject = Pick<PushOutcome, 'uid' | 'device_id' | 'conv_id' | 'seq' | 'msg_id' | 'app_id' | 'persisted_at'> &
  Partial<Pick<PushOutcome, 'platform' | 'vendor' | 'collapse_id'>>;

export function decisionOutcome(stage: DecisionStage, status: OutcomeStatus, reason: DecisionReason, subject: OutcomeSubject, at: number): PushOutcome {
  const task = taskId(subject.uid, subject.conv_id, subject.seq, subject.device_id ?? '');
  return {
    event_id: outcomeEventId(stage, status, task, reason),
    task_id: task,
    uid: subject.uid,
    device_id: subject.device_id,
    conv_id: subject.conv_id,
    seq: subject.seq,
    msg_id: subject.msg_id,
    app_id: subject.app_id,
    platform: subject.platform ?? null,
    vendor: subject.vendor ?? null,
    stage,
    status,
    reason,
    code: null,
    vendor_message_id: null,
    collapse_id: subject.collapse_id ?? null,
    attempts: 0,
    persisted_at: subject.persisted_at,
    at,
    latency_ms: null,
  };
}
