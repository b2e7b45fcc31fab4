/**
 * The pipeline's applications, wired in one place: one per stage group, each its own consumer
 * group (`<applicationId>-<app>`), so ops can run, scale and watch them separately, and an outage
 * of one sink (ClickHouse) stalls only its own group. Every application reads uid-keyed,
 * co-partitioned topics; `pushctl run --stages` picks which of them a worker runs.
 *
 *   decisions   im.message.persisted, im.presence, push.tokens, push.settings ─► push.dispatch, push.outcomes
 *   fan-out     push.dispatch ─► vendors ─► push.outcomes, push.tokens (dead tokens)
 *   receipts    push.receipts.raw, push.outcomes, push.tokens, push.receipts ─► push.receipts, push.tokens
 *   clickhouse  push.outcomes, push.receipts ─► ClickHouse
 *   campaigns   push.campaigns (key campaign_id) ─► push.requests, push.campaign-control
 *   business    push.requests, push.tokens, push.settings ─► push.dispatch.business, push.outcomes (docs/entry.md)
 *   fan-out-business  push.dispatch.business ─► vendors (its own gates: PUSH_BUSINESS_VENDOR_RATE_PERCENT) ─► push.outcomes, push.tokens
 *
 * Each application's wiring (this folder, one file each) takes the same `WiringOptions` (value
 * serdes, topic prefix) plus its own options, and has a describe() snapshot test in test/pipeline/.
 */
import type { Pool } from 'mysql2/promise';
import type { SchemaRegistry } from '@kafkajs/confluent-schema-registry';
import type { Logger } from '../../common/log.ts';
import type { Endpoints } from '../../common/endpoints.ts';
import type { Env } from '../../common/config.ts';
import type { Topology } from '../../topology/builder.ts';
import { fanOutOptionsFromEnv, type FanOutListener, type FanOutOptions } from '../../processors/fan-out/options.ts';
import { ingestOptionsFromEnv } from '../../processors/model/ingest.ts';
import { PushEventWriter } from '../../sinks/clickhouse/writer.ts';
import { connectionFromEndpoints } from '../../sinks/clickhouse/client.ts';
import { MysqlPushTaskLedger } from '../../sinks/mysql/tasks.ts';
import { MysqlTaskStatusWriter } from '../../sinks/mysql/task-status.ts';
import { MysqlTokenWriter } from '../../sinks/mysql/tokens.ts';
import type { ShardedPools } from '../../sinks/mysql/shards.ts';
import type { VendorRegistry } from '../../sinks/vendors/registry.ts';
import type { PipelineMetrics } from '../../sinks/metrics/pipeline-metrics.ts';
import { receiptParsersFromRegistry } from '../../receipts/parsers.ts';
import { registryValueSerdes } from '../serdes.ts';
import { buildDecisionsTopology, decisionsOptionsFromEnv } from './decisions.ts';
import { buildFanOutTopology } from './fan-out.ts';
import { buildBusinessTopology, businessLaneVendors } from './business.ts';
import { businessOptionsFromEnv } from './business-config.ts';
import { startCampaignCancellations } from '../campaign-control.ts';
import { readKey } from '../../common/config.ts';
import { CONFIG_KEYS, STAGE_NAMES } from '../../common/config-keys.ts';
import { BUSINESS_KEYS } from '../../common/config-keys-business.ts';
import { buildReceiptTopology, receiptsByMessageTopic, receiptsByUidTopic } from './receipts.ts';
import { buildClickhouseSinkTopology } from './clickhouse.ts';
import { meteredSerdes, meteredVendors } from './metering.ts';
import { buildCampaignsTopology, campaignExpansionOptionsFromEnv, startCampaignPace } from './campaigns.ts';
import { MysqlCampaignProgress } from '../../sinks/mysql/campaign-progress.ts';

/** The stages: the one list is common/config-keys.ts' (PUSH_STAGES is declared there); `buildStage` has a case for each. */
export const STAGES = STAGE_NAMES;
export type StageName = (typeof STAGES)[number];

