/**
 * The pipeline's topics. Every topic is keyed by the recipient uid, so all stages are
 * co-partitioned and per-user state is local to one task. Value schemas are `schemas/<file>.avsc`,
 * registered under the subject `<topic>-value` (topic-name strategy).
 */
import { DLQ_MAX_MESSAGE_BYTES } from '../topology/topic-rules.ts';

export interface TopicSpec {
  readonly name: string;
  /** The .avsc file in schemas/ for the value. */
  readonly valueSchema: string;
  /** Owned by another system (we only read it). */
  readonly external?: boolean;
  readonly configs?: Readonly<Record<string, string>>;
}

export const TOPICS = {
  persisted: { name: 'im.message.persisted', valueSchema: 'message-persisted.avsc', external: true },
  presence: { name: 'im.presence', valueSchema: 'presence-event.avsc', external: true },
  tokens: { name: 'push.tokens', valueSchema: 'token-report.avsc', configs: { 'cleanup.policy': 'compact' } },
  settings: { name: 'push.settings', valueSchema: 'user-settings.avsc', configs: { 'cleanup.policy': 'compact' } },
  candidates: { name: 'push.candidates', valueSchema: 'push-candidate.avsc' },
  merged: { name: 'push.merged', valueSchema: 'push-merged.avsc' },
  dispatch: { name: 'push.dispatch', valueSchema: 'push-dispatch.avsc' },
  // Business pushes (docs/entry.md): requests from senders and the campaign expansion, the
  // campaigns themselves (keyed by campaign_id, not uid), and the business lane's own dispatch topic,
  // read by a fan-out of its own consumer group so IM dispatches never queue behind them.
  requests: { name: 'push.requests', valueSchema: 'push-request.avsc' },
  campaigns: { name: 'push.campaigns', valueSchema: 'push-campaign.avsc' },
  // The CANCELs the campaign expansion accepted (uid lists emptied), compacted by campaign_id: read
  // whole by the stages after the expansion to drop requests of cancelled campaigns (pipeline/campaign-control.ts).
  campaignControl: { name: 'push.campaign-control', valueSchema: 'push-campaign.avsc', configs: { 'cleanup.policy': 'compact' } },
  dispatchBusiness: { name: 'push.dispatch.business', valueSchema: 'push-dispatch.avsc' },
  outcomes: { name: 'push.outcomes', valueSchema: 'push-outcome.avsc' },
  receiptsRaw: { name: 'push.receipts.raw', valueSchema: 'receipt-raw.avsc' },
  receipts: { name: 'push.receipts', valueSchema: 'push-receipt.avsc' },
  // Takes larger records than the other topics: a DLQ record can be a near-limit input plus reason headers.
  dlq: { name: 'push.dlq', valueSchema: 'dlq-envelope.avsc', configs: { 'max.message.bytes': String(DLQ_MAX_MESSAGE_BYTES) } },
} as const satisfies Record<string, TopicSpec>;

export type TopicKey = keyof typeof TOPICS;

/** Topic names may carry a prefix (PUSH_TOPIC_PREFIX) so tests and tenants get their own set. */
export function topicName(key: TopicKey, prefix = ''): string {
  return prefix + TOPICS[key].name;
}
