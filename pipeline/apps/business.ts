/**
 * The business application (docs/entry.md): business pushes on a lane of their own.
 *
 *   push.requests ─┐
 *   push.tokens ───┼─► business (transfer ─► strategies) ─► push.dispatch.business ─► fan-out-business (its own group)
 *   push.settings ─┘                                    └─► push.outcomes
 *
 * Its own consumer group, stores and topics: a campaign's million requests queue here and on
 * push.dispatch.business, never in front of an IM message on im.message.persisted or push.dispatch.
 * push.tokens and push.settings are read as tables through ingest nodes (processors/model/inputs.ts:
 * checked once, a tombstone deletes the user's tokens or settings); requests are tagged for the stage,
 * which checks them itself.
 */
import { TopologyBuilder, type Topology } from '../../topology/builder.ts';
import { business } from '../../processors/business/business.ts';
import { ingest, tagged } from '../../processors/model/inputs.ts';
import type { PushRequestRecord } from '../../processors/campaigns/records.ts';
import type { BusinessOptions } from '../../processors/business/options.ts';
import type { VendorDirectory } from '../../processors/fan-out/options.ts';
import type { VendorLimits } from '../../processors/fan-out/vendor-port.ts';
import { VENDOR_CHANNELS } from '../../sinks/vendors/channels.ts';
import type { TopicKey } from '../topics.ts';
import { startCampaignCancellations } from '../campaign-control.ts';
import { leadingUid, storedJson, uidKey } from '../repartition/store-keys.ts';
import { businessOptionsFromEnv } from './business-config.ts';
import type { StageDefinition } from './stage.ts';
import { topicIo, type WiringOptions } from './wiring.ts';

export interface BusinessTopologyOptions extends WiringOptions {
  readonly business?: Omit<BusinessOptions, 'outputs'>;
}

export const BUSINESS_TOPICS = {
  reads: ['requests', 'tokens', 'settings'],
  writes: ['dispatchBusiness', 'outcomes'],
} as const satisfies { reads: readonly TopicKey[]; writes: readonly TopicKey[] };

/** Stable node names (they appear in `describe()`). */
export const BUSINESS_NODES = {
  requests: 'requests-source',
  tokens: 'tokens-source',
  settings: 'settings-source',
  requestsIn: 'requests-in',
  tokensIngest: 'tokens-ingest',
  settingsIngest: 'settings-ingest',
  processor: 'business',
  dispatch: 'business-dispatch-sink',
  outcomes: 'outcomes-sink',
} as const;

export function buildBusinessTopology(o: BusinessTopologyOptions): Topology {
  const { source, sink } = topicIo(o);
  const n = BUSINESS_NODES;
  return (
    new TopologyBuilder()
      .addSource(n.requests, source('requests'))
      .addSource(n.tokens, source('tokens'))
      .addSource(n.settings, source('settings'))
      // Requests are checked by the stage itself (processors/business/transfer.ts, with its templates).
      .addProcessor(n.requestsIn, tagged<'request', PushRequestRecord>('request'), n.requests)
      .addProcessor(n.tokensIngest, ingest('token', o.business?.ingest), n.tokens)
      .addProcessor(n.settingsIngest, ingest('settings', o.business?.ingest), n.settings)
      .addProcessor(
        n.processor,
        business(VENDOR_CHANNELS, { ...o.business, outputs: { dispatch: n.dispatch, outcomes: n.outcomes } }),
        n.requestsIn,
        n.tokensIngest,
        n.settingsIngest,
      )
      .addSink(n.dispatch, sink('dispatchBusiness'), n.processor)
      .addSink(n.outcomes, sink('outcomes'), n.processor)
      .build()
  );
}

/** The business application: on the business lane's commit interval; its fan-out is `fan-out-business` (fan-out.ts). */
export const businessStage: StageDefinition<'business'> = {
  name: 'business',
  commitLane: 'business',
  stores: {
    'business-tokens': uidKey,
    'business-settings': uidKey,
    // compositeKey(uid, sender, idempotency key)
    'business-idempotency': leadingUid,
    // compositeKey(uid, category)
    'business-frequency': leadingUid,
    // sender → the next free slot of its rate (rate / N per partition)
    'business-sender-rate': { kind: 'per-partition', combine: 'max' },
    // request id → the kept request, which names its user
    'business-deferred': { kind: 'owner', owner: (_key, value) => String((storedJson(value).push as { uid: unknown }).uid) },
    'business-deferred-timers': { kind: 'companion', store: 'business-deferred' },
    'business-quota-ledger': { kind: 'per-partition', combine: 'shareOfSum' },
  },
  inspect: (wiring) => buildBusinessTopology(wiring),
  build(ctx, wiring) {
    // Cancelled campaigns (push.campaign-control, read whole): their kept and later requests end SUPPRESSED campaign_cancelled.
    const control = startCampaignCancellations({ endpoints: ctx.endpoints, registry: ctx.registry, topicPrefix: ctx.topicPrefix, logger: ctx.logger });
    const business = { ...businessOptionsFromEnv(ctx.env), cancelled: (id: string) => control.cancellations.cancelledAt(id) !== undefined };
    return { close: () => control.close(), topology: buildBusinessTopology({ ...wiring, business }) };
  },
};

/**
 * The vendors as the business lane's fan-out sees them: the same adapters, with `percent` of each
 * (vendor, app)'s rate and concurrency (at least 1 each). Its gates are its own (one set per fan-out
 * supplier), so business submissions never take a slot or a rate token from IM's gates.
 */
export function businessLaneVendors(
  vendors: VendorDirectory,
  percent: number,
  fallback: VendorLimits,
): { vendors: VendorDirectory; defaultLimits: VendorLimits } {
  const scale = (l: VendorLimits): VendorLimits => ({
    ...l,
    ratePerSecond: Math.max(1, Math.floor((l.ratePerSecond * percent) / 100)),
    concurrency: Math.max(1, Math.floor((l.concurrency * percent) / 100)),
  });
  return {
    vendors: {
      adapter: (vendor, appId) => vendors.adapter(vendor, appId),
      limits: (vendor, appId) => ((l) => l && scale(l))(vendors.limits(vendor, appId)),
      hasApp: (appId) => vendors.hasApp?.(appId) ?? true,
    },
    defaultLimits: scale(fallback),
  };
}