/** Shared resources a worker hands to the applications it runs. */
export interface StageContext {
  readonly env: Env;
  readonly endpoints: Endpoints;
  readonly topicPrefix: string;
  readonly registry: SchemaRegistry;
  /** Shard 0 of MySQL (tables that are not per user). */
  readonly mysql: Pool;
  /** MySQL's uid shards (sinks/mysql/shards.ts): im_push_task and im_push_token rows go to their uid's shard. */
  readonly mysqlShards: ShardedPools;
  /** Vendor adapters of every configured app (fan-out submits, receipts parse). */
  readonly vendors: VendorRegistry;
  readonly metrics: PipelineMetrics;
  readonly logger: Logger;
}

export interface Stage {
  readonly name: StageName;
  readonly topology: Topology;
  /** Internal topics the application needs beside the pipeline's (created before start). */
  readonly internalTopics: readonly string[];
  /**
   * Which commit interval the stage runs with. `event-path` (decisions, fan-out: an IM push's way to
   * its vendor) commits every PUSH_COMMIT_INTERVAL_MS, the latency knob. `business` (the business
   * lane) commits every PUSH_BUSINESS_COMMIT_INTERVAL_MS: its transactions share the broker with IM's,
   * and a campaign's many small ones delayed the commit markers IM's pushes wait for. `background`
   * (task status, token health, accounting, campaign expansion) commits every
   * PUSH_BACKGROUND_COMMIT_INTERVAL_MS. Fewer commits cost fewer transactions.
   */
  readonly commitLane: 'event-path' | 'business' | 'background';
  /**
   * Its outputs are the next hop's input on the persist → vendor path (decisions → push.dispatch):
   * a task that has caught up commits PUSH_CAUGHT_UP_COMMIT_MS after its previous commit rather
   * than waiting for the interval, so a push waits about one transaction, not up to an interval.
   */
  readonly commitWhenCaughtUp?: boolean;
  /**
   * Always at-least-once, whatever PUSH_PROCESSING_GUARANTEE says (the ClickHouse sink: its events
   * dedupe by id, and it may wait out an outage longer than a transaction may stay open).
   */
  readonly atLeastOnce?: boolean;
  /** Releases what the application opened (writers, pools it owns). */
  close(): Promise<void>;
}

/**
 * The IM fan-out's options (PUSH_FANOUT_*) with its own im_push_task ledger, for the fan-out
 * application or fused behind the decisions; `countsDispatches`: the fan-out counts each dispatch it
 * takes as produced (PipelineMetrics.observeDispatch), where no push.dispatch serde does.
 */
function imFanOut(ctx: StageContext, countsDispatches = false): { options: Omit<FanOutOptions, 'outputs' | 'fused'>; close: () => Promise<void> } {
  const ledger = new MysqlPushTaskLedger({ shards: ctx.mysqlShards, listener: ctx.metrics.mysqlListener });
  const { metrics } = ctx;
  const listener: FanOutListener = countsDispatches
    ? {
        ...metrics.fanOutListener,
        onDispatchReceived: (d) => {
          metrics.observeDispatch(d);
          metrics.fanOutListener.onDispatchReceived?.(d);
        },
      }
    : metrics.fanOutListener;
  const options = { ...fanOutOptionsFromEnv(ctx.env), vendors: meteredVendors(ctx.vendors, metrics), ledger, listener };
  return { options, close: async () => ledger.close() };
}

