/**
 * What the business application emits: a dispatch per device on the business lane
 * (push.dispatch.business, the fan-out's record, tagged with sender, category and campaign), and an
 * outcome for every request that ends before a vendor (stage `business`), tagged the same way so
 * ClickHouse counts business pushes per sender and campaign (docs/entry.md, "Accounting").
 */
import { collapseId, outcomeEventId, senderCollapseId, taskId } from '../model/ids.ts';
import type { BusinessTag, DispatchKind, OutcomeStatus, PushDispatch, PushOutcome } from '../model/records.ts';
import type { BusinessPush } from './transfer.ts';

/** Reasons the business stage puts on outcomes (push-outcome.reason). */
export type BusinessReason =
  | 'duplicate' // the sender's idempotency key was seen within the retention
  | 'expired' // the push's expire_at passed (or would pass before the user's night ends)
  | 'opt_out' // the user turned the category or the sender off
  | 'dnd' // the user's night, for a category whose rule is `drop`
  | 'frequency_cap' // the user got the category's daily cap already
  | 'campaign_cancelled' // the campaign was cancelled (processors/campaigns/cancellations.ts)
  | 'quota' // the business lane's share of every channel's daily quota is used up
  | 'no_token'; // no valid token for the app on the (targeted) device, or on any device

/** The conversation a business push stands in for: task ids and outcomes are per (uid, conv, seq, device). */
export function businessConv(p: BusinessPush): string {
  return `biz:${p.requestId}`;
}

export function businessTag(p: BusinessPush): BusinessTag {
  return { sender: p.sender, category: p.category, campaign_id: p.campaignId, expire_at: p.expireAt };
}

/**
 * One outcome of the business stage about `p` (for `deviceId`, or the user when null). Its event id
 * is of (task, status, `discriminator`), by default the reason: a request ends once, with one
 * reason. Duplicates are the exception: every request repeating an idempotency key ends as one and
 * is counted, so the caller names the request in the discriminator.
 */
export function businessOutcome(
  p: BusinessPush,
  status: OutcomeStatus,
  reason: BusinessReason,
  deviceId: string | null,
  at: number,
  discriminator: string = reason,
): PushOutcome {
  const conv = businessConv(p);
  const task = taskId(p.uid, conv, 0, deviceId ?? '');
  return {
    event_id: outcomeEventId('business', status, task, discriminator),
    task_id: task,
    uid: p.uid,
    device_id: deviceId,
    conv_id: conv,
    seq: 0,
    msg_id: p.requestId,
    app_id: p.appId,
    platform: null,
    vendor: null,
    stage: 'business',
    status,
    reason,
    code: null,
    vendor_message_id: null,
    collapse_id: null,
    attempts: 0,
    persisted_at: p.requestedAt,
    at,
    latency_ms: null,
    token_hash: null,
    business: businessTag(p),
  };
}

/** The dispatch of `p` to one device over its channels (valid tokens in fallback order). */
export function businessDispatch(
  p: BusinessPush,
  deviceId: string,
  platform: string,
  channels: PushDispatch['channels'],
  kind: DispatchKind,
  at: number,
): PushDispatch {
  const conv = businessConv(p);
  return {
    task_id: taskId(p.uid, conv, 0, deviceId),
    uid: p.uid,
    device_id: deviceId,
    conv_id: conv,
    seq: 0,
    msg_id: p.requestId,
    app_id: p.appId,
    platform,
    channels,
    title: p.title,
    body: p.body,
    badge: 0,
    collapse_id: businessCollapseId(p),
    silent: false,
    kind,
    merged_count: 1,
    persisted_at: p.requestedAt,
    decided_at: at,
    business: businessTag(p),
    data: { ...p.data },
  };
}

/**
 * The collapse id of a business push. A sender's collapse key replaces its earlier push with the
 * same key on the device, and a campaign's newer push its older one; both ids are the sender's,
 * without the uid (processors/model/ids.ts `senderCollapseId`), so every push of a campaign carries
 * the same one and the vendors' batch APIs can send them together. A push with neither stands alone.
 */
export function businessCollapseId(p: BusinessPush): string {
  if (p.collapseKey !== null) return senderCollapseId(p.sender, `key:${p.collapseKey}`);
  if (p.campaignId !== null) return senderCollapseId(p.sender, `campaign:${p.campaignId}`);
  return collapseId(p.uid, businessConv(p));
}
