import { readFile } from 'node:fs/promises';
import { isAbsolute, relative, resolve } from 'node:path';
import { readKey, type Env } from '../../common/config.ts';
import { CONFIG_KEYS } from '../../common/config-keys.ts';
import { withStores } from '../../topology/api.ts';
import { TopologyBuilder, type Topology } from '../../topology/builder.ts';
import { keyValueStore } from '../../topology/stores.ts';
import {
  CampaignExpansion,
  type CampaignMeta,
  type CampaignProgressSink,
  type ExpansionListener,
  type UidFileReader,
} from '../../processors/campaigns/expansion.ts';
import { DelayYield, type ExpansionPace } from '../../processors/campaigns/pace.ts';
import type { Endpoints } from '../../common/endpoints.ts';
import type { Logger } from '../../common/log.ts';
import type { PipelineMetrics } from '../../sinks/metrics/pipeline-metrics.ts';
import { BrokerDelayProbe } from '../broker-delay.ts';
import { MysqlCampaignProgress } from '../../sinks/mysql/campaign-progress.ts';
import { topicName } from '../topics.ts';
import type { StageDefinition } from './stage.ts';
import { topicIo, type WiringOptions } from './wiring.ts';

/** Stable node and store names (they appear in `describe()` and in the changelog topics' names). */
export const CAMPAIGN_NODES = {
  source: 'campaigns-source',
  processor: 'campaign-expansion',
  requests: 'requests-sink',
  control: 'campaign-control-sink',
  metaStore: 'campaign-meta',
  uidStore: 'campaign-uids',
} as const;

export interface CampaignExpansionOptions {
  /** PUSH_CAMPAIGN_EXPANSION_RATE. */
  readonly ratePerSecond: number;
  /** PUSH_CAMPAIGN_YIELD_DELAY_MS: yield when the broker's queueing delay exceeds it (0: never). */
  readonly yieldDelayMs?: number;
  /** The share of the rate to expand at now (the stage's DelayYield); absent: the full rate. */
  readonly pace?: ExpansionPace;
  /** PUSH_CAMPAIGN_MAX_UIDS. */
  readonly maxUids: number;
  /** Uids per changelogged chunk. Default 500. */
  readonly chunkSize?: number;
  /** Punctuator interval, ms. Default 100. */
  readonly tickMs?: number;
  /** PUSH_CAMPAIGN_UID_DIR: reads `uid_file`s below it; absent: uid files are refused (DLQ). */
  readonly readUidFile?: UidFileReader;
}

export interface CampaignsTopologyOptions extends WiringOptions {
  readonly expansion: CampaignExpansionOptions;
  readonly progress?: CampaignProgressSink;
  readonly listener?: ExpansionListener;
}

/**
 * The campaign expansion application: push.campaigns (key campaign_id) → `campaign-expansion` →
 * push.requests (one per distinct uid, key uid) and push.campaign-control (accepted CANCELs). Its
 * two changelogged stores hold each campaign's cursor and its uids not expanded yet; run with
 * exactly-once tasks, which makes the expansion resumable and exactly once
 * (processors/campaigns/expansion.ts).
 */
export function buildCampaignsTopology(o: CampaignsTopologyOptions): Topology {
  const { source, sink } = topicIo(o);
  const n = CAMPAIGN_NODES;
  const e = o.expansion;
  const supplier = withStores(
    () =>
      new CampaignExpansion({
        stores: { meta: n.metaStore, uids: n.uidStore },
        outputs: { requests: n.requests, control: n.control },
        chunkSize: e.chunkSize ?? 500,
        tickMs: e.tickMs ?? 100,
        ratePerSecond: e.ratePerSecond,
        ...(e.pace ? { pace: e.pace } : {}),
        maxUids: e.maxUids,
        ...(e.readUidFile ? { readUidFile: e.readUidFile } : {}),
        ...(o.progress ? { progress: o.progress } : {}),
        ...(o.listener ? { listener: o.listener } : {}),
      }),
    [keyValueStore<CampaignMeta>(n.metaStore), keyValueStore<readonly string[]>(n.uidStore)],
  );
  return new TopologyBuilder()
    .addSource(n.source, source('campaigns'))
    .addProcessor(n.processor, supplier, n.source)
    .addSink(n.requests, sink('requests'), n.processor)
    .addSink(n.control, sink('campaignControl'), n.processor)
    .build();
}

