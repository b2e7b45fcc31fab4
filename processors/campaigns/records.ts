/**
 * The business records the entry produces and the campaign expansion reads and writes, as the Avro
 * schemas decode them: push.requests (schemas/push-request.avsc), push.campaigns
 * (schemas/push-campaign.avsc), and push.campaign-control (compacted, key campaign_id, the same
 * schema): the CANCEL records the expansion accepted, with their uid lists emptied, for the stages
 * after it to drop what a cancelled campaign still has on its way (processors/campaigns/cancellations.ts).
 */

export const PUSH_CATEGORIES = ['NOTICE', 'REMINDER', 'CAMPAIGN'] as const;
export type PushCategory = (typeof PUSH_CATEGORIES)[number];
export const PUSH_PRIORITIES = ['HIGH', 'NORMAL', 'LOW'] as const;
export type PushPriority = (typeof PUSH_PRIORITIES)[number];

/** What a push shows and carries: shared by a single request and a campaign. */
export interface PushContent {
  readonly sender: string;
  readonly app_id: string;
  readonly category: PushCategory;
  readonly priority: PushPriority;
  readonly title: string | null;
  readonly body: string | null;
  readonly template_id: string | null;
  readonly template_params: Readonly<Record<string, string>>;
  readonly data: Readonly<Record<string, string>>;
  readonly collapse_key: string | null;
  readonly expire_at: number | null;
}

/** push.requests: one business push to one user. Key: uid. */
export interface PushRequestRecord extends PushContent {
  readonly uid: string;
  readonly idempotency_key: string;
  readonly device_id: string | null;
  readonly campaign_id: string | null;
  readonly requested_at: number;
}

export type CampaignAction = 'CREATE' | 'CANCEL';

/** push.campaigns: a bulk push (CREATE) or the cancellation of one (CANCEL). Key: campaign_id. */
export interface PushCampaignRecord extends PushContent {
  readonly campaign_id: string;
  readonly action: CampaignAction;
  readonly uids: readonly string[];
  readonly uid_file: string | null;
  readonly requested_at: number;
}

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
