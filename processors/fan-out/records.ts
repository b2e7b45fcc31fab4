import type { PushMessage } from './vendor-port.ts';
import { outcomeEventId } from '../model/ids.ts';
import { tokenHash } from '../model/ids.ts';
import { pushRecipientParam } from '../model/receipt-route.ts';
import type { OutcomeStatus, PushDispatch, PushOutcome, TokenReport } from '../model/records.ts';
import { TASK_STATUS, type ChannelAnswer, type StoredTask, type TaskRow } from './ledger.ts';
import type { FanOutOptions } from './options.ts';
import type { DispatchProgress } from './parked.ts';
import type { Output } from './release-queue.ts';

/** Reasons the fan-out puts on outcomes (push-outcome.reason). */
export type FanOutReason =
  | 'rate_limited' // the vendor throttled (429, flow control); retried later or moved to another channel
  | 'quota' // the vendor's daily quota is used up; never retried
  | 'dead_token'
  | 'payload_too_large'
  | 'payload_rejected' // the vendor refused a field of the payload; never counts against the token
  | 'unknown_code' // a vendor code missing from its code table (the code is in `code`); never counts against the token
  | 'auth_failed' // the vendor credential still failed after one refresh
  | 'permanent' // the vendor refused the request for good
  | 'campaign_cancelled' // the push's campaign was cancelled before it was submitted (SUPPRESSED; cancelled.ts)
  | 'retries_exhausted' // 5xx / network answers beyond the retry budget
  | 'vendor_unreachable' // the last attempts never reached the vendor (APNs streams refused on GOAWAY): not a submission
  | 'max_age_exceeded' // retryable answers (5xx, timeouts, lost answers) until the push was older than PUSH_FANOUT_RETRY_MAX_AGE_MS
  | 'parked_evicted' // parked waiting out retryable answers when the task's parked store was full (PUSH_FANOUT_MAX_PARKED): the oldest parked push ends
  | 'read' // the conversation was read while the push waited to be retried (SUPPRESSED)
  | 'no_adapter' // the app has no such vendor configured
  | 'app_removed' // the app is no longer in the apps file (DROPPED; its tokens are kept)
  | 'no_token' // the dispatch carried no channel
  | 'duplicate' // already submitted (or final) in im_push_task
  | 'expired'; // a business push past its expire_at before it was submitted (DROPPED; docs/entry.md)

export interface FanOutAnswer {
  readonly status: OutcomeStatus;
  readonly vendor: string | null;
  readonly reason: FanOutReason | null;
  readonly code: string | null;
  readonly vendorMessageId?: string | null;
  readonly attempts: number;
  /**
   * Separates several outcomes of one task (vendor and call number). Outcomes about one channel
   * start with its index in the dispatch's channels (`<index>:<vendor>:...`).
   */
  readonly discriminator: string;
  /** The device token the call used, when the caller knows it (else derived from the dispatch). */
  readonly token?: string;
}

/**
 * The token an answer is about: the one given, else the channel named by the discriminator's
 * index, else the dispatch's only channel of that vendor. Undefined when it cannot be told.
 */
export function tokenOfAnswer(d: PushDispatch, a: FanOutAnswer): string | undefined {
  if (a.token !== undefined) return a.token;
  if (a.vendor === null) return undefined;
  const index = /^(\d+):/.exec(a.discriminator)?.[1];
  const named = index === undefined ? undefined : d.channels[Number(index)];
  if (named) return named.vendor === a.vendor ? named.token : undefined;
  const same = d.channels.filter((c) => c.vendor === a.vendor);
  return same.length === 1 ? same[0]!.token : undefined;
}

export function taskRowOf(d: PushDispatch): TaskRow {
  return {
    taskId: d.task_id,
    uid: d.uid,
    convId: d.conv_id,
    seq: d.seq,
    deviceId: d.device_id,
    msgId: d.msg_id,
    appId: d.app_id,
    platform: d.platform,
    collapseId: d.collapse_id,
    unreadCnt: d.badge,
    title: d.title,
    body: d.body,
    firstVendor: d.channels[0]?.vendor ?? '',
    kind: d.kind,
  };
}

