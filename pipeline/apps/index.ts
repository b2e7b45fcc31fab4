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
import { fanOutOptionsFromEnv } from '../../processors/fan-out/options.ts';
import { ingestOptionsFromEnv } from '../../processors/model/ingest.ts';
import { PushEventWriter } from '../../sinks/clickhouse/writer.ts';
import { connectionFromEndpoints } from '../../sinks/clickhouse/client.ts';
import { MysqlPushTaskLedger } from '../../sinks/mysql/tasks.ts';
import { MysqlTaskStatusWriter } from '../../sinks/mysql/task-status.ts';
import { MysqlTokenWriter } from '../../sinks/mysql/tokens.ts';
import type { VendorRegistry } from '../../sinks/vendors/registry.ts';
import type { PipelineMetrics } from '../../sinks/metrics/pipeline-metrics.ts';
import { receiptParsersFromRegistry } from '../../receipts/parsers.ts';
import { registryValueSerdes } from '../serdes.ts';
import { buildDecisionsTopology, decisionsOptionsFromEnv } from './decisions.ts';
import { buildFanOutTopology } from './fan-out.ts';
import { buildReceiptTopology, receiptsByMessageTopic } from './receipts.ts';
import { buildClickhouseSinkTopology } from './clickhouse.ts';
import { meteredSerdes, meteredVendors } from './metering.ts';

export const STAGES = ['decisions', 'fan-out', 'receipts', 'clickhouse'] as const;
export type StageName = (typeof STAGES)[number];

/** Shared resources a worker hands to the applications it runs. */
export interface StageContext {
  readonly env: Env;
  readonly endpoints: Endpoints;
  readonly topicPrefix: string;
  readonly registry: SchemaRegistry;
  readonly mysql: Pool;
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
   * On the persist → vendor path (decisions, fan-out): commits every PUSH_COMMIT_INTERVAL_MS, the
   * latency knob. The others follow the pushes (task status, token health, accounting) and commit
   * every PUSH_BACKGROUND_COMMIT_INTERVAL_MS, which costs fewer transactions.
   */
  readonly eventPath: boolean;
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

export function buildStage(name: StageName, ctx: StageContext): Stage {
  const wiring = { valueSerdes: meteredSerdes(registryValueSerdes(ctx.registry, ctx.topicPrefix), ctx.metrics), topicPrefix: ctx.topicPrefix };
  const none = async () => undefined;
  switch (name) {
    case 'decisions': {
      const options = decisionsOptionsFromEnv(ctx.env);
      const merge = { ...options.merge, listener: ctx.metrics.mergeListener };
      return {
        name,
        eventPath: true,
        commitWhenCaughtUp: true,
        internalTopics: [],
        close: none,
        topology: buildDecisionsTopology({ ...wiring, ...options, merge }),
      };
    }
    case 'fan-out': {
      const ledger = new MysqlPushTaskLedger({ pool: ctx.mysql, listener: ctx.metrics.mysqlListener });
      const fanOut = { ...fanOutOptionsFromEnv(ctx.env), vendors: meteredVendors(ctx.vendors, ctx.metrics), ledger, listener: ctx.metrics.fanOutListener };
      return { name, eventPath: true, internalTopics: [], close: async () => ledger.close(), topology: buildFanOutTopology({ ...wiring, fanOut }) };
    }
    case 'receipts': {
      const topology = buildReceiptTopology({
        ...wiring,
        parsers: receiptParsersFromRegistry(ctx.vendors),
        ingest: ingestOptionsFromEnv(ctx.env),
        join: { taskStatus: new MysqlTaskStatusWriter({ pool: ctx.mysql, listener: ctx.metrics.mysqlListener }) },
        tokens: {
          tokens: new MysqlTokenWriter({ pool: ctx.mysql, listener: ctx.metrics.mysqlListener }),
          listener: { invalidated: (vendor, reason) => ctx.metrics.tokenInvalidations.inc({ vendor, reason }) },
        },
      });
      return { name, eventPath: false, internalTopics: [receiptsByMessageTopic(ctx.topicPrefix)], close: none, topology };
    }
    case 'clickhouse': {
      const writer = new PushEventWriter({ connection: connectionFromEndpoints(ctx.endpoints) });
      return {
        name,
        eventPath: false,
        atLeastOnce: true,
        internalTopics: [],
        close: () => writer.close(),
        topology: buildClickhouseSinkTopology({ ...wiring, writer }),
      };
    }
  }
}
