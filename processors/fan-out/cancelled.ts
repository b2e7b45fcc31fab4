/**
 * Cancelled campaigns in the business lane's fan-out (docs/entry.md, "DELETE /v1/campaigns/{id}").
 * The lane is rate limited, so thousands of a campaign's dispatches may still wait on
 * push.dispatch.business, in the parked store or at the (vendor, app) gate when the campaign is
 * cancelled. None of them is submitted: the fan-out checks the campaign when it takes a dispatch
 * (fresh or resumed), and the guarded adapter checks again right before the vendor call, after the
 * gate admitted the message (a full lane keeps a message at its gate for seconds). Such a dispatch
 * ends SUPPRESSED `campaign_cancelled`, its task row failed (3) with code CAMPAIGN_CANCELLED.
 */
import type { CampaignCancellations } from '../campaigns/cancellations.ts';
import type { PushDispatch } from '../model/records.ts';
import type { ChannelAnswer } from './ledger.ts';
import type { PushMessage, SubmitOutcome, VendorAdapter } from './vendor-port.ts';

/** The outcome's reason and the task row's fail code of a push its campaign's cancellation stopped. */
export const CAMPAIGN_CANCELLED = { reason: 'campaign_cancelled', code: 'CAMPAIGN_CANCELLED' } as const;

/**
 * The answer the guarded adapter gives, instead of calling the vendor, for a message of a cancelled
 * campaign. Recognised by identity (`isWithdrawn`) before any answer is classified; never a vendor's.
 */
const WITHDRAWN: SubmitOutcome = Object.freeze({ kind: 'permanent', code: CAMPAIGN_CANCELLED.code });

/** True when the message was not sent because its campaign was cancelled (no vendor call was made). */
export function isWithdrawn(outcome: SubmitOutcome): boolean {
  return outcome === WITHDRAWN;
}

/** The final answer of a dispatch of a cancelled campaign, on `vendor` (the channel it was at), after `attempts` calls. */
export function cancelledAnswer(vendor: string, attempts: number): ChannelAnswer {
  const { reason, code } = CAMPAIGN_CANCELLED;
  return { channel: -1, status: 'SUPPRESSED', vendor, reason, code, attempts, discriminator: reason };
}

/** The cancellation checks of one fan-out supplier, shared by its tasks and its submit paths. */
export class CancelledCampaigns {
  /** The campaign of each message handed to a submit path (messages of campaigns only; gone with the message). */
  private readonly campaignOf = new WeakMap<PushMessage, string>();

  constructor(private readonly cancellations: CampaignCancellations) {}

  /** Whether the dispatch belongs to a campaign that is cancelled. */
  isCancelled(d: PushDispatch): boolean {
    const campaign = d.business?.campaign_id;
    return campaign != null && this.cancellations.cancelledAt(campaign) !== undefined;
  }

  /** Remembers the campaign of a message about to be submitted, for the check right before the vendor call. */
  follow(message: PushMessage, d: PushDispatch): void {
    const campaign = d.business?.campaign_id;
    if (campaign != null) this.campaignOf.set(message, campaign);
  }

  /**
   * The adapter, with the last check before each call: messages of cancelled campaigns are
   * answered WITHDRAWN and left out of the call (no call at all when none is left).
   */
  guard(adapter: VendorAdapter): VendorAdapter {
    return {
      vendor: adapter.vendor,
      maxPayloadBytes: adapter.maxPayloadBytes,
      maxBatchSize: adapter.maxBatchSize,
      payloadBytes: (message) => adapter.payloadBytes(message),
      submit: (messages) => this.submitLive(adapter, messages),
      parseReceipt: (body, contentType) => adapter.parseReceipt(body, contentType),
      close: () => adapter.close(),
    };
  }

  private async submitLive(adapter: VendorAdapter, messages: readonly PushMessage[]): Promise<SubmitOutcome[]> {
    const withdrawn = messages.map((m) => this.isCancelledMessage(m));
    if (!withdrawn.includes(true)) return adapter.submit(messages);
    const live = messages.filter((_, i) => !withdrawn[i]);
    const answers = live.length > 0 ? await adapter.submit(live) : [];
    let next = 0;
    // A missing answer stays missing: the batcher answers it as it answers any (MISSING_OUTCOME).
    return withdrawn.map((w) => (w ? WITHDRAWN : answers[next++]!));
  }

  private isCancelledMessage(message: PushMessage): boolean {
    const campaign = this.campaignOf.get(message);
    return campaign !== undefined && this.cancellations.cancelledAt(campaign) !== undefined;
  }
}
