/**
 * What a stage is. Each stage is one `StageDefinition` in its file of this folder: how its
 * application commits, the internal topics it needs, its changelogged stores with where their
 * entries go when the partition count changes, and how it is built from the resources a worker
 * shares. pipeline/apps/index.ts maps every name of common/config-keys.ts `STAGE_NAMES` to its
 * definition; the worker (`buildStage`) and `pushctl repartition` read the definitions from there.
 */
import type { Pool } from 'mysql2/promise';
import type { SchemaRegistry } from '@kafkajs/confluent-schema-registry';
import type { Logger } from '../../common/log.ts';
import type { Endpoints } from '../../common/endpoints.ts';
import type { Env } from '../../common/config.ts';
import type { STAGE_NAMES } from '../../common/config-keys.ts';
import type { Topology } from '../../topology/builder.ts';
import type { ShardedPools } from '../../sinks/mysql/shards.ts';
import type { VendorRegistry } from '../../sinks/vendors/registry.ts';
import type { PipelineMetrics } from '../../sinks/metrics/pipeline-metrics.ts';
import type { Placement } from '../repartition/store-keys.ts';
import type { WiringOptions } from './wiring.ts';

export type StageName = (typeof STAGE_NAMES)[number];

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

/** How a stage's application runs: pipeline/worker.ts configures its StreamsApp with these. */
export interface StageSettings {
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
}

/** What building a stage opens. */
export interface StageBuild {
  readonly topology: Topology;
  /** Releases what the application opened (writers, pools it owns). */
  close(): Promise<void>;
}

/** One stage, whole: `STAGE_DEFINITIONS` (pipeline/apps/index.ts) holds one per name of `STAGE_NAMES`. */
export interface StageDefinition<S extends StageName = StageName> extends StageSettings {
  /** Its consumer group is `<PUSH_APPLICATION_ID>-<name>`. */
  readonly name: S;
  /**
   * Internal topics the application needs beside the pipeline's, under a topic prefix: the worker
   * creates them before it starts, `pushctl repartition` in a new generation. Absent: none.
   */
  readonly internalTopics?: (topicPrefix: string) => readonly string[];
  /**
   * Every changelogged store its topology can have, with where its entries go when the partition
   * count changes (`pushctl repartition`; the kinds of placement: pipeline/repartition/store-keys.ts).
   * `buildStage` refuses a topology with a changelogged store missing here, and
   * test/pipeline/repartition/store-keys.test.ts compares it with `inspect`'s both ways. `{}` for a stateless stage.
   */
  readonly stores: Readonly<Record<string, Placement>>;
  /**
   * Its topology with every store it can have, wired with `placeholder` resources: inspected, never run.
   */
  inspect(wiring: WiringOptions): Topology;
  /** Opens what the application needs from the worker's resources and wires its topology; a bad option throws a ConfigError naming its key. */
  build(ctx: StageContext, wiring: WiringOptions): StageBuild;
}

/** A stage as a worker runs it. */
export interface Stage extends StageSettings, StageBuild {
  readonly name: StageName;
  /** Internal topics the application needs beside the pipeline's (created before start). */
  readonly internalTopics: readonly string[];
}

/** A resource an inspected topology is wired with: its processors never run, so never use it. */
export const placeholder = <T>(): T => ({}) as T;

/** `close` of a stage that opens nothing of its own. */
export const nothingToClose = async (): Promise<void> => undefined;

/** The names of a topology's changelogged stores, sorted. */
export function changeloggedStores(topology: Topology): string[] {
  return [...topology.stores.values()]
    .filter((s) => s.kind !== 'schedule' && s.changelog !== false)
    .map((s) => s.name)
    .sort();
}
