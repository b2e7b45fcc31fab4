import type { PushCampaignRecord, PushCategory, PushContent, PushPriority } from '../model/records.ts';

/**
 * The business records the entry produces and the campaign expansion reads and writes, as the Avro
 * schemas decode them: push.requests (schemas/push-request.avsc), push.campaigns
 * (schemas/push-campaign.avsc), and push.campaign-control (compacted, key campaign_id, the same
 * schema): the CANCEL records the expansion accepted, with their uid lists emptied, for the stages
 * after it to drop what a cancelled campaign still has on its way (processors/campaigns/cancellations.ts).
 */

export type { CampaignAction, PushCampaignRecord, PushCategory, PushContent, PushPriority, PushRequestRecord } from '../model/records.ts';

/** The symbols of the category and priority enums (schemas/push-request.avsc). */
export const CATEGORY_SYMBOLS: readonly PushCategory[] = ['NOTICE', 'REMINDER', 'CAMPAIGN'];
export const PRIORITY_SYMBOLS: readonly PushPriority[] = ['HIGH', 'NORMAL', 'LOW'];

/** Longest campaign id (push_campaign.campaign_id, migrations/mysql/009_push_campaign.sql). */
export const MAX_CAMPAIGN_ID = 64;

/** The idempotency key of a campaign's request for one user (schemas/push-request.avsc). */
export function campaignRequestKey(campaignId: string, uid: string): string {
  return `${campaignId}:${uid}`;
}

/** The push.campaigns record that cancels `campaignId` of `sender`, as of `at` (epoch ms). */
export function cancelRecord(campaignId: string, sender: string, at: number): PushCampaignRecord {
  return {
    campaign_id: campaignId,
    action: 'CANCEL',
    sender,
    app_id: '',
    category: 'CAMPAIGN',
    priority: 'LOW',
    title: null,
    body: null,
    template_id: null,
    template_params: {},
    data: {},
    collapse_key: null,
    expire_at: null,
    uids: [],
    uid_file: null,
    requested_at: at,
  };
}

/** What every request of the campaign carries. */
export function contentOf(c: PushCampaignRecord): PushContent {
  const { sender, app_id, category, priority, title, body, template_id, template_params, data, collapse_key, expire_at } = c;
  return { sender, app_id, category, priority, title, body, template_id, template_params, data, collapse_key, expire_at };
}
