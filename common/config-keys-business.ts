/**
 * The `PUSH_BUSINESS_*` keys of the business lane (docs/entry.md), declared like every key
 * (common/config-keys.ts spreads them into CONFIG_KEYS, so the README table, `pushctl config` and
 * the readers see them there). Kept in their own file to keep common/config-keys.ts short.
 */
import type { IntKey, StringKey } from './config-key-kinds.ts';

const DAY = 86_400_000;

export const BUSINESS_KEYS = {
  PUSH_BUSINESS_STRATEGIES: {
    kind: 'string',
    key: 'PUSH_BUSINESS_STRATEGIES',
    section: 'business',
    default: '',
    defaultDoc: 'the built-in defaults (docs/entry.md)',
    doc: 'a JSON file of the common strategies: `{"default": {...}, "overrides": {"<sender>" or "<sender>/<app>": {...}}}` (docs/entry.md, "Strategies and their defaults")',
  },
  PUSH_BUSINESS_TEMPLATES: {
    kind: 'string',
    key: 'PUSH_BUSINESS_TEMPLATES',
    section: 'business',
    default: '',
    defaultDoc: 'none',
    doc: 'a JSON file of templates, `{"<id>": {"title": "...", "body": "..."}}` with `{name}` placeholders',
  },
  PUSH_BUSINESS_IDEMPOTENCY_TTL_MS: {
    kind: 'int',
    key: 'PUSH_BUSINESS_IDEMPOTENCY_TTL_MS',
    section: 'business',
    default: DAY,
    defaultDoc: '86 400 000',
    min: 60_000,
    max: 30 * DAY,
    doc: "how long a sender's idempotency key is remembered per user, ms",
  },
  PUSH_BUSINESS_DEFAULT_TIME_ZONE: {
    kind: 'string',
    key: 'PUSH_BUSINESS_DEFAULT_TIME_ZONE',
    section: 'business',
    default: 'Asia/Shanghai',
    doc: 'the IANA zone of the night rule for users without settings',
  },
  PUSH_BUSINESS_QUOTA_SHARE_PERCENT: {
    kind: 'int',
    key: 'PUSH_BUSINESS_QUOTA_SHARE_PERCENT',
    section: 'business',
    default: 30,
    min: 0,
    max: 100,
    doc: "the business lane's share of each vendor's daily quota (`PUSH_VENDOR_QUOTAS`), %; the rest is reserved for IM",
  },
  PUSH_BUSINESS_VENDOR_RATE_PERCENT: {
    kind: 'int',
    key: 'PUSH_BUSINESS_VENDOR_RATE_PERCENT',
    section: 'business',
    default: 30,
    min: 1,
    max: 100,
    doc: "the business fan-out's share of each vendor's rate and concurrency (the apps file's limits), %: its own gates, beside IM's",
  },
} as const satisfies Record<string, IntKey | StringKey>;
