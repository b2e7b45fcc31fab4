/**
 * Which campaigns are cancelled, for the stages after the expansion (the business strategies): a
 * request of a cancelled campaign still on its way (expanded before the cancel, deferred by a rule,
 * waiting in a lane) is dropped instead of submitted. The expansion announces each cancellation on
 * the compacted push.campaign-control topic; pipeline/campaign-control.ts reads it into this port.
 */
export interface CampaignCancellations {
  /** Epoch ms the campaign was cancelled at (the CANCEL's requested_at), or undefined. */
  cancelledAt(campaignId: string): number | undefined;
}

/** True when a request belongs to a campaign that is cancelled: drop it (reason `campaign_cancelled`). */
export function isCancelledCampaignRequest(cancellations: CampaignCancellations, request: { readonly campaign_id: string | null }): boolean {
  return request.campaign_id !== null && cancellations.cancelledAt(request.campaign_id) !== undefined;
}
