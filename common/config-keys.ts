/**
 * Every `PUSH_*` configuration key, declared once: its type, default, allowed range or values, and
 * what it means. The env readers (common/config.ts `readKey`), the option validators (`checkKey`),
 * the README's configuration table and `pushctl config` are all built from these declarations
 * (common/config-table.ts renders them; test/static/config-table.test.ts fails when the README
 * differs).
 */

import { BUSINESS_KEYS } from './config-keys-business.ts';
import { ENTRY_KEYS } from './config-keys-entry.ts';
import { SECURITY_KEYS } from './config-keys-security.ts';
import { bool, DAY, HOUR, int, list, MINUTE, oneOf, SECOND, str, type ConfigKey } from './config-key-kinds.ts';

export { CONFIG_SECTIONS } from './config-key-kinds.ts';
export type { BoolKey, ConfigKey, ConfigSection, EnumKey, IntKey, ListKey, StringKey } from './config-key-kinds.ts';

/** The pipeline's stages, each defined once in pipeline/apps/ (pipeline/apps/index.ts `STAGE_DEFINITIONS` maps every name to its definition). */
export const STAGE_NAMES = ['decisions', 'fan-out', 'receipts', 'clickhouse', 'campaigns', 'business', 'fan-out-business'] as const;
/**
 * The stages on an IM push's path from persisted message to vendor. The others (receipts, the
 * ClickHouse sink, the business lane) wait on nobody's notification: run in workers of their own
 * at a lower CPU priority (PUSH_STAGES), they never take an event-path worker's event loop.
 */
export const EVENT_PATH_STAGE_NAMES = ['decisions', 'fan-out'] as const satisfies ReadonlyArray<(typeof STAGE_NAMES)[number]>;
export const BACKGROUND_STAGE_NAMES = STAGE_NAMES.filter((s) => !(EVENT_PATH_STAGE_NAMES as readonly string[]).includes(s));
export const PROCESSING_GUARANTEES = ['exactly_once', 'at_least_once'] as const;
export const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const;
export const MERGE_MODES = ['leading', 'trailing-only'] as const;
export const MENTION_RULES = ['none', 'mute', 'mute-and-quiet-hours'] as const;

