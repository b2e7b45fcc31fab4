import type { ChildNames } from '../../topology/api.ts';
import { ConfigError } from '../../common/errors.ts';
import { checkKey, checkRange, readKey, type Env } from '../../common/config.ts';
import { CONFIG_KEYS, type MENTION_RULES } from '../../common/config-keys.ts';
import { isValidTimeZone } from './quiet-hours.ts';
import type { DailyQuotas } from './quota.ts';
import { compileIngestRules, type IngestOptions, type IngestRules } from '../model/ingest.ts';

/**
 * How @mentions interact with the user's filters: `none` (a mention is filtered like any message),
 * `mute` (a mention breaks through a conversation mute), `mute-and-quiet-hours` (also through quiet
 * hours).
 */
export type MentionRule = (typeof MENTION_RULES)[number];

/** Options of the policy stage (docs/design.md, "policy"). */
export interface PolicyOptions {
  /** Env PUSH_MENTION_RULE; default `mute`. */
  mentionRule?: MentionRule;
  /** Whether @all counts as a mention for the rule (DIRECT always does). Env PUSH_MENTION_ALL; default false. */
  mentionAllCounts?: boolean;
  /** Title sent instead of the real one for private mode and sensitive conversations. Env PUSH_GENERIC_TITLE; default `New message`. */
  genericTitle?: string;
  /** Text sent instead of the summary. Env PUSH_GENERIC_TEXT; default `You have a new message`. */
  genericText?: string;
  /** Summaries are cut to this many characters (code points). Env PUSH_SUMMARY_MAX_CHARS; default 100; 1–100. */
  summaryMaxChars?: number;
  /** Daily quotas per vendor and app (`*` = any app). Env PUSH_VENDOR_QUOTAS `vendor:app=n,...`; default none. */
  quotas?: DailyQuotas;
  /**
   * Partitions of the input topics: each spends 1/partitionCount of a daily quota. Env PUSH_PARTITIONS
   * (default 6, as many as the worker creates); as an option default 1 (one task holds every key).
   */
  partitionCount?: number;
  /** Zone whose midnight starts a quota day. Env PUSH_QUOTA_TIME_ZONE; default `Asia/Shanghai` (the CN vendors' day). */
  quotaTimeZone?: string;
  /**
   * Keep the newest notification per (uid, device, conv) suppressed by quiet hours and release it as
   * one DEFERRED push when the quiet period ends, unless the conversation was read meanwhile.
   * Env PUSH_QUIET_HOURS_RELEASE; default false (quiet-hour pushes are suppressed and counted).
   */
  deferredRelease?: boolean;
  /** Wall-clock interval at which due deferred releases are sent, ms (no env key). Default 1 000; 10–600 000. */
  releaseCheckIntervalMs?: number;
  /**
   * The ingest rules (PUSH_INGEST_*; processors/model/ingest.ts), the ingest nodes' before the policy:
   * a stored version stamp beyond the future skew they accept does not outrank a newer update.
   */
  ingest?: IngestOptions;
  /** Child node names. Defaults `dispatch` and `outcomes`. */
  outputs?: { dispatch?: ChildNames; outcomes?: ChildNames };
  stores?: Partial<PolicyStoreNames>;
}

export interface PolicyStoreNames {
  /** uid → devices → tokens per vendor. */
  tokens: string;
  /** uid → latest user settings. */
  settings: string;
  /** (vendor, app, day) → submissions charged on this partition. */
  quotaLedger: string;
  /** (uid, device, conv) → the notification kept for release after quiet hours. */
  deferred: string;
  /** (uid, device, conv) → when its quiet hours end. */
  deferredTimers: string;
}

export const POLICY_STORE_NAMES: PolicyStoreNames = {
  tokens: 'policy-tokens',
  settings: 'policy-settings',
  quotaLedger: 'policy-quota-ledger',
  deferred: 'policy-deferred',
  deferredTimers: 'policy-deferred-timers',
};

export interface PolicyConfig {
  readonly mentionRule: MentionRule;
  readonly mentionAllCounts: boolean;
  readonly genericTitle: string;
  readonly genericText: string;
  readonly summaryMaxChars: number;
  readonly quotas: DailyQuotas;
  readonly partitionCount: number;
  readonly quotaTimeZone: string;
  readonly deferredRelease: boolean;
  readonly releaseCheckIntervalMs: number;
  readonly ingest: IngestRules;
  readonly outputs: { readonly dispatch: ChildNames; readonly outcomes: ChildNames };
  readonly stores: Readonly<PolicyStoreNames>;
}