/** One push-outcome record of the fan-out; the event id is deterministic so replays dedupe. */
export function fanOutOutcome(d: PushDispatch, a: FanOutAnswer, at: number): PushOutcome {
  const token = tokenOfAnswer(d, a);
  return {
    event_id: outcomeEventId('fan-out', a.status, d.task_id, a.discriminator),
    task_id: d.task_id,
    uid: d.uid,
    device_id: d.device_id,
    conv_id: d.conv_id,
    seq: d.seq,
    msg_id: d.msg_id,
    app_id: d.app_id,
    platform: d.platform,
    vendor: a.vendor,
    stage: 'fan-out',
    status: a.status,
    reason: a.reason,
    code: a.code,
    vendor_message_id: a.vendorMessageId ?? null,
    collapse_id: d.collapse_id,
    attempts: a.attempts,
    persisted_at: d.persisted_at,
    at,
    latency_ms: a.status === 'ACCEPTED' ? Math.max(0, at - d.persisted_at) : null,
    token_hash: token === undefined ? null : tokenHash(token),
    // The policy's why (channel chosen, online judgement), so the trace reads it from this outcome.
    detail: d.detail ?? null,
    ...(d.business ? { business: d.business } : {}),
    ...(a.status === 'ACCEPTED' && pushRecipientParam(d) !== undefined ? { receipts_by_uid: true } : {}),
  };
}

/** The outcome record of an answer (a channel's reason is one of FanOutReason), as a dispatch's output to `child`. */
export function outcomeOutput(p: DispatchProgress, a: FanOutAnswer | ChannelAnswer, at: number, child: string): Output {
  return { child, record: { key: p.key, value: fanOutOutcome(p.dispatch, a as FanOutAnswer, at), timestamp: p.timestamp } };
}

/** The token invalidation fed back to push.tokens when a vendor says the token is dead, as a dispatch's output to `child`. */
export function deadTokenOutput(p: DispatchProgress, vendor: string, token: string, at: number, child: string): Output {
  const d = p.dispatch;
  const report: TokenReport = {
    uid: d.uid,
    device_id: d.device_id,
    platform: d.platform,
    vendor,
    app_id: d.app_id,
    token,
    reported_at: at,
    state: 'INVALID',
    source: 'FAN_OUT',
    reason: 'dead_token',
    manufacturer: null,
  };
  return { child, record: { key: p.key, value: report, timestamp: p.timestamp } };
}

/** Answers a task row recorded, as outputs again: their outcomes, with the same event ids, and the invalidation of each dead token. */
export function recordedOutputs(p: DispatchProgress, answers: readonly ChannelAnswer[], at: number, children: FanOutOptions['outputs']): Output[] {
  const outputs: Output[] = [];
  for (const a of answers) {
    outputs.push(outcomeOutput(p, a, at, children.outcomes));
    const token = p.dispatch.channels[a.channel]?.token;
    if (a.status === 'DEAD_TOKEN' && token !== undefined) outputs.push(deadTokenOutput(p, a.vendor, token, at, children.tokens));
  }
  return outputs;
}

/** The ACCEPTED answer of a task, one per task: a replay re-emits it with the same event id. */
export function acceptedAnswer(vendor: string, vendorMessageId: string | null, attempts: number): FanOutAnswer {
  return { status: 'ACCEPTED', vendor, reason: null, code: null, vendorMessageId, attempts, discriminator: 'accepted' };
}

/**
 * The outcome of a dispatch whose task is no longer pending (a replay after a crash or rebalance,
 * or a duplicate record): nothing is submitted; the stored verdict is emitted again so that an
 * outcome lost with an aborted transaction is not lost for good. ACCEPTED keeps its event id.
 */
export function replayedAnswer(stored: StoredTask): FanOutAnswer {
  const vendor = stored.vendor;
  if ((stored.status === TASK_STATUS.submitted || stored.status === TASK_STATUS.delivered) && vendor) {
    return acceptedAnswer(vendor, stored.vendorMessageId, stored.attempts);
  }
  if (stored.status === TASK_STATUS.failed && vendor) {
    return { status: 'FAILED', vendor, reason: 'duplicate', code: stored.failCode, attempts: stored.attempts, discriminator: 'final' };
  }
  return {
    status: 'SKIPPED_DUPLICATE',
    vendor: null,
    reason: 'duplicate',
    code: String(stored.status),
    attempts: 0,
    discriminator: `duplicate:${stored.status}`,
  };
}

