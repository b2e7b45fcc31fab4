/**
 * The pipeline's applications: one per stage group, each its own consumer group
 * (`<applicationId>-<stage>`), so ops can run, scale and watch them separately, and an outage of
 * one sink (ClickHouse) stalls only its own group. Every stage reads uid-keyed, co-partitioned
 * topics; `pushctl run --stages` picks which of them a worker runs.
 */
import type { Pool } from 'mysql2/promise';
import type { SchemaRegistry } from '@kafkajs/confluent-schema-registry';
import type { Logger } from '../common/log.ts';
import type { Endpoints } from '../common/endpoints.ts';
import type { Topology } from '../topology/builder.ts';
import { jsonSerde, stringSerde, type Serde } from '../topology/serdes.ts';
import { buildDecisionsTopology, decisionsOptionsFromEnv, registryValueSerdes, type ValueSerdes } from './decisions.ts';
import { buildFanOutTopology } from '../processors/fan-out/topology.ts';
import { fanOutOptionsFromEnv } from '../processors/fan-out/options.ts';
import { buildReceiptTopology } from '../processors/receipt-join/topology.ts';
import { buildClickhouseSinkTopology } from '../sinks/clickhouse/topology.ts';
import { PushEventWriter } from '../sinks/clickhouse/writer.ts';
import { connectionFromEndpoints } from '../sinks/clickhouse/client.ts';
import { MysqlPushTaskLedger } from '../sinks/mysql/tasks.ts';
import { MysqlTaskStatusWriter } from '../sinks/mysql/task-status.ts';
import { MysqlTokenWriter } from '../sinks/mysql/tokens.ts';
import type { VendorRegistry } from '../sinks/vendors/registry.ts';
import { receiptParsersFromRegistry } from '../receipts/parsers.ts';
import type { PipelineMetrics } from '../sinks/metrics/pipeline-metrics.ts';
import type { Env } from '../common/config.ts';
import { topicName } from './topics.ts';

export const STAGES = ['decisions', 'fan-out', 'receipts', 'clickhouse'] as const;
export type StageName = (typeof STAGES)[number];

/** Shared resources a worker hands to the stages it runs. */
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
  /** Internal topics the stage needs beside the pipeline's (created before start). */
  readonly internalTopics: readonly string[];
  /** Releases what the stage opened (writers, pools it owns). */
  close(): Promise<void>;
}

/** The internal topic of the receipts application: submissions and receipts keyed by vendor message id. */
export const receiptsByMessageTopic = (prefix: string) => `${prefix}push.receipts.by-message`;

export function buildStage(name: StageName, ctx: StageContext): Stage {
  const serdes: ValueSerdes = registryValueSerdes(ctx.registry, ctx.topicPrefix);
  const t = (key: Parameters<typeof topicName>[0]) => topicName(key, ctx.topicPrefix);
  const serde = <T>(key: Parameters<typeof topicName>[0]) => serdes(key) as Serde<T>;
  switch (name) {
    case 'decisions':
      return { name, internalTopics: [], close: async () => undefined, topology: buildDecisionsTopology({ valueSerdes: serdes, topicPrefix: ctx.topicPrefix, ...decisionsOptionsFromEnv(ctx.env) }) };
    case 'fan-out': {
      const ledger = new MysqlPushTaskLedger({ pool: ctx.mysql });
      const topology = buildFanOutTopology({
        valueSerdes: serdes,
        topicPrefix: ctx.topicPrefix,
        fanOut: {
          ...fanOutOptionsFromEnv(ctx.env),
          vendors: ctx.vendors,
          ledger,
          listener: { onAnswer: (vendor, app, kind, code) => ctx.metrics.vendorResults.inc({ vendor, app, kind, code: code ?? '' }) },
        },
      });
      return { name, topology, internalTopics: [], close: async () => ledger.close() };
    }
    case 'receipts': {
      const byMessage = receiptsByMessageTopic(ctx.topicPrefix);
      const taskStatus = new MysqlTaskStatusWriter({ pool: ctx.mysql });
      const tokens = new MysqlTokenWriter({ pool: ctx.mysql });
      const topology = buildReceiptTopology({
        topics: { receiptsRaw: t('receiptsRaw'), outcomes: t('outcomes'), tokens: t('tokens'), receipts: t('receipts'), byMessage },
        serdes: { key: stringSerde, receiptRaw: serde('receiptsRaw'), outcome: serde('outcomes'), token: serde('tokens'), receipt: serde('receipts'), byMessage: jsonSerde() },
        parsers: receiptParsersFromRegistry(ctx.vendors),
        join: { taskStatus },
        tokens: { tokens, listener: { invalidated: (vendor, reason) => ctx.metrics.tokenInvalidations.inc({ vendor, reason }) } },
      });
      return { name, topology, internalTopics: [byMessage], close: async () => undefined };
    }
    case 'clickhouse': {
      const writer = new PushEventWriter({ connection: connectionFromEndpoints(ctx.endpoints) });
      const topology = buildClickhouseSinkTopology({
        topics: { outcomes: t('outcomes'), receipts: t('receipts') },
        serdes: { key: stringSerde, outcome: serde('outcomes'), receipt: serde('receipts') },
        writer,
      });
      return { name, topology, internalTopics: [], close: () => writer.close() };
    }
  }
}
