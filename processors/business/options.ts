/**
 * Options of the business application (docs/entry.md, "Strategies and their defaults"): the common
 * strategies every sender used to re-implement, with defaults, overridable per sender and per
 * (sender, app). Validated once at start (ConfigError naming the key or the option's path).
 */
import type { ChildNames } from '../../topology/api.ts';
import { ConfigError } from '../../common/errors.ts';
import { checkRange } from '../../common/config.ts';
import { compileIngestRules, type IngestOptions, type IngestRules } from '../model/ingest.ts';
import { isValidTimeZone } from '../policy/quiet-hours.ts';
import type { DailyQuotas } from '../policy/quota.ts';
import type { PushCategory } from '../campaigns/records.ts';

/** What happens to a push that falls into the user's night: sent, kept until the night ends, or dropped. */
export const NIGHT_RULES = ['deliver', 'defer', 'drop'] as const;
export type NightRule = (typeof NIGHT_RULES)[number];

/** The rules of one category. */
export interface CategoryRule {
  /** Night do-not-disturb. */
  readonly night: NightRule;
  /** Pushes of this category one user may get per local day, across all senders; 0 = no cap. */
  readonly dailyCap: number;
}

/** The strategies that apply to one request (the defaults, with a sender's and a (sender, app)'s overrides on top). */
export interface StrategySet {
  readonly categories: Readonly<Record<PushCategory, CategoryRule>>;
  /**
   * The night when the user has no quiet hours of their own, local minutes [start, end) in the
   * user's zone; a start after the end crosses midnight.
   */
  readonly nightStartMinute: number;
  readonly nightEndMinute: number;
  /** Requests per second the sender may send, whole pipeline (each partition gets its share); 0 = unlimited. */
  readonly senderRatePerSecond: number;
}

/** An override: any part of a StrategySet, categories per field. */
export interface StrategyOverride {
  readonly categories?: Partial<Record<PushCategory, Partial<CategoryRule>>>;
  readonly nightStartMinute?: number;
  readonly nightEndMinute?: number;
  readonly senderRatePerSecond?: number;
}

export const DEFAULT_STRATEGIES: StrategySet = Object.freeze({
  categories: Object.freeze({
    NOTICE: Object.freeze({ night: 'deliver', dailyCap: 0 }),
    REMINDER: Object.freeze({ night: 'defer', dailyCap: 0 }),
    CAMPAIGN: Object.freeze({ night: 'defer', dailyCap: 2 }),
  }),
  nightStartMinute: 22 * 60,
  nightEndMinute: 8 * 60,
  senderRatePerSecond: 500,
} as const);

/** The categories (every one has its rule in the defaults). */
export const CATEGORIES = Object.keys(DEFAULT_STRATEGIES.categories) as readonly PushCategory[];

/** A template: `{name}` placeholders filled from the request's template_params. */
export interface Template {
  readonly title: string;
  readonly body: string;
}

