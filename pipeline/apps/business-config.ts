/**
 * The business lane's settings from its PUSH_BUSINESS_* keys and files, read without loading the
 * lane's topology: `pushctl` checks a configuration (cli/config-check.ts) before any command runs.
 */
import { readFileSync } from 'node:fs';
import { readKey, type Env } from '../../common/config.ts';
import { CONFIG_KEYS } from '../../common/config-keys.ts';
import { BUSINESS_KEYS } from '../../common/config-keys-business.ts';
import { ConfigError } from '../../common/errors.ts';
import type { StrategyOverride, Template } from '../../processors/business/options.ts';
import { parseQuotas } from '../../processors/policy/options.ts';
import type { BusinessTopologyOptions } from './business.ts';

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