/**
 * The vendor-neutral notification of one dispatch on one channel. Its data is the business
 * request's own (`d.data`) with the push's keys over it (conv_id, seq and msg_id, or a campaign's
 * sender, category and campaign_id), so a sender's key never replaces one the client relies on. A campaign's pushes (business
 * pushes with a campaign id) carry nothing of their recipient but the token: their collapse id is
 * the sender's (processors/business/dispatch.ts `businessCollapseId`), their data names the
 * campaign only beside the campaign's own data, and their TTL is the same for every push built in the same 10 s step
 * (`campaignTtl`). So the vendor payloads of a campaign's pushes that meet in one submit call are
 * identical apart from the token, and HMS, Xiaomi, vivo and OPPO send them as one multi-token
 * request (sinks/vendors/batching.ts `groupByPayload`).
 */
export function pushMessage(
  d: PushDispatch,
  token: string,
  classification: Readonly<Record<string, string>> | undefined,
  ttlSeconds: number,
  now = Date.now(),
): PushMessage {
  const campaign = d.business?.campaign_id ?? null;
  const expireAt = d.business?.expire_at ?? null;
  const recipient = pushRecipientParam(d);
  return {
    taskId: d.task_id,
    appId: d.app_id,
    token,
    title: d.title,
    body: d.body,
    badge: d.badge,
    collapseId: d.collapse_id,
    silent: d.silent,
    data: withSenderData(
      d.data,
      campaign === null ? { conv_id: d.conv_id, seq: String(d.seq), msg_id: d.msg_id } : campaignData(d.business!.sender, d.business!.category, campaign),
    ),
    ttlSeconds: expireAt === null ? ttlSeconds : campaign === null ? expiringTtl(expireAt, ttlSeconds, now) : campaignTtl(expireAt, ttlSeconds, now),
    ...(classification && Object.keys(classification).length > 0 ? { classification } : {}),
    ...(recipient === undefined ? {} : { recipient }),
  };
}

/** The push's own data keys over the sender's data; the own keys alone (no copy) when the sender gave none, as on every IM push. */
function withSenderData(sender: Readonly<Record<string, string>> | undefined, own: Record<string, string>): Record<string, string> {
  for (const _ in sender) return { ...sender, ...own };
  return own;
}

/** The custom data of a campaign's push: the campaign, never its recipient (no uid, request or task id). */
function campaignData(sender: string, category: string, campaignId: string): Record<string, string> {
  return { sender, category, campaign_id: campaignId };
}

/** The vendor time to live of a business push with an expiry: never past it (at least 1 s; an expired push is not submitted at all). */
function expiringTtl(expireAt: number, ttlSeconds: number, now: number): number {
  return Math.max(1, Math.min(ttlSeconds, Math.floor((expireAt - now) / 1000)));
}

/** Campaign TTLs are computed from a send time rounded up to this step, so pushes built within one step share their TTL. */
export const CAMPAIGN_TTL_STEP_MS = 10_000;

/**
 * The vendor time to live of a campaign's push with an expiry: as `expiringTtl`, counted from the
 * end of the current 10 s step instead of now. Every push of the campaign built in that step gets
 * the same TTL (a submit call that straddles a step's end becomes two requests, no more), and the
 * TTL is up to 10 s shorter than the time left, never longer: no push is shown after its expiry.
 */
export function campaignTtl(expireAt: number, ttlSeconds: number, now: number): number {
  const stepEnd = Math.ceil(now / CAMPAIGN_TTL_STEP_MS) * CAMPAIGN_TTL_STEP_MS;
  return expiringTtl(expireAt, ttlSeconds, stepEnd);
}

/** Whether a business push is past its expiry at `now` (it ends DROPPED `expired`, unsubmitted). */
export function isExpired(d: PushDispatch, now: number): boolean {
  return d.business?.expire_at != null && d.business.expire_at <= now;
}