export interface BusinessOptions {
  /** The strategies of a sender without override. Env PUSH_BUSINESS_STRATEGIES (its `default` entry). */
  readonly strategies?: StrategyOverride;
  /** Overrides keyed by sender or `sender/app_id` (the latter wins). Env PUSH_BUSINESS_STRATEGIES (its `overrides`). */
  readonly overrides?: Readonly<Record<string, StrategyOverride>>;
  /** Templates by id. Env PUSH_BUSINESS_TEMPLATES (a JSON file). */
  readonly templates?: Readonly<Record<string, Template>>;
  /** How long a (uid, sender, idempotency key) is remembered, ms. Env PUSH_BUSINESS_IDEMPOTENCY_TTL_MS; default 86 400 000. */
  readonly idempotencyTtlMs?: number;
  /** Zone of a user without settings. Env PUSH_BUSINESS_DEFAULT_TIME_ZONE; default `Asia/Shanghai`. */
  readonly defaultTimeZone?: string;
  /**
   * The business lane's share of each vendor's daily quota (PUSH_VENDOR_QUOTAS): the rest stays
   * reserved for IM. Env PUSH_BUSINESS_QUOTA_SHARE_PERCENT; default 30; 0–100.
   */
  readonly quotaSharePercent?: number;
  /** Daily quotas per vendor and app, as the policy reads them (PUSH_VENDOR_QUOTAS). */
  readonly quotas?: DailyQuotas;
  /** Partitions of the input topics (PUSH_PARTITIONS): quotas and sender rates are split by it. Default 1. */
  readonly partitionCount?: number;
  /** Zone whose midnight starts a quota day (PUSH_QUOTA_TIME_ZONE). Default `Asia/Shanghai`. */
  readonly quotaTimeZone?: string;
  /** Wall-clock interval of the release check (deferred pushes), ms. Default 200; 10–60 000. */
  readonly releaseCheckIntervalMs?: number;
  /** Most deferred pushes released per check and task. Default 2 000. */
  readonly releaseBatch?: number;
  /** Whether a campaign is cancelled (processors/campaigns): its kept and later requests end SUPPRESSED `campaign_cancelled`. */
  readonly cancelled?: (campaignId: string) => boolean;
  readonly ingest?: IngestOptions;
  readonly outputs?: { readonly dispatch?: ChildNames; readonly outcomes?: ChildNames };
  readonly stores?: Partial<BusinessStoreNames>;
}

export interface BusinessStoreNames {
  /** uid → devices → tokens (push.tokens). */
  readonly tokens: string;
  /** uid → settings (push.settings), with opt-outs. */
  readonly settings: string;
  /** [uid, sender, idempotency key] → when it is forgotten (a timer store: its due time is the expiry). */
  readonly idempotency: string;
  /** [uid, category] → { day, count }: the frequency counters. */
  readonly frequency: string;
  /** sender → the earliest time its next request may go (virtual schedule of the rate limit). */
  readonly senderRate: string;
  /** request id → the kept request (night deferral, rate limit). */
  readonly deferred: string;
  readonly deferredTimers: string;
  /** (vendor, app, day) → business submissions charged on this partition. */
  readonly quotaLedger: string;
}

export const BUSINESS_STORE_NAMES: BusinessStoreNames = {
  tokens: 'business-tokens',
  settings: 'business-settings',
  idempotency: 'business-idempotency',
  frequency: 'business-frequency',
  senderRate: 'business-sender-rate',
  deferred: 'business-deferred',
  deferredTimers: 'business-deferred-timers',
  quotaLedger: 'business-quota-ledger',
};

export interface BusinessConfig {
  readonly defaults: StrategySet;
  readonly overrides: Readonly<Record<string, StrategyOverride>>;
  readonly templates: Readonly<Record<string, Template>>;
  readonly idempotencyTtlMs: number;
  readonly defaultTimeZone: string;
  readonly quotas: DailyQuotas;
  readonly partitionCount: number;
  readonly quotaTimeZone: string;
  readonly releaseCheckIntervalMs: number;
  readonly releaseBatch: number;
  readonly cancelled: (campaignId: string) => boolean;
  readonly ingest: IngestRules;
  readonly outputs: { readonly dispatch: ChildNames; readonly outcomes: ChildNames };
  readonly stores: BusinessStoreNames;
}

/** A StrategySet with an override on top. */
export function applyOverride(base: StrategySet, o: StrategyOverride | undefined): StrategySet {
  if (!o) return base;
  const categories = Object.fromEntries(CATEGORIES.map((c) => [c, { ...base.categories[c], ...o.categories?.[c] }])) as Record<PushCategory, CategoryRule>;
  return {
    categories,
    nightStartMinute: o.nightStartMinute ?? base.nightStartMinute,
    nightEndMinute: o.nightEndMinute ?? base.nightEndMinute,
    senderRatePerSecond: o.senderRatePerSecond ?? base.senderRatePerSecond,
  };
}