/** The campaign expansion's application: in the background, its stores owned by the campaign id (push.campaigns' key). */
export const campaignsStage: StageDefinition<'campaigns'> = {
  name: 'campaigns',
  commitLane: 'background',
  stores: {
    // campaign id (push.campaigns is keyed by it)
    [CAMPAIGN_NODES.metaStore]: { kind: 'owner', owner: (key) => key },
    // `${campaignId}|${chunk}`
    [CAMPAIGN_NODES.uidStore]: { kind: 'owner', owner: (key) => key.slice(0, key.lastIndexOf('|')) },
  },
  inspect: (wiring) => buildCampaignsTopology({ ...wiring, expansion: { ratePerSecond: 1, maxUids: 1 } }),
  build(ctx, wiring) {
    const progress = new MysqlCampaignProgress(ctx.mysql, { listener: ctx.metrics.mysqlListener });
    const expansion = campaignExpansionOptionsFromEnv(ctx.env);
    const yielding = startCampaignPace({ ...ctx, yieldDelayMs: expansion.yieldDelayMs ?? 0 });
    const listener = {
      expanding: (task: string, campaigns: number) => ctx.metrics.campaignsExpanding.set({ task }, campaigns),
      expanded: (uids: number) => ctx.metrics.campaignUidsExpanded.inc({}, uids),
    };
    const topology = buildCampaignsTopology({ ...wiring, expansion: { ...expansion, ...(yielding.pace ? { pace: yielding.pace } : {}) }, progress, listener });
    return { close: () => yielding.close(), topology };
  },
};

/**
 * The expansion's pace when it yields to IM (`yieldDelayMs` > 0, PUSH_CAMPAIGN_YIELD_DELAY_MS): a
 * DelayYield fed by a broker delay probe on push.dispatch, which every IM push crosses
 * (processors/campaigns/pace.ts, pipeline/broker-delay.ts), its share and queueing exported as
 * metrics. With 0: no pace (the full rate) and no probe. `close` stops the probe.
 */
export function startCampaignPace(o: {
  readonly yieldDelayMs: number;
  readonly endpoints: Endpoints;
  readonly topicPrefix: string;
  readonly logger: Logger;
  readonly metrics: PipelineMetrics;
}): { readonly pace?: ExpansionPace; close(): Promise<void> } {
  if (o.yieldDelayMs === 0) return { close: async () => undefined };
  const pace = new DelayYield({ targetDelayMs: o.yieldDelayMs });
  const probe = new BrokerDelayProbe({
    brokers: o.endpoints.kafkaBrokers,
    kafkaSecurity: o.endpoints.kafkaSecurity,
    topic: topicName('dispatch', o.topicPrefix),
    logger: o.logger,
    onPeriod: (delayMs, now, imActive) => {
      pace.observe(delayMs, now, imActive);
      o.metrics.campaignPace.set({}, pace.share());
      o.metrics.campaignQueueing.set({}, pace.queueingMs());
    },
  });
  probe.start();
  const probed: ExpansionPace = {
    share: () => pace.share(),
    expanding: () => {
      pace.expanding();
      probe.expanding();
    },
  };
  return { pace: probed, close: () => probe.close() };
}

/** PUSH_CAMPAIGN_EXPANSION_RATE, PUSH_CAMPAIGN_YIELD_DELAY_MS, PUSH_CAMPAIGN_MAX_UIDS, PUSH_CAMPAIGN_UID_DIR. */
export function campaignExpansionOptionsFromEnv(env: Env): CampaignExpansionOptions {
  const dir = readKey(env, CONFIG_KEYS.PUSH_CAMPAIGN_UID_DIR);
  return {
    ratePerSecond: readKey(env, CONFIG_KEYS.PUSH_CAMPAIGN_EXPANSION_RATE),
    yieldDelayMs: readKey(env, CONFIG_KEYS.PUSH_CAMPAIGN_YIELD_DELAY_MS),
    maxUids: readKey(env, CONFIG_KEYS.PUSH_CAMPAIGN_MAX_UIDS),
    ...(dir === '' ? {} : { readUidFile: uidFileReader(dir) }),
  };
}

/** Reads `<dir>/<name>`, one uid per line (blank lines and `\r` ignored); a name leading out of `dir` is refused. */
export function uidFileReader(dir: string): UidFileReader {
  const root = resolve(dir);
  return async (name) => {
    const path = resolve(root, name);
    const inside = relative(root, path);
    if (inside === '' || inside.startsWith('..') || isAbsolute(inside)) throw new Error('outside PUSH_CAMPAIGN_UID_DIR');
    const text = await readFile(path, 'utf8');
    return text
      .split('\n')
      .map((line) => line.trim())
      .filter((line) => line !== '');
  };
}
