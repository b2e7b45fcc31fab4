/**
 * A worker's settings, read from its PUSH_* keys without loading the pipeline: `pushctl` checks a
 * configuration (cli/config-check.ts) before any command's clients are loaded.
 */
import { readKey, type Env } from '../common/config.ts';
import { CONFIG_KEYS, STAGE_NAMES } from '../common/config-keys.ts';
import { ConfigError } from '../common/errors.ts';
import type { ProcessingGuarantee } from '../topology/runtime.ts';
import type { TopicReplication } from '../topology/create-topics.ts';
import type { StageName } from './apps/index.ts';

/** Worker settings, read once from PUSH_* keys (declared in common/config-keys.ts; a bad value names its key). */
export interface WorkerConfig {
  /** PUSH_APPLICATION_ID: prefix of consumer groups, changelogs and transactional ids. Default offline-push. */
  readonly applicationId: string;
  /** PUSH_STAGES: comma-separated subset of the stages (common/config-keys.ts STAGE_NAMES). Default all; never fan-out with PUSH_FAN_OUT_FUSED. */
  readonly stages: StageName[];
  /** PUSH_RECEIVER: also serve the vendor receipt callbacks (receipts/). Default false; true/false, 1/0, yes/no, on/off. */
  readonly receiver: boolean;
  /** PUSH_PROCESSING_GUARANTEE: exactly_once (default) or at_least_once. */
  readonly guarantee: ProcessingGuarantee;
  /**
   * PUSH_COMMIT_INTERVAL_MS: commit interval of the event path (decisions, and the fan-out when it
   * runs apart); default 500 under exactly_once (100 with the fan-out apart, which waits for the
   * decisions' commit), 1000 otherwise; 10–60 000.
   */
  readonly commitIntervalMs: number;
  /** PUSH_CAUGHT_UP_COMMIT_MS: a caught-up decisions task commits this long after its previous commit (topology/runtime-options.ts caughtUpCommitMs); default the interval (fused) or 10; 1–commitIntervalMs. */
  readonly caughtUpCommitMs: number;
  /** PUSH_BACKGROUND_COMMIT_INTERVAL_MS: commit interval of receipts, the ClickHouse sink and campaign expansion; default 3000; 10–60 000. */
  readonly backgroundCommitIntervalMs: number;
  /** PUSH_BUSINESS_COMMIT_INTERVAL_MS: commit interval of the business lane (business, fan-out-business); default 1000; 10–60 000. */
  readonly businessCommitIntervalMs: number;
  /** PUSH_PARTITIONS: partitions of topics this worker creates when missing. Default 6. */
  readonly partitions: number;
  /** PUSH_REPLICATION_FACTOR / PUSH_MIN_INSYNC_REPLICAS: replication of every topic this worker creates. Default 1 / 1. */
  readonly replication: TopicReplication;
  /** PUSH_CONCURRENT_PARTITIONS: input partitions each stage processes at once. Default PUSH_PARTITIONS; 1–256. */
  readonly concurrentPartitions: number;
  /** PUSH_MAX_TASK_IDLE_MS: how long a task waits for an input partition to catch up (topology/task-input.ts). */
  readonly maxTaskIdleMs: number;
  /** PUSH_TOPIC_PREFIX: prefix of every topic name. Default none. */
  readonly topicPrefix: string;
  /** PUSH_METRICS_PORT: /metrics, /healthz, /readyz; 0 picks a free port. Default 9464. */
  readonly metricsPort: number;
  /** PUSH_APPS_CONFIG: the vendor apps JSON file (needed by fan-out, receipts and the receiver). */
  readonly appsConfigPath: string;
  /** PUSH_APPS_RELOAD_DEBOUNCE_MS: wait after a change in the apps file's folder before reloading it. Default 500. */
  readonly appsReloadDebounceMs: number;
  /** PUSH_CREDENTIAL_EXPIRY_WARN_DAYS: credentials expiring within this many days are logged. Default 30. */
  readonly credentialExpiryWarnDays: number;
  /** PUSH_MAX_RECORD_BYTES: largest output record (key + value + headers); larger ones go to the DLQ as RECORD_TOO_LARGE. Default 1,048,460; 1 024–104 857 600. */
  readonly maxRecordBytes: number;
  /** PUSH_RESTART_BACKOFF_INITIAL_MS / _MAX_MS / _RESET_MS: restart backoff of each stage (topology/runtime-options.ts). Defaults 200, 30 000, 60 000. */
  readonly restartBackoff: { readonly initialMs: number; readonly maxMs: number; readonly resetMs: number };
}

/**
 * PUSH_CAUGHT_UP_COMMIT_MS, never above the commit interval. Default 10 with the fan-out apart
 * (`fused` false: it waits for the decisions' commit; also the bench's latency floor,
 * bench/hop-latency.ts); fused, the interval itself, since no push waits for the commit.
 */
export function readCaughtUpCommitMs(env: Env, commitIntervalMs: number): number {
  const key = CONFIG_KEYS.PUSH_CAUGHT_UP_COMMIT_MS;
  const fused = readKey(env, CONFIG_KEYS.PUSH_FAN_OUT_FUSED);
  return readKey(env, key, fused ? commitIntervalMs : Math.min(key.default, commitIntervalMs), { min: key.min, max: commitIntervalMs });
}

/** The event path's commit interval under exactly_once with the fan-out apart (`PUSH_FAN_OUT_FUSED=false`), ms: the decisions' commit is on the push's path. */
const SEPARATE_FAN_OUT_COMMIT_INTERVAL_MS = 100;

