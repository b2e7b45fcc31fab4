/**
 * The pipeline's applications: one per stage, each its own consumer group (`<applicationId>-<app>`),
 * so ops can run, scale and watch them separately, and an outage of one sink (ClickHouse) stalls
 * only its own group. Every application reads uid-keyed, co-partitioned topics; `pushctl run
 * --stages` picks which of them a worker runs.
 *
 *   decisions   im.message.persisted, im.presence, push.tokens, push.settings ─► push.dispatch, push.outcomes
 *   fan-out     push.dispatch ─► vendors ─► push.outcomes, push.tokens (dead tokens)
 *   receipts    push.receipts.raw, push.outcomes, push.tokens, push.receipts ─► push.receipts, push.tokens
 *   clickhouse  push.outcomes, push.receipts ─► ClickHouse
 *   campaigns   push.campaigns (key campaign_id) ─► push.requests, push.campaign-control
 *   business    push.requests, push.tokens, push.settings ─► push.dispatch.business, push.outcomes (docs/entry.md)
 *   fan-out-business  push.dispatch.business ─► vendors (its own gates: PUSH_BUSINESS_VENDOR_RATE_PERCENT) ─► push.outcomes, push.tokens
 *
 * Each stage is one definition (`StageDefinition`, stage.ts) in its file of this folder, beside its
 * wiring: a topology built from the same `WiringOptions` (value serdes, topic prefix) plus its own
 * options, with a describe() snapshot test in test/pipeline/apps/.
 */
import { STAGE_NAMES } from '../../common/config-keys.ts';
import { registryValueSerdes } from '../serdes.ts';
import { meteredSerdes } from './metering.ts';
import { decisionsStage } from './decisions.ts';
import { fanOutBusinessStage, fanOutStage } from './fan-out.ts';
import { receiptsStage } from './receipts.ts';
import { clickhouseStage } from './clickhouse.ts';
import { campaignsStage } from './campaigns.ts';
import { businessStage } from './business.ts';
import { changeloggedStores, type Stage, type StageContext, type StageDefinition, type StageName } from './stage.ts';

export type { Stage, StageContext, StageDefinition, StageName } from './stage.ts';

/** The stages: the one list is common/config-keys.ts' (PUSH_STAGES is declared there); `STAGE_DEFINITIONS` has a definition for each. */
export const STAGES = STAGE_NAMES;

/** Every stage's definition by its name: a name of `STAGES` without one fails typecheck. */
export const STAGE_DEFINITIONS: { readonly [S in StageName]: StageDefinition<S> } = {
  decisions: decisionsStage,
  'fan-out': fanOutStage,
  receipts: receiptsStage,
  clickhouse: clickhouseStage,
  campaigns: campaignsStage,
  business: businessStage,
  'fan-out-business': fanOutBusinessStage,
};

/**
 * Builds the stage `name` from the worker's resources. Refuses a topology with a changelogged store
 * its definition does not place: `pushctl repartition` would leave that store's state behind.
 */
export function buildStage(name: StageName, ctx: StageContext): Stage {
  const definition: StageDefinition = STAGE_DEFINITIONS[name];
  const wiring = { valueSerdes: meteredSerdes(registryValueSerdes(ctx.registry, ctx.topicPrefix), ctx.metrics), topicPrefix: ctx.topicPrefix };
  const { topology, close } = definition.build(ctx, wiring);
  const unplaced = changeloggedStores(topology).filter((store) => !Object.hasOwn(definition.stores, store));
  if (unplaced.length > 0) {
    void close().catch(() => undefined);
    throw new Error(`stage ${name}: changelogged stores without a repartition placement in its definition: ${unplaced.join(', ')}`);
  }
  const { commitLane, commitWhenCaughtUp, atLeastOnce } = definition;
  return {
    name,
    commitLane,
    ...(commitWhenCaughtUp ? { commitWhenCaughtUp } : {}),
    ...(atLeastOnce ? { atLeastOnce } : {}),
    internalTopics: definition.internalTopics?.(ctx.topicPrefix) ?? [],
    topology,
    close,
  };
}