const KEYS = CONFIG_KEYS;

/** Validates the options once; a bad value throws a ConfigError naming its PUSH_* key (or its option, when it has none). */
export function compilePolicyOptions(options: PolicyOptions = {}): PolicyConfig {
  const quotaTimeZone = checkKey(KEYS.PUSH_QUOTA_TIME_ZONE, options.quotaTimeZone);
  if (!isValidTimeZone(quotaTimeZone)) throw new ConfigError(KEYS.PUSH_QUOTA_TIME_ZONE.key, `unknown IANA time zone ${JSON.stringify(quotaTimeZone)}`);
  const quotas = options.quotas ?? {};
  for (const [vendor, apps] of Object.entries(quotas)) {
    for (const [app, daily] of Object.entries(apps)) checkRange(`PUSH_VENDOR_QUOTAS (${vendor}:${app})`, daily, { min: 0, max: Number.MAX_SAFE_INTEGER });
  }
  return Object.freeze({
    mentionRule: checkKey(KEYS.PUSH_MENTION_RULE, options.mentionRule),
    mentionAllCounts: checkKey(KEYS.PUSH_MENTION_ALL, options.mentionAllCounts),
    genericTitle: checkKey(KEYS.PUSH_GENERIC_TITLE, options.genericTitle),
    genericText: checkKey(KEYS.PUSH_GENERIC_TEXT, options.genericText),
    summaryMaxChars: checkKey(KEYS.PUSH_SUMMARY_MAX_CHARS, options.summaryMaxChars),
    quotas,
    partitionCount: checkKey(KEYS.PUSH_PARTITIONS, options.partitionCount ?? 1),
    quotaTimeZone,
    deferredRelease: checkKey(KEYS.PUSH_QUIET_HOURS_RELEASE, options.deferredRelease),
    releaseCheckIntervalMs: checkRange('policy.releaseCheckIntervalMs', options.releaseCheckIntervalMs ?? 1_000, { min: 10, max: 600_000 }),
    ingest: compileIngestRules(options.ingest),
    outputs: Object.freeze({ dispatch: options.outputs?.dispatch ?? 'dispatch', outcomes: options.outputs?.outcomes ?? 'outcomes' }),
    stores: Object.freeze({ ...POLICY_STORE_NAMES, ...options.stores }),
  });
}

/** Parses PUSH_VENDOR_QUOTAS: `hms:im.demo=100000,xiaomi:*=50000`. */
export function parseQuotas(raw: string): DailyQuotas {
  const out: Record<string, Record<string, number>> = {};
  for (const item of raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    const m = /^([a-z]+):([^=]+)=(\d+)$/.exec(item);
    if (!m) throw new ConfigError('PUSH_VENDOR_QUOTAS', `expected vendor:app=count, got ${JSON.stringify(item)}`);
    (out[m[1]!] ??= {})[m[2]!] = Number(m[3]);
  }
  return out;
}

/** Reads the stage's options from their PUSH_* keys (common/config-keys.ts). */
export function policyOptionsFromEnv(env: Env = process.env): PolicyOptions {
  return {
    mentionRule: readKey(env, KEYS.PUSH_MENTION_RULE),
    mentionAllCounts: readKey(env, KEYS.PUSH_MENTION_ALL),
    genericTitle: readKey(env, KEYS.PUSH_GENERIC_TITLE),
    genericText: readKey(env, KEYS.PUSH_GENERIC_TEXT),
    quotas: parseQuotas(readKey(env, KEYS.PUSH_VENDOR_QUOTAS)),
    partitionCount: readKey(env, KEYS.PUSH_PARTITIONS),
    quotaTimeZone: readKey(env, KEYS.PUSH_QUOTA_TIME_ZONE),
    deferredRelease: readKey(env, KEYS.PUSH_QUIET_HOURS_RELEASE),
    summaryMaxChars: readKey(env, KEYS.PUSH_SUMMARY_MAX_CHARS),
  };
}