export const CONFIG_KEYS = {
  // Endpoints. The defaults are the local stack's; each port moves with PUSH_STACK_<NAME>_PORT (common/endpoints.ts).
  PUSH_KAFKA_BROKERS: list({ key: 'PUSH_KAFKA_BROKERS', section: 'endpoints', default: ['127.0.0.1:19092'], doc: 'comma-separated bootstrap brokers' }),
  PUSH_SCHEMA_REGISTRY_URL: str({
    key: 'PUSH_SCHEMA_REGISTRY_URL',
    section: 'endpoints',
    default: 'http://127.0.0.1:18081/apis/ccompat/v7',
    doc: 'Confluent-compatible registry API root',
  }),
  PUSH_MYSQL_URL: str({ key: 'PUSH_MYSQL_URL', section: 'endpoints', default: 'mysql://root@127.0.0.1:3306/offline_push', doc: 'push tasks and tokens' }),
  PUSH_MYSQL_SHARDS: list({
    key: 'PUSH_MYSQL_SHARDS',
    section: 'endpoints',
    default: [],
    defaultDoc: 'PUSH_MYSQL_URL alone',
    itemName: 'MySQL URL',
    secret: true,
    doc: 'comma-separated mysql:// URLs of the uid shards, in shard order; a user lives on shard `CRC32(uid) % N` (docs/data.md, "Shards")',
  }),
  PUSH_CLICKHOUSE_URL: str({ key: 'PUSH_CLICKHOUSE_URL', section: 'endpoints', default: 'http://127.0.0.1:8123', doc: 'ClickHouse HTTP interface' }),
  PUSH_CLICKHOUSE_DATABASE: str({ key: 'PUSH_CLICKHOUSE_DATABASE', section: 'endpoints', default: 'offline_push', doc: 'database of the push events' }),
  PUSH_CLICKHOUSE_USER: str({ key: 'PUSH_CLICKHOUSE_USER', section: 'endpoints', default: 'default', doc: 'ClickHouse user' }),
  PUSH_CLICKHOUSE_PASSWORD: str({ key: 'PUSH_CLICKHOUSE_PASSWORD', section: 'endpoints', default: '', doc: 'ClickHouse password', secret: true }),

  // Workers.
  PUSH_APPLICATION_ID: str({
    key: 'PUSH_APPLICATION_ID',
    section: 'workers',
    default: 'offline-push',
    nonEmpty: true,
    doc: 'prefix of consumer groups (`<id>-<stage>`), changelog topics and transactional ids',
  }),
  PUSH_STAGES: list({
    key: 'PUSH_STAGES',
    section: 'workers',
    default: STAGE_NAMES,
    values: STAGE_NAMES,
    itemName: 'stage',
    doc: 'the stages this worker runs, comma-separated',
  }),
  PUSH_PROCESSING_GUARANTEE: oneOf(PROCESSING_GUARANTEES, {
    key: 'PUSH_PROCESSING_GUARANTEE',
    section: 'workers',
    default: 'exactly_once',
    doc: 'the ClickHouse sink always runs at-least-once (its events dedupe)',
  }),
  PUSH_COMMIT_INTERVAL_MS: int({
    key: 'PUSH_COMMIT_INTERVAL_MS',
    section: 'workers',
    default: 500,
    defaultDoc: '500 (exactly_once), 100 (exactly_once with `PUSH_FAN_OUT_FUSED=false`), 1000 (at_least_once)',
    min: 10,
    max: MINUTE,
    doc: 'commit interval of the event path (decisions, and the fan-out when it runs apart), ms. Fused, no vendor call waits for it: it only makes outcomes visible, and fewer transactions leave the box more CPU (docs/design.md, "Targets")',
  }),
  PUSH_CAUGHT_UP_COMMIT_MS: int({
    key: 'PUSH_CAUGHT_UP_COMMIT_MS',
    section: 'workers',
    default: 10,
    defaultDoc: 'PUSH_COMMIT_INTERVAL_MS (fused), 10 (`PUSH_FAN_OUT_FUSED=false`)',
    min: 1,
    max: MINUTE,
    doc: "a decisions task that has caught up commits this long after its previous commit instead of waiting for the commit interval, ms; at most PUSH_COMMIT_INTERVAL_MS. With the fan-out apart, the fan-out waits for the decisions' commit, hence the short default",
  }),
  PUSH_BACKGROUND_COMMIT_INTERVAL_MS: int({
    key: 'PUSH_BACKGROUND_COMMIT_INTERVAL_MS',
    section: 'workers',
    default: 3000,
    min: 10,
    max: MINUTE,
    doc: 'commit interval of the stages off the push path (receipts, ClickHouse, campaigns), ms: how soon receipts, task statuses and arrival counts become visible; each commit is a transaction per task the broker pays for in CPU (docs/design.md, "Targets")',
  }),
  PUSH_BUSINESS_COMMIT_INTERVAL_MS: int({
    key: 'PUSH_BUSINESS_COMMIT_INTERVAL_MS',
    section: 'workers',
    default: 1000,
    min: 10,
    max: MINUTE,
    doc: "commit interval of the business lane (business, fan-out-business), ms: a business push waits up to about this long between the two stages; fewer of the lane's transactions leave the broker to IM's",
  }),
  PUSH_PARTITIONS: int({
    key: 'PUSH_PARTITIONS',
    section: 'workers',
    default: 6,
    min: 1,
    max: 256,
    doc: 'partitions of topics created when missing; also splits vendor quotas per partition',
  }),
  PUSH_REPLICATION_FACTOR: int({
    key: 'PUSH_REPLICATION_FACTOR',
    section: 'workers',
    default: 1,
    min: 1,
    max: 16,
    doc: 'replicas of every topic the pipeline creates when missing (its topics, changelogs, DLQ); 3 on a cluster of 3 or more brokers (docs/operations.md, "Cluster mode")',
  }),
  PUSH_MIN_INSYNC_REPLICAS: int({
    key: 'PUSH_MIN_INSYNC_REPLICAS',
    section: 'workers',
    default: 1,
    min: 1,
    max: 16,
    rangeDoc: '1–`PUSH_REPLICATION_FACTOR`',
    doc: '`min.insync.replicas` of the topics the pipeline creates: an acks=all write (every write of the pipeline) needs this many replicas; 2 with a replication factor of 3, so one broker may be lost without losing or refusing a record',
  }),
  PUSH_CONCURRENT_PARTITIONS: int({
    key: 'PUSH_CONCURRENT_PARTITIONS',
    section: 'workers',
    default: 6,
    defaultDoc: '`PUSH_PARTITIONS`',
    min: 1,
    max: 256,
    doc: "input partitions each stage of a worker processes at once (each task commits its own transactions, so working on several hides one partition's latency); lower it to bound a worker's concurrent vendor calls and MySQL connections",
  }),
  PUSH_MAX_TASK_IDLE_MS: int({
    key: 'PUSH_MAX_TASK_IDLE_MS',
    section: 'workers',
    default: 100,
    min: 0,
    max: MINUTE,
    doc: 'how long a task waits for one of its input partitions (a mute, a token, a presence change) to catch up before it decides a message stamped later, ms; records are taken in timestamp order across a task\'s inputs either way, and each decision taken without waiting out a partition counts in push_task_enforced_processing_total (docs/design.md, "Time order"); 0 never waits',
  }),
  PUSH_DECISION_TAPS: bool({
    key: 'PUSH_DECISION_TAPS',
    section: 'workers',
    default: false,
    doc: "also write the decisions' in-memory hand-overs to push.candidates and push.merged",
  }),
  PUSH_FAN_OUT_FUSED: bool({
    key: 'PUSH_FAN_OUT_FUSED',
    section: 'workers',
    default: true,
    doc: "run the IM fan-out inside the decisions' task (no push.dispatch hop); the fan-out stage then does not run. `false`: the fan-out is an application of its own, reading push.dispatch (scaled and restarted apart from the decisions)",
  }),
  PUSH_FAN_OUT_COMMIT_WAIT_MS: int({
    key: 'PUSH_FAN_OUT_COMMIT_WAIT_MS',
    section: 'workers',
    default: 50,
    min: 0,
    max: 10_000,
    doc: "fused fan-out: how long the decisions' commit waits for vendor calls in flight before keeping them in the fan-out-parked store",
  }),
  PUSH_TOPIC_PREFIX: str({ key: 'PUSH_TOPIC_PREFIX', section: 'workers', default: '', doc: 'prefix of every topic name' }),
  PUSH_METRICS_PORT: int({
    key: 'PUSH_METRICS_PORT',
    section: 'workers',
    default: 9464,
    min: 0,
    max: 65535,
    doc: '`/metrics`, `/healthz`, `/readyz` (0 = any free port)',
  }),
  PUSH_MAX_RECORD_BYTES: int({
    key: 'PUSH_MAX_RECORD_BYTES',
    section: 'workers',
    default: 1_048_460,
    min: 1024,
    max: 100 * 1024 * 1024,
    doc: 'largest output record (key + value + headers); a larger one sends its input to the DLQ as `RECORD_TOO_LARGE`',
  }),
  PUSH_RESTART_BACKOFF_INITIAL_MS: int({
    key: 'PUSH_RESTART_BACKOFF_INITIAL_MS',
    section: 'workers',
    default: 200,
    min: 10,
    max: MINUTE,
    doc: "a stage's restarts in a row wait initial × 2ⁿ⁻¹ (jittered) up to the max, ms",
  }),
  PUSH_RESTART_BACKOFF_MAX_MS: int({
    key: 'PUSH_RESTART_BACKOFF_MAX_MS',
    section: 'workers',
    default: 30_000,
    min: 10,
    max: 10 * MINUTE,
    rangeDoc: '`PUSH_RESTART_BACKOFF_INITIAL_MS`–600 000',
    doc: 'longest wait between two restarts of a stage, ms',
  }),
  PUSH_RESTART_BACKOFF_RESET_MS: int({
    key: 'PUSH_RESTART_BACKOFF_RESET_MS',
    section: 'workers',
    default: MINUTE,
    min: SECOND,
    max: HOUR,
    doc: "running this long ends a stage's run of restarts, ms",
  }),
  PUSH_STATUS_METRICS_URLS: list({
    key: 'PUSH_STATUS_METRICS_URLS',
    section: 'workers',
    default: [],
    defaultDoc: "this host's `PUSH_METRICS_PORT`",
    doc: "workers' `/metrics` URLs `pushctl status` reads restarts and apps file versions from; `pushctl apps reload` posts to `/-/reload` on each",
  }),
  PUSH_APPS_CONFIG: str({
    key: 'PUSH_APPS_CONFIG',
    section: 'workers',
    default: '',
    defaultDoc: '—',
    doc: 'vendor apps JSON file (docs/vendors.md); required for fan-out, receipts and the receiver',
  }),
  PUSH_APPS_RELOAD_DEBOUNCE_MS: int({
    key: 'PUSH_APPS_RELOAD_DEBOUNCE_MS',
    section: 'workers',
    default: 500,
    min: 0,
    max: MINUTE,
    doc: 'a worker reloads its apps file this long after the last change it saw in the file\'s folder, ms (a file written in steps is read once, whole); `SIGHUP` and `pushctl apps reload` reload at once (docs/operations.md, "Reloading the apps file")',
  }),
  PUSH_CREDENTIAL_EXPIRY_WARN_DAYS: int({
    key: 'PUSH_CREDENTIAL_EXPIRY_WARN_DAYS',
    section: 'workers',
    default: 30,
    min: 1,
    max: 365,
    doc: 'a vendor credential of the apps file expiring within this many days (an APNs provider certificate) is logged as a warning at start, after a reload and daily; `push_credential_expiry_seconds` shows the seconds left',
  }),
  PUSH_RECEIVER: bool({
    key: 'PUSH_RECEIVER',
    section: 'workers',
    default: false,
    doc: 'also serve vendor receipt callbacks in the worker (`pushctl receiver` runs them in a process of their own)',
  }),
  PUSH_RECEIPTS_CONFIG: str({
    key: 'PUSH_RECEIPTS_CONFIG',
    section: 'workers',
    default: '',
    defaultDoc: '—',
    doc: 'receipt callback credentials per app (docs/vendors.md); required by the receiver',
  }),
  PUSH_RECEIPTS_HOST: str({ key: 'PUSH_RECEIPTS_HOST', section: 'workers', default: '127.0.0.1', doc: 'receiver address' }),
  PUSH_RECEIPTS_PORT: int({ key: 'PUSH_RECEIPTS_PORT', section: 'workers', default: 18090, min: 0, max: 65535, doc: 'receiver port (0 = any free port)' }),
  PUSH_RECEIPTS_MAX_BODY_BYTES: int({
    key: 'PUSH_RECEIPTS_MAX_BODY_BYTES',
    section: 'workers',
    default: 1_048_576,
    min: 1024,
    max: 16 * 1_048_576,
    doc: 'larger callbacks get 413',
  }),
  PUSH_RECEIPTS_HMS_MAX_SKEW_MS: int({
    key: 'PUSH_RECEIPTS_HMS_MAX_SKEW_MS',
    section: 'workers',
    default: 5 * MINUTE,
    min: SECOND,
    max: HOUR,
    doc: 'allowed clock skew of HMS callback signatures; HMS nonces are remembered twice as long in MySQL (`push_receipt_nonce`, shared by every receiver)',
  }),
  PUSH_RECEIPT_JOIN_MAX_ENTRIES: int({
    key: 'PUSH_RECEIPT_JOIN_MAX_ENTRIES',
    section: 'workers',
    default: 100_000,
    min: 1,
    max: 100_000_000,
    doc: 'submissions one receipts task keeps waiting for their receipts (about 1 KB of heap each); past it, the entries due soonest are forgotten early and counted in push_receipt_join_evictions_total',
  }),
  PUSH_RECEIPTS_HEADERS_TIMEOUT_MS: int({
    key: 'PUSH_RECEIPTS_HEADERS_TIMEOUT_MS',
    section: 'workers',
    default: 5_000,
    min: 100,
    max: MINUTE,
    doc: "a connection's request headers must be complete this long after it opened or was last answered, else it is closed",
  }),
  PUSH_RECEIPTS_BODY_TIMEOUT_MS: int({
    key: 'PUSH_RECEIPTS_BODY_TIMEOUT_MS',
    section: 'workers',
    default: 10_000,
    min: 100,
    max: 2 * MINUTE,
    doc: "an authenticated callback's body must arrive within this, else 408 and the connection is closed",
  }),
  PUSH_RECEIPTS_MAX_CONNECTIONS: int({
    key: 'PUSH_RECEIPTS_MAX_CONNECTIONS',
    section: 'workers',
    default: 1_024,
    min: 1,
    max: 100_000,
    doc: 'open connections; more are closed at once',
  }),
  PUSH_RECEIPTS_MAX_CONNECTIONS_PER_CLIENT: int({
    key: 'PUSH_RECEIPTS_MAX_CONNECTIONS_PER_CLIENT',
    section: 'workers',
    default: 64,
    min: 1,
    max: 100_000,
    doc: 'open connections per remote address',
  }),
  PUSH_RECEIPTS_CLIENT_REQUESTS_PER_SECOND: int({
    key: 'PUSH_RECEIPTS_CLIENT_REQUESTS_PER_SECOND',
    section: 'workers',
    default: 1_000,
    min: 1,
    max: 1_000_000,
    doc: 'requests per remote address and second; more get 429',
  }),
  PUSH_RECEIPTS_METRICS_PORT: int({
    key: 'PUSH_RECEIPTS_METRICS_PORT',
    section: 'workers',
    default: 9474,
    min: 0,
    max: 65535,
    doc: '`pushctl receiver` only: `/metrics`, `/healthz`, `/readyz` on 127.0.0.1 (0 = any free port)',
  }),
  PUSH_LOG_LEVEL: oneOf(LOG_LEVELS, { key: 'PUSH_LOG_LEVEL', section: 'workers', default: 'info', doc: 'secrets and device tokens are always redacted' }),

  // Decisions.
  PUSH_HEARTBEAT_TIMEOUT_MS: int({
    key: 'PUSH_HEARTBEAT_TIMEOUT_MS',
    section: 'decisions',
    default: 90_000,
    min: SECOND,
    max: HOUR,
    doc: 'a device is connected while its last heartbeat is younger, ms',
  }),
  PUSH_HOLD_WINDOW_MS: int({
    key: 'PUSH_HOLD_WINDOW_MS',
    section: 'decisions',
    default: 10_000,
    min: 5_000,
    max: 30_000,
    doc: 'how long an online device may ACK before it is pushed, ms',
  }),
  PUSH_BACKGROUND_COOLDOWN_MS: int({
    key: 'PUSH_BACKGROUND_COOLDOWN_MS',
    section: 'decisions',
    default: 10_000,
    min: 0,
    max: 10 * MINUTE,
    doc: 'no second push to a device within this after BACKGROUND/EXIT, ms',
  }),
  PUSH_MERGE_WINDOW_MS: int({
    key: 'PUSH_MERGE_WINDOW_MS',
    section: 'decisions',
    default: 5_000,
    min: 1,
    max: 10_000,
    doc: 'merge window per (uid, conv_id), ms',
  }),
  PUSH_MERGE_MODE: oneOf(MERGE_MODES, {
    key: 'PUSH_MERGE_MODE',
    section: 'decisions',
    default: 'leading',
    doc: '`leading` (push at once, one silent trailing update) or `trailing-only`',
  }),
  PUSH_MERGE_RETENTION_MS: int({
    key: 'PUSH_MERGE_RETENTION_MS',
    section: 'decisions',
    default: MINUTE,
    min: 0,
    max: DAY,
    doc: "how long a closed window's highest pushed seq is remembered, ms",
  }),
  PUSH_MERGE_MAX_ENTRIES: int({
    key: 'PUSH_MERGE_MAX_ENTRIES',
    section: 'decisions',
    default: 500_000,
    min: 1,
    max: 100_000_000,
    doc: '(uid, conv_id) entries one merge task keeps; over it the entry due soonest closes early (its trailing update goes out) or is forgotten',
  }),
  PUSH_MENTION_RULE: oneOf(MENTION_RULES, { key: 'PUSH_MENTION_RULE', section: 'decisions', default: 'mute', doc: 'what an @mention overrides' }),
  PUSH_MENTION_ALL: bool({ key: 'PUSH_MENTION_ALL', section: 'decisions', default: false, doc: 'whether @all counts as a mention' }),
  PUSH_GENERIC_TITLE: str({ key: 'PUSH_GENERIC_TITLE', section: 'decisions', default: 'New message', doc: 'the title of private-mode and sensitive pushes' }),
  PUSH_GENERIC_TEXT: str({
    key: 'PUSH_GENERIC_TEXT',
    section: 'decisions',
    default: 'You have a new message',
    nonEmpty: true,
    doc: 'the text of private-mode and sensitive pushes',
  }),
  PUSH_SUMMARY_MAX_CHARS: int({
    key: 'PUSH_SUMMARY_MAX_CHARS',
    section: 'decisions',
    default: 100,
    min: 1,
    max: 100,
    doc: 'summaries are cut to this many characters',
  }),
  PUSH_VENDOR_QUOTAS: str({
    key: 'PUSH_VENDOR_QUOTAS',
    section: 'decisions',
    default: '',
    defaultDoc: 'none',
    doc: 'daily quotas, `vendor:app=count,...` (`*` for any app)',
  }),
  PUSH_QUOTA_TIME_ZONE: str({
    key: 'PUSH_QUOTA_TIME_ZONE',
    section: 'decisions',
    default: 'Asia/Shanghai',
    doc: 'the IANA zone in which vendor quota days start',
  }),
  PUSH_QUIET_HOURS_RELEASE: bool({
    key: 'PUSH_QUIET_HOURS_RELEASE',
    section: 'decisions',
    default: false,
    doc: 'release one push per unread conversation when quiet hours end',
  }),
  PUSH_INGEST_MAX_PAST_SKEW_MS: int({
    key: 'PUSH_INGEST_MAX_PAST_SKEW_MS',
    section: 'decisions',
    default: 7 * DAY,
    min: MINUTE,
    max: 365 * DAY,
    doc: 'event times (persisted_at, presence, receipts) older than this go to the DLQ, ms; docs/design.md, "Ingest validation"',
  }),
  PUSH_INGEST_MAX_FUTURE_SKEW_MS: int({
    key: 'PUSH_INGEST_MAX_FUTURE_SKEW_MS',
    section: 'decisions',
    default: 5 * MINUTE,
    min: SECOND,
    max: DAY,
    doc: 'any time stamp further ahead goes to the DLQ, and the receiver answers 400, ms; also read by the receipts stage and the receiver',
  }),

  // Fan-out.
  PUSH_FANOUT_TTL_SECONDS: int({ key: 'PUSH_FANOUT_TTL_SECONDS', section: 'fan-out', default: 86_400, min: 0, max: 2_419_200, doc: 'vendor time to live, s' }),
  PUSH_FANOUT_MAX_RETRIES: int({
    key: 'PUSH_FANOUT_MAX_RETRIES',
    section: 'fan-out',
    default: 3,
    min: 1,
    max: 10,
    doc: 'calls per channel for 5xx/network answers',
  }),
  PUSH_FANOUT_RETRY_MAX_AGE_MS: int({
    key: 'PUSH_FANOUT_RETRY_MAX_AGE_MS',
    section: 'fan-out',
    default: HOUR,
    defaultDoc: '3 600 000',
    min: 0,
    max: DAY,
    doc: 'how long a push on its last channel (or with an unknown outcome) keeps being retried after 5xx/timeout/network answers, ms since decided (0 = off)',
  }),
  PUSH_FANOUT_UNKNOWN_RETRY_MAX_AGE_MS: int({
    key: 'PUSH_FANOUT_UNKNOWN_RETRY_MAX_AGE_MS',
    section: 'fan-out',
    default: HOUR,
    defaultDoc: '3 600 000',
    min: 0,
    max: DAY,
    doc: 'the older name of `PUSH_FANOUT_RETRY_MAX_AGE_MS`, read only when that is unset',
  }),
  PUSH_FANOUT_MAX_PARKED: int({
    key: 'PUSH_FANOUT_MAX_PARKED',
    section: 'fan-out',
    default: 50_000,
    min: 1,
    max: 10_000_000,
    doc: "pushes one fan-out task keeps parked (waiting out retryable answers or a vendor's pause); one more ends the oldest parked push FAILED `parked_evicted`",
  }),
  PUSH_FANOUT_MAX_THROTTLED: int({
    key: 'PUSH_FANOUT_MAX_THROTTLED',
    section: 'fan-out',
    default: 4,
    min: 1,
    max: 20,
    doc: 'calls per channel when throttled and no other channel is left',
  }),
  PUSH_FANOUT_MAX_IN_FLIGHT: int({
    key: 'PUSH_FANOUT_MAX_IN_FLIGHT',
    section: 'fan-out',
    default: 256,
    min: 1,
    max: 100_000,
    doc: 'dispatches in flight per task before back pressure',
  }),
  ...SECURITY_KEYS,
  ...ENTRY_KEYS,
  ...BUSINESS_KEYS,
};

// Checked apart from the literal: a `satisfies` there would widen each enum key's values to string.
const declared: Readonly<Record<string, ConfigKey>> = CONFIG_KEYS;

export type ConfigKeyName = keyof typeof CONFIG_KEYS;

/** The declarations in README order. */
export function configKeys(): ConfigKey[] {
  return Object.values(declared);
}