/** PUSH_COMMIT_INTERVAL_MS as a worker with `env` reads it: its default depends on the guarantee and on PUSH_FAN_OUT_FUSED. */
export function readCommitIntervalMs(env: Env): number {
  const key = CONFIG_KEYS.PUSH_COMMIT_INTERVAL_MS;
  if (readKey(env, CONFIG_KEYS.PUSH_PROCESSING_GUARANTEE) !== 'exactly_once') return readKey(env, key, 1000);
  return readKey(env, key, readKey(env, CONFIG_KEYS.PUSH_FAN_OUT_FUSED) ? key.default : SEPARATE_FAN_OUT_COMMIT_INTERVAL_MS);
}

/**
 * The stages a deployment with these settings runs, of all STAGE_NAMES: fused (PUSH_FAN_OUT_FUSED), the
 * IM fan-out runs inside the decisions' task (pipeline/apps/decisions.ts) and its own stage does
 * not run: it would read a push.dispatch nobody writes (or, with taps, send each push twice).
 */
export function deployedStages(env: Env = process.env): StageName[] {
  const fused = readKey(env, CONFIG_KEYS.PUSH_FAN_OUT_FUSED);
  return STAGE_NAMES.filter((s) => !(fused && s === 'fan-out'));
}

export function readWorkerConfig(env: Env = process.env): WorkerConfig {
  const deployed = deployedStages(env);
  const stages = (readKey(env, CONFIG_KEYS.PUSH_STAGES) as StageName[]).filter((s) => deployed.includes(s));
  const guarantee = readKey(env, CONFIG_KEYS.PUSH_PROCESSING_GUARANTEE);
  const receiver = readKey(env, CONFIG_KEYS.PUSH_RECEIVER);
  const appsConfigPath = readKey(env, CONFIG_KEYS.PUSH_APPS_CONFIG);
  // Fused, the decisions send pushes themselves (and no fan-out stage is deployed).
  const fused = readKey(env, CONFIG_KEYS.PUSH_FAN_OUT_FUSED);
  const sends = (s: StageName) => s === 'fan-out' || s === 'receipts' || (s === 'decisions' && fused);
  if (appsConfigPath === '' && (receiver || stages.some(sends))) {
    throw new ConfigError('PUSH_APPS_CONFIG', 'the fan-out, receipts and receiver need the vendor apps JSON file (see docs/vendors.md)');
  }
  const partitions = readKey(env, CONFIG_KEYS.PUSH_PARTITIONS);
  const backoffInitialMs = readKey(env, CONFIG_KEYS.PUSH_RESTART_BACKOFF_INITIAL_MS);
  const backoffMax = CONFIG_KEYS.PUSH_RESTART_BACKOFF_MAX_MS;
  const commitIntervalMs = readCommitIntervalMs(env);
  return Object.freeze({
    applicationId: readKey(env, CONFIG_KEYS.PUSH_APPLICATION_ID),
    stages,
    receiver,
    guarantee,
    commitIntervalMs,
    caughtUpCommitMs: readCaughtUpCommitMs(env, commitIntervalMs),
    backgroundCommitIntervalMs: readKey(env, CONFIG_KEYS.PUSH_BACKGROUND_COMMIT_INTERVAL_MS),
    businessCommitIntervalMs: readKey(env, CONFIG_KEYS.PUSH_BUSINESS_COMMIT_INTERVAL_MS),
    partitions,
    replication: readReplication(env),
    concurrentPartitions: readKey(env, CONFIG_KEYS.PUSH_CONCURRENT_PARTITIONS, partitions),
    maxTaskIdleMs: readKey(env, CONFIG_KEYS.PUSH_MAX_TASK_IDLE_MS),
    topicPrefix: readKey(env, CONFIG_KEYS.PUSH_TOPIC_PREFIX),
    metricsPort: readKey(env, CONFIG_KEYS.PUSH_METRICS_PORT),
    appsConfigPath,
    appsReloadDebounceMs: readKey(env, CONFIG_KEYS.PUSH_APPS_RELOAD_DEBOUNCE_MS),
    credentialExpiryWarnDays: readKey(env, CONFIG_KEYS.PUSH_CREDENTIAL_EXPIRY_WARN_DAYS),
    maxRecordBytes: readKey(env, CONFIG_KEYS.PUSH_MAX_RECORD_BYTES),
    restartBackoff: Object.freeze({
      initialMs: backoffInitialMs,
      maxMs: readKey(env, backoffMax, Math.max(backoffInitialMs, backoffMax.default), { min: backoffInitialMs, max: backoffMax.max }),
      resetMs: readKey(env, CONFIG_KEYS.PUSH_RESTART_BACKOFF_RESET_MS),
    }),
  });
}

/**
 * PUSH_REPLICATION_FACTOR and PUSH_MIN_INSYNC_REPLICAS (default 1 and 1, the single broker): the
 * replication of every topic the pipeline creates. min.insync.replicas above the factor would
 * refuse every write, so it is refused at start, naming the key.
 */
export function readReplication(env: Env = process.env): TopicReplication {
  const factor = readKey(env, CONFIG_KEYS.PUSH_REPLICATION_FACTOR);
  const minKey = CONFIG_KEYS.PUSH_MIN_INSYNC_REPLICAS;
  return Object.freeze({ factor, minInsyncReplicas: readKey(env, minKey, Math.min(factor, minKey.default), { min: minKey.min, max: factor }) });
}