export function buildStage(name: StageName, ctx: StageContext): Stage {
  const wiring = { valueSerdes: meteredSerdes(registryValueSerdes(ctx.registry, ctx.topicPrefix), ctx.metrics), topicPrefix: ctx.topicPrefix };
  const none = async () => undefined;
  switch (name) {
    case 'decisions': {
      const options = decisionsOptionsFromEnv(ctx.env);
      const merge = { ...options.merge, listener: ctx.metrics.mergeListener };
      // Fused, a dispatch is never serialized unless tapped: it is counted (push_dispatches_total, the
      // persisted → decided segment) as the fan-out takes it, which is also when it was decided.
      const fused = readKey(ctx.env, CONFIG_KEYS.PUSH_FAN_OUT_FUSED) ? imFanOut(ctx, !options.taps) : undefined;
      return {
        name,
        commitLane: 'event-path',
        commitWhenCaughtUp: true,
        internalTopics: [],
        close: fused?.close ?? none,
        topology: buildDecisionsTopology({ ...wiring, ...options, merge, ...(fused ? { fanOut: fused.options } : {}) }),
      };
    }
    case 'fan-out': {
      const { options: fanOut, close } = imFanOut(ctx);
      return { name, commitLane: 'event-path', internalTopics: [], close, topology: buildFanOutTopology({ ...wiring, fanOut }) };
    }
    case 'receipts': {
      const topology = buildReceiptTopology({
        ...wiring,
        parsers: receiptParsersFromRegistry(ctx.vendors),
        ingest: ingestOptionsFromEnv(ctx.env),
        join: {
          taskStatus: new MysqlTaskStatusWriter({ shards: ctx.mysqlShards, listener: ctx.metrics.mysqlListener }),
          maxEntries: readKey(ctx.env, CONFIG_KEYS.PUSH_RECEIPT_JOIN_MAX_ENTRIES),
          listener: { evicted: (entries) => ctx.metrics.receiptJoinEvictions.inc({}, entries) },
        },
        tokens: {
          tokens: new MysqlTokenWriter({ shards: ctx.mysqlShards, listener: ctx.metrics.mysqlListener }),
          listener: { invalidated: (vendor, reason) => ctx.metrics.tokenInvalidations.inc({ vendor, reason }) },
        },
      });
      return {
        name,
        commitLane: 'background',
        internalTopics: [receiptsByMessageTopic(ctx.topicPrefix), receiptsByUidTopic(ctx.topicPrefix)],
        close: none,
        topology,
      };
    }
    case 'clickhouse': {
      const writer = new PushEventWriter({
        connection: connectionFromEndpoints(ctx.endpoints),
        listener: {
          insertFailed: (error, attempt, delayMs, willRetry) =>
            ctx.logger.warn('ClickHouse insert failed', { code: error.code, attempt, ...(willRetry ? { retryInMs: delayMs } : { retrying: false }) }),
        },
      });
      return {
        name,
        commitLane: 'background',
        atLeastOnce: true,
        internalTopics: [],
        close: () => writer.close(),
        topology: buildClickhouseSinkTopology({ ...wiring, writer }),
      };
    }
    case 'business': {
      // Cancelled campaigns (push.campaign-control, read whole): their kept and later requests end SUPPRESSED campaign_cancelled.
      const control = startCampaignCancellations({ endpoints: ctx.endpoints, registry: ctx.registry, topicPrefix: ctx.topicPrefix, logger: ctx.logger });
      const business = { ...businessOptionsFromEnv(ctx.env), cancelled: (id: string) => control.cancellations.cancelledAt(id) !== undefined };
      const topology = buildBusinessTopology({ ...wiring, business });
      return { name, commitLane: 'business', internalTopics: [], close: () => control.close(), topology };
    }
    case 'fan-out-business': {
      const ledger = new MysqlPushTaskLedger({ shards: ctx.mysqlShards, listener: ctx.metrics.mysqlListener });
      const percent = readKey(ctx.env, BUSINESS_KEYS.PUSH_BUSINESS_VENDOR_RATE_PERCENT);
      const lane = businessLaneVendors(meteredVendors(ctx.vendors, ctx.metrics), percent, { ratePerSecond: 500, concurrency: 64 });
      // A cancelled campaign's dispatches still queued, parked or at the vendor gate are not submitted (processors/fan-out/cancelled.ts).
      const control = startCampaignCancellations({ endpoints: ctx.endpoints, registry: ctx.registry, topicPrefix: ctx.topicPrefix, logger: ctx.logger });
      const fanOut = {
        ...fanOutOptionsFromEnv(ctx.env),
        ...lane,
        ledger,
        listener: ctx.metrics.fanOutListener,
        cancellations: control.cancellations,
        cancellationsRead: control.read,
      };
      return {
        name,
        commitLane: 'business',
        internalTopics: [],
        close: async () => {
          await control.close();
          await ledger.close();
        },
        topology: buildFanOutTopology({ ...wiring, fanOut, lane: 'business' }),
      };
    }
    case 'campaigns': {
      const progress = new MysqlCampaignProgress(ctx.mysql, { listener: ctx.metrics.mysqlListener });
      const expansion = campaignExpansionOptionsFromEnv(ctx.env);
      const yielding = startCampaignPace({ ...ctx, yieldDelayMs: expansion.yieldDelayMs ?? 0 });
      const topology = buildCampaignsTopology({ ...wiring, expansion: { ...expansion, ...(yielding.pace ? { pace: yielding.pace } : {}) }, progress });
      return { name, commitLane: 'background', internalTopics: [], close: () => yielding.close(), topology };
    }
  }
}
