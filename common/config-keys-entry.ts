/**
 * The keys of the HTTP entry (`pushctl entry`, docs/entry.md) and of the campaign expansion (stage
 * `campaigns`), declared like every key (common/config-keys.ts spreads them into CONFIG_KEYS, so the
 * README table, `pushctl config` and the readers see them there).
 */
import { int, str } from './config-key-kinds.ts';

export const ENTRY_KEYS = {
  PUSH_ENTRY_HOST: str({ key: 'PUSH_ENTRY_HOST', section: 'workers', default: '127.0.0.1', doc: '`pushctl entry` address' }),
  PUSH_ENTRY_PORT: int({ key: 'PUSH_ENTRY_PORT', section: 'workers', default: 18095, min: 0, max: 65535, doc: '`pushctl entry` port (0 = any free port)' }),
  PUSH_ENTRY_MAX_BODY_BYTES: int({
    key: 'PUSH_ENTRY_MAX_BODY_BYTES',
    section: 'workers',
    default: 900_000,
    min: 1024,
    max: 16 * 1_048_576,
    doc: "larger requests get 413; a campaign goes to Kafka as one record, so keep it under the topic's `max.message.bytes`",
  }),
  PUSH_ENTRY_MAX_CONNECTIONS: int({
    key: 'PUSH_ENTRY_MAX_CONNECTIONS',
    section: 'workers',
    default: 1_024,
    min: 1,
    max: 100_000,
    doc: '`pushctl entry`: open connections; more are closed at once',
  }),
  PUSH_ENTRY_KEY_REQUESTS_PER_SECOND: int({
    key: 'PUSH_ENTRY_KEY_REQUESTS_PER_SECOND',
    section: 'workers',
    default: 200,
    min: 1,
    max: 1_000_000,
    doc: 'requests per API key and second (a key may set its own in `push_business_key`); more get 429 with Retry-After',
  }),
  // Twice the default sender rate: expanding faster than a campaign can be sent only moves its backlog from the
  // uid list into the business stage's kept requests (changelogged state) and loads the broker in a burst.
  PUSH_CAMPAIGN_EXPANSION_RATE: int({
    key: 'PUSH_CAMPAIGN_EXPANSION_RATE',
    section: 'workers',
    default: 1_000,
    min: 1,
    max: 1_000_000,
    doc: 'per-user requests one campaign-expansion task produces per second at most',
  }),
  // Calibrated on the 2-core bench box (docs/entry.md, "Campaigns yield to IM"): a broker round trip's median
  // stays within 2 ms of its base with only a campaign running and rises 5–25 ms with IM pushes beside it.
  PUSH_CAMPAIGN_YIELD_DELAY_MS: int({
    key: 'PUSH_CAMPAIGN_YIELD_DELAY_MS',
    section: 'workers',
    default: 3,
    min: 0,
    max: 60_000,
    doc: 'broker round-trip delay over its base at which the campaign expansion halves its rate (down to 2 %); 0 expands at the full rate always',
  }),
  PUSH_CAMPAIGN_MAX_UIDS: int({
    key: 'PUSH_CAMPAIGN_MAX_UIDS',
    section: 'workers',
    default: 1_000_000,
    min: 1,
    max: 100_000_000,
    doc: 'distinct uids of one campaign at most; a larger one goes to push.dlq',
  }),
  PUSH_CAMPAIGN_UID_DIR: str({
    key: 'PUSH_CAMPAIGN_UID_DIR',
    section: 'workers',
    default: '',
    defaultDoc: '— (uid files refused)',
    doc: 'folder the `uid_file` of a campaign must lie in (a relative name is taken from it)',
  }),
};
