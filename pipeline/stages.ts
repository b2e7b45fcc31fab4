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
import type { VendorAdapter } from '../sinks/vendors/types.ts';
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

/**
 * The registry serdes, with the records a stage produces to push.outcomes and push.dispatch counted
 * into the worker's metrics on the way out (serialize runs once per produced record).
 */
function meteredSerdes(base: ValueSerdes, metrics: PipelineMetrics): ValueSerdes {
  const observers: Partial<Record<Parameters<ValueSerdes>[0], (value: never) => void>> = {
    outcomes: (o) => metrics.observeOutcome(o),
    dispatch: (d) => metrics.observeDispatch(d),
  };
  return (key) => {
    const serde = base(key);
    const observe = observers[key];
    if (!observe) return serde;
    return {
      serialize: (topic, value) => {
        observe(value as never);
        return serde.serialize(topic, value);
      },
      deserialize: (topic, data) => serde.deserialize(topic, data),
    };
  };
}

/** The vendor registry with every submit call timed and every per-message answer counted by kind and code. */
function meteredVendors(vendors: VendorRegistry, metrics: PipelineMetrics): VendorRegistry {
  const wrapped = new Map<VendorAdapter, VendorAdapter>();
  const meter = (adapter: VendorAdapter, appId: string): VendorAdapter => {
    let m = wrapped.get(adapter);
    if (!m) {
      m = {
        vendor: adapter.vendor,
        maxPayloadBytes: adapter.maxPayloadBytes,
        maxBatchSize: adapter.maxBatchSize,
        payloadBytes: (message) => adapter.payloadBytes(message),
        parseReceipt: (body, contentType) => adapter.parseReceipt(body, contentType),
        close: () => adapter.close(),
        submit: async (messages) => {
          const started = performance.now();
          const outcomes = await adapter.submit(messages);
          metrics.vendorLatency.observe({ vendor: adapter.vendor }, performance.now() - started);
          for (const o of outcomes) metrics.vendorResults.inc({ vendor: adapter.vendor, app: appId, kind: o.kind, code: o.kind === 'accepted' ? '' : o.code });
          return outcomes;
        },
      };
      wrapped.set(adapter, m);
    }
    return m;
  };
  return {
    adapter: (vendor, appId) => {
      const adapter = vendors.adapter(vendor, appId);
      return adapter && meter(adapter, appId);
    },
    limits: (vendor, appId) => vendors.limits(vendor, appId),
    receiptParser: (vendor) => vendors.receiptParser(vendor),
    close: () => vendors.close(),
  };
}

export function buildStage(name: StageName, ctx: StageContext): Stage {
  const serdes: ValueSerdes = meteredSerdes(registryValueSerdes(ctx.registry, ctx.topicPrefix), ctx.metrics);
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
          vendors: meteredVendors(ctx.vendors, ctx.metrics),
          ledger,
          listener: ctx.metrics.fanOutListener,
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