/** Checks a strategy set; `where` names it in the error (the key and the entry). */
function checkStrategies(where: string, s: StrategySet): StrategySet {
  for (const c of CATEGORIES) {
    const rule = s.categories[c];
    if (!NIGHT_RULES.includes(rule.night))
      throw new ConfigError(where, `categories.${c}.night must be one of ${NIGHT_RULES.join(', ')}, got ${JSON.stringify(rule.night)}`);
    checkRange(`${where} categories.${c}.dailyCap`, rule.dailyCap, { min: 0, max: 1_000_000 });
  }
  checkRange(`${where} nightStartMinute`, s.nightStartMinute, { min: 0, max: 1439 });
  checkRange(`${where} nightEndMinute`, s.nightEndMinute, { min: 0, max: 1439 });
  checkRange(`${where} senderRatePerSecond`, s.senderRatePerSecond, { min: 0, max: 1_000_000 });
  return s;
}

/** Validates the options once and fills the defaults. */
export function compileBusinessOptions(o: BusinessOptions = {}): BusinessConfig {
  const defaults = checkStrategies('PUSH_BUSINESS_STRATEGIES (default)', applyOverride(DEFAULT_STRATEGIES, o.strategies));
  const overrides = o.overrides ?? {};
  for (const [who, override] of Object.entries(overrides)) checkStrategies(`PUSH_BUSINESS_STRATEGIES (overrides.${who})`, applyOverride(defaults, override));
  const defaultTimeZone = o.defaultTimeZone ?? 'Asia/Shanghai';
  if (!isValidTimeZone(defaultTimeZone)) throw new ConfigError('PUSH_BUSINESS_DEFAULT_TIME_ZONE', `unknown IANA time zone ${JSON.stringify(defaultTimeZone)}`);
  const quotaTimeZone = o.quotaTimeZone ?? 'Asia/Shanghai';
  if (!isValidTimeZone(quotaTimeZone)) throw new ConfigError('PUSH_QUOTA_TIME_ZONE', `unknown IANA time zone ${JSON.stringify(quotaTimeZone)}`);
  const share = checkRange('PUSH_BUSINESS_QUOTA_SHARE_PERCENT', o.quotaSharePercent ?? 30, { min: 0, max: 100 }) / 100;
  const quotas = Object.fromEntries(
    Object.entries(o.quotas ?? {}).map(([vendor, apps]) => [
      vendor,
      Object.fromEntries(Object.entries(apps).map(([app, daily]) => [app, Math.floor(daily * share)])),
    ]),
  );
  for (const [id, t] of Object.entries(o.templates ?? {})) {
    if (typeof t?.title !== 'string' || typeof t.body !== 'string')
      throw new ConfigError('PUSH_BUSINESS_TEMPLATES', `template ${JSON.stringify(id)} needs a string title and body`);
  }
  return Object.freeze({
    defaults,
    overrides,
    templates: o.templates ?? {},
    idempotencyTtlMs: checkRange('PUSH_BUSINESS_IDEMPOTENCY_TTL_MS', o.idempotencyTtlMs ?? 86_400_000, { min: 60_000, max: 30 * 86_400_000 }),
    defaultTimeZone,
    quotas,
    partitionCount: checkRange('PUSH_PARTITIONS', o.partitionCount ?? 1, { min: 1, max: 256 }),
    quotaTimeZone,
    releaseCheckIntervalMs: checkRange('business.releaseCheckIntervalMs', o.releaseCheckIntervalMs ?? 200, { min: 10, max: 60_000 }),
    releaseBatch: checkRange('business.releaseBatch', o.releaseBatch ?? 2_000, { min: 1, max: 1_000_000 }),
    cancelled: o.cancelled ?? (() => false),
    ingest: compileIngestRules(o.ingest),
    outputs: Object.freeze({ dispatch: o.outputs?.dispatch ?? 'dispatch', outcomes: o.outputs?.outcomes ?? 'outcomes' }),
    stores: Object.freeze({ ...BUSINESS_STORE_NAMES, ...o.stores }),
  });
}

/** The strategies of one request: defaults, then the sender's override, then the (sender, app)'s. */
export function strategiesFor(config: BusinessConfig, sender: string, appId: string): StrategySet {
  return applyOverride(applyOverride(config.defaults, config.overrides[sender]), config.overrides[`${sender}/${appId}`]);
}
