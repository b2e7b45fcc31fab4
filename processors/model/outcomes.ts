/**
 * Outcome records: every suppression, merge and drop a decision stage makes is emitted as one
 * push-outcome record (docs/design.md, "Nothing is lost; every ending is counted"). Ids are
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
export type OutcomeSubject = Pick<PushOutcome, 'uid' | 'conv_id' | 'seq' | 'msg_id' | 'app_id' | 'persisted_at'> &
  Partial<Pick<PushOutcome, 'device_id' | 'platform' | 'vendor' | 'collapse_id'>>;

/**
 * The facts behind a decision, as the `detail` of an outcome or a dispatch: `k=v` pairs joined by
 * `;`, in the order given, empty values left out; null when there is nothing to say. Values are
 * numbers, vendor names, zone names, enum symbols, never user text or tokens. The keys
 * (docs/data.md, "Decision details"):
 * - online-filter: `hb` heartbeat age at the decision, ms; `hold` hold window, ms; `ack` ms from
 *   persist to the ACK (or `before` when it came before the message); `on` the online judgement of
 *   a pushed message (OFFLINE, HALF_OPEN, SUSPECT, BACKGROUND), with `hb` its heartbeat age then
 *   (absent when it never sent one)
 * - merge: `by` the seq whose push carries a merged message; `win` the merge window, ms
 * - policy: `tz` the user's zone, `qh` quiet hours `HH:MM-HH:MM`, `local` the user's local time;
 *   `mention` a mention and `over` what it overrode (mute, dnd); `private` 1 in private mode,
 *   `sensitive` 1 for a sensitive conversation; `deferred` 1 for a push deferred through quiet hours
 *   and released when they ended; `ch` the channel chosen, `why` why (`only` the
 *   device's one token, `maker` the device maker's vendor, `order` the fallback order, `quota` the
 *   earlier ones over quota), `skip` the vendors skipped for quota
 */
export function detailString(facts: Readonly<Record<string, string | number | null | undefined>>): string | null {
  let out = '';
  for (const key in facts) {
    const value = facts[key];
    if (value === null || value === undefined || value === '') continue;
    const text = typeof value === 'number' ? String(value) : value.includes(';') || value.includes('=') ? value.replace(/[;=]/g, '_') : value;
    out += out ? `;${key}=${text}` : `${key}=${text}`;
  }
  return out || null;
}

/** The pairs of a `detail` string (see detailString); empty for null or an empty string. */
export function parseDetail(detail: string | null | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (!detail) return out;
  for (const pair of detail.split(';')) {
    const at = pair.indexOf('=');
    if (at > 0) out[pair.slice(0, at)] = pair.slice(at + 1);
  }
  return out;
}

/** Fields of an outcome's subject that a stage gives anew (see decisionOutcome). */
export type SubjectFields = Partial<Pick<PushOutcome, 'device_id' | 'platform' | 'vendor' | 'collapse_id'>>;

const NO_FIELDS: SubjectFields = {};

/**
 * The outcome of a decision about `subject`. `over` gives some of the subject's fields anew (the
 * device, the channel chosen, the collapse id); they are read ahead of the subject's own rather
 * than copied into a spread of it (common/objects.ts says why).
 */
export function decisionOutcome(
  stage: DecisionStage,
  status: OutcomeStatus,
  reason: DecisionReason,
  subject: OutcomeSubject,
  at: number,
  detail: string | null = null,
  over: SubjectFields = NO_FIELDS,
): PushOutcome {
  const deviceId = over.device_id !== undefined ? over.device_id : (subject.device_id ?? null);
  const task = taskId(subject.uid, subject.conv_id, subject.seq, deviceId ?? '');
  return {
    event_id: outcomeEventId(stage, status, task, reason),
    task_id: task,
    uid: subject.uid,
    device_id: deviceId,
    conv_id: subject.conv_id,
    seq: subject.seq,
    msg_id: subject.msg_id,
    app_id: subject.app_id,
    platform: over.platform ?? subject.platform ?? null,
    vendor: over.vendor ?? subject.vendor ?? null,
    stage,
    status,
    reason,
    code: null,
    vendor_message_id: null,
    collapse_id: over.collapse_id ?? subject.collapse_id ?? null,
    attempts: 0,
    persisted_at: subject.persisted_at,
    at,
    latency_ms: null,
    detail,
  };
}
