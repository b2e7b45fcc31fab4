/**
 * The business application (issue 16, docs/entry.md): business pushes on a lane of their own.
 *
 *   push.requests ─┐
 *   push.tokens ───┼─► business (transfer ─► strategies) ─► push.dispatch.business ─► fan-out-business (its own group)
 *   push.settings ─┘                                    └─► push.outcomes
 *
 * Its own consumer group, stores and topics: a campaign's million requests queue here and on
 * push.dispatch.business, never in front of an IM message on im.message.persisted or push.dispatch.
 * push.tokens and push.settings are read as tables (a tombstone deletes the user's tokens or settings).
 */
import { readFileSync } from 'node:fs';
import { TopologyBuilder, type Topology } from '../../topology/builder.ts';
import { business } from '../../processors/business/business.ts';
import type { BusinessOptions, StrategyOverride, Template } from '../../processors/business/options.ts';
import { parseQuotas } from '../../processors/policy/options.ts';
import type { VendorDirectory } from '../../processors/fan-out/options.ts';
import type { VendorLimits } from '../../processors/fan-out/vendor-port.ts';
import { VENDOR_CHANNELS } from '../../sinks/vendors/channels.ts';
import { readKey, type Env } from '../../common/config.ts';
import { CONFIG_KEYS } from '../../common/config-keys.ts';
import { BUSINESS_KEYS } from '../../common/config-keys-business.ts';
import { ConfigError } from '../../common/errors.ts';
import type { TopicKey } from '../topics.ts';
import { topicIo, type WiringOptions } from './wiring.ts';

export interface BusinessTopologyOptions extends WiringOptions {
  readonly business?: Omit<BusinessOptions, 'outputs' | 'tables'>;
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
  processor: 'business',
  dispatch: 'business-dispatch-sink',
  outcomes: 'outcomes-sink',
} as const;

export function buildBusinessTopology(o: BusinessTopologyOptions): Topology {
  const { topic, source, sink } = topicIo(o);
  const n = BUSINESS_NODES;
  return new TopologyBuilder()
    .addSource(n.requests, source('requests'))
    .addSource(n.tokens, source('tokens'))
    .addSource(n.settings, source('settings'))
    .addProcessor(
      n.processor,
      business(VENDOR_CHANNELS, {
        ...o.business,
        tables: { tokens: topic('tokens'), settings: topic('settings') },
        outputs: { dispatch: n.dispatch, outcomes: n.outcomes },
      }),
      n.requests,
      n.tokens,
      n.settings,
    )
    .addSink(n.dispatch, sink('dispatchBusiness'), n.processor)
    .addSink(n.outcomes, sink('outcomes'), n.processor)
    .build();
}

/** A JSON file named by a key; empty: undefined. A missing or malformed file throws a ConfigError naming the key. */
function jsonFile(key: string, path: string): unknown {
  if (path === '') return undefined;
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as unknown;
  } catch (error) {
    throw new ConfigError(key, `cannot read ${path} as JSON: ${(error as Error).message}`);
  }
}

/**
 * The business stage's options from PUSH_BUSINESS_* (common/config-keys-business.ts) and the keys
 * it shares with the policy (PUSH_VENDOR_QUOTAS, PUSH_PARTITIONS, PUSH_QUOTA_TIME_ZONE, PUSH_INGEST_*).
 * Bad values throw a ConfigError naming the key (the strategies are checked when the topology is built).
 */
export function businessOptionsFromEnv(env: Env = process.env): BusinessTopologyOptions['business'] {
  const K = { ...CONFIG_KEYS, ...BUSINESS_KEYS };
  const strategies = jsonFile(K.PUSH_BUSINESS_STRATEGIES.key, readKey(env, K.PUSH_BUSINESS_STRATEGIES)) as
    { default?: StrategyOverride; overrides?: Record<string, StrategyOverride> } | undefined;
  const templates = jsonFile(K.PUSH_BUSINESS_TEMPLATES.key, readKey(env, K.PUSH_BUSINESS_TEMPLATES)) as Record<string, Template> | undefined;
  return {
    ...(strategies?.default ? { strategies: strategies.default } : {}),
    ...(strategies?.overrides ? { overrides: strategies.overrides } : {}),
    ...(templates ? { templates } : {}),
    idempotencyTtlMs: readKey(env, K.PUSH_BUSINESS_IDEMPOTENCY_TTL_MS),
    defaultTimeZone: readKey(env, K.PUSH_BUSINESS_DEFAULT_TIME_ZONE),
    quotaSharePercent: readKey(env, K.PUSH_BUSINESS_QUOTA_SHARE_PERCENT),
    quotas: parseQuotas(readKey(env, K.PUSH_VENDOR_QUOTAS)),
    partitionCount: readKey(env, K.PUSH_PARTITIONS),
    quotaTimeZone: readKey(env, K.PUSH_QUOTA_TIME_ZONE),
  };
}

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
    vendors: { adapter: (vendor, appId) => vendors.adapter(vendor, appId), limits: (vendor, appId) => ((l) => l && scale(l))(vendors.limits(vendor, appId)) },
    defaultLimits: scale(fallback),
  };
}
