import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { ROOT } from '../../stack/paths.ts';
import { CONFIG_KEYS, configKeys } from '../../common/config-keys.ts';
import { readmeConfigTable, renderConfigTable } from '../../common/config-table.ts';
import { readKey } from '../../common/config.ts';
import { ConfigError } from '../../common/errors.ts';
import { readEndpoints } from '../../common/endpoints.ts';
import { readWorkerConfig } from '../../pipeline/worker-config.ts';
import { resolveStreamsAppOptions } from '../../topology/runtime-options.ts';
import { compileMergeOptions } from '../../processors/merge/options.ts';
import { compileOnlineFilterOptions } from '../../processors/online-filter/options.ts';
import { compilePolicyOptions } from '../../processors/policy/options.ts';
import { compileIngestRules } from '../../processors/model/ingest.ts';
import { compileReceiverConfig } from '../../receipts/config.ts';
import { fanOutConfig, fanOutOptionsFromEnv, type FanOutOptions } from '../../processors/fan-out/options.ts';

/** Folders of the product (not tests, the local stack, the benchmark or the demo's own tooling). */
const SOURCE_DIRS = ['cli', 'common', 'pipeline', 'processors', 'receipts', 'sinks', 'topology', 'migrations', 'entry'];
/** A whole key: not a prefix such as `PUSH_FANOUT_*` or `PUSH_STACK_${name}_PORT`. */
const KEY = /PUSH_[A-Z0-9_]*[A-Z0-9](?![A-Z0-9_*<${])/g;

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((entry) => {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) return sources(path);
    return path.endsWith('.ts') ? [path] : [];
  });
}

test('the README configuration tables are the ones common/config-keys.ts renders (run `npx tsx docs/config-table.ts`)', () => {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  assert.equal(readmeConfigTable(readme), renderConfigTable());
});

test('every PUSH_* key the product names is declared in common/config-keys.ts, so users can set and look up each one', () => {
  // A secret key's file variant (`<KEY>_FILE`, common/config.ts) is declared with it.
  const declared = new Set<string>(configKeys().flatMap((k) => (k.secret ? [k.key, `${k.key}_FILE`] : [k.key])));
  const undeclared: string[] = [];
  for (const file of SOURCE_DIRS.flatMap((d) => sources(join(ROOT, d)))) {
    for (const match of readFileSync(file, 'utf8').matchAll(KEY)) {
      // PUSH_STACK_* keys belong to the local stack (README, "The local stack"), read by stack/.
      if (!declared.has(match[0]) && !match[0].startsWith('PUSH_STACK_')) undeclared.push(`${relative(ROOT, file)}: ${match[0]}`);
    }
  }
  assert.deepEqual(undeclared, []);
});

test('each declaration names itself and its default lies within its range', () => {
  for (const [name, key] of Object.entries(CONFIG_KEYS)) {
    assert.equal(key.key, name);
    if (key.kind === 'int') assert.ok(key.min <= key.default && key.default <= key.max, name);
    if (key.kind === 'enum') assert.ok((key.values as readonly string[]).includes(key.default), name);
    assert.ok(key.doc.length > 0, name);
  }
});

test('an empty environment yields the declared defaults', () => {
  const worker = readWorkerConfig({ PUSH_STAGES: 'clickhouse' });
  const k = CONFIG_KEYS;
  assert.deepEqual(
    {
      id: worker.applicationId,
      commit: worker.commitIntervalMs,
      background: worker.backgroundCommitIntervalMs,
      business: worker.businessCommitIntervalMs,
      partitions: worker.partitions,
      concurrent: worker.concurrentPartitions,
      port: worker.metricsPort,
      bytes: worker.maxRecordBytes,
      backoff: worker.restartBackoff,
    },
    {
      id: k.PUSH_APPLICATION_ID.default,
      commit: k.PUSH_COMMIT_INTERVAL_MS.default,
      background: k.PUSH_BACKGROUND_COMMIT_INTERVAL_MS.default,
      business: k.PUSH_BUSINESS_COMMIT_INTERVAL_MS.default,
      partitions: k.PUSH_PARTITIONS.default,
      concurrent: k.PUSH_CONCURRENT_PARTITIONS.default,
      port: k.PUSH_METRICS_PORT.default,
      bytes: k.PUSH_MAX_RECORD_BYTES.default,
      backoff: {
        initialMs: k.PUSH_RESTART_BACKOFF_INITIAL_MS.default,
        maxMs: k.PUSH_RESTART_BACKOFF_MAX_MS.default,
        resetMs: k.PUSH_RESTART_BACKOFF_RESET_MS.default,
      },
    },
  );
  // The runtime keeps its own option defaults (topology/ knows nothing of PUSH_*): they must agree.
  const runtime = resolveStreamsAppOptions({ applicationId: 'a', brokers: ['b:1'], dlqTopic: 'dlq', topology: {} as never });
  assert.deepEqual(
    [runtime.maxRecordBytes, runtime.restartBackoffInitialMs, runtime.restartBackoffMaxMs, runtime.restartBackoffResetMs],
    [worker.maxRecordBytes, worker.restartBackoff.initialMs, worker.restartBackoff.maxMs, worker.restartBackoff.resetMs],
  );
  const e = readEndpoints({});
  assert.deepEqual(
    [e.kafkaBrokers, e.schemaRegistryUrl, e.mysqlUrl, e.clickhouseUrl, e.clickhouseDatabase, e.clickhouseUser, e.clickhousePassword],
    [
      [...k.PUSH_KAFKA_BROKERS.default],
      k.PUSH_SCHEMA_REGISTRY_URL.default,
      k.PUSH_MYSQL_URL.default,
      k.PUSH_CLICKHOUSE_URL.default,
      k.PUSH_CLICKHOUSE_DATABASE.default,
      k.PUSH_CLICKHOUSE_USER.default,
      k.PUSH_CLICKHOUSE_PASSWORD.default,
    ],
  );
  const merge = compileMergeOptions();
  assert.deepEqual(
    [merge.windowMs, merge.mode, merge.retentionMs, merge.maxEntries],
    [k.PUSH_MERGE_WINDOW_MS.default, k.PUSH_MERGE_MODE.default, k.PUSH_MERGE_RETENTION_MS.default, k.PUSH_MERGE_MAX_ENTRIES.default],
  );
  const filter = compileOnlineFilterOptions();
  assert.deepEqual(
    [filter.holdWindowMs, filter.heartbeatTimeoutMs, filter.backgroundCooldownMs],
    [k.PUSH_HOLD_WINDOW_MS.default, k.PUSH_HEARTBEAT_TIMEOUT_MS.default, k.PUSH_BACKGROUND_COOLDOWN_MS.default],
  );
  const policy = compilePolicyOptions();
  assert.deepEqual(
    [
      policy.mentionRule,
      policy.mentionAllCounts,
      policy.genericTitle,
      policy.genericText,
      policy.summaryMaxChars,
      policy.quotaTimeZone,
      policy.deferredRelease,
    ],
    [
      k.PUSH_MENTION_RULE.default,
      k.PUSH_MENTION_ALL.default,
      k.PUSH_GENERIC_TITLE.default,
      k.PUSH_GENERIC_TEXT.default,
      k.PUSH_SUMMARY_MAX_CHARS.default,
      k.PUSH_QUOTA_TIME_ZONE.default,
      k.PUSH_QUIET_HOURS_RELEASE.default,
    ],
  );
  const ingest = compileIngestRules();
  assert.deepEqual([ingest.maxPastSkewMs, ingest.maxFutureSkewMs], [k.PUSH_INGEST_MAX_PAST_SKEW_MS.default, k.PUSH_INGEST_MAX_FUTURE_SKEW_MS.default]);
  const fanOut = fanOutConfig({ ...fanOutOptionsFromEnv({}) } as FanOutOptions);
  assert.deepEqual(
    [fanOut.ttlSeconds, fanOut.maxRetryableAttempts, fanOut.maxThrottledAttempts, fanOut.retryMaxAgeMs, fanOut.maxParked, fanOut.maxInFlight],
    [
      k.PUSH_FANOUT_TTL_SECONDS.default,
      k.PUSH_FANOUT_MAX_RETRIES.default,
      k.PUSH_FANOUT_MAX_THROTTLED.default,
      k.PUSH_FANOUT_RETRY_MAX_AGE_MS.default,
      k.PUSH_FANOUT_MAX_PARKED.default,
      k.PUSH_FANOUT_MAX_IN_FLIGHT.default,
    ],
  );
  const receiver = compileReceiverConfig({ apps: [] });
  assert.deepEqual(
    [receiver.host, receiver.port, receiver.maxBodyBytes, receiver.hmsMaxSkewMs],
    [k.PUSH_RECEIPTS_HOST.default, k.PUSH_RECEIPTS_PORT.default, k.PUSH_RECEIPTS_MAX_BODY_BYTES.default, k.PUSH_RECEIPTS_HMS_MAX_SKEW_MS.default],
  );
});

test('every declared integer key refuses a value beside its range from the environment, naming the key and the range', () => {
  for (const key of configKeys()) {
    if (key.kind !== 'int') continue;
    assert.throws(
      () => readKey({ [key.key]: String(key.max + 1) }, key),
      (e: unknown) => e instanceof ConfigError && e.key === key.key && e.message.includes(`[${key.min}, ${key.max}]`),
      key.key,
    );
  }
});

test('options without a PUSH_* key are named as options when refused', () => {
  assert.throws(
    () => compileMergeOptions({ punctuateIntervalMs: 0 }),
    (e: unknown) => e instanceof ConfigError && e.key === 'merge.punctuateIntervalMs',
  );
  assert.throws(
    () => compileOnlineFilterOptions({ punctuateIntervalMs: 0 }),
    (e: unknown) => e instanceof ConfigError && e.key === 'onlineFilter.punctuateIntervalMs',
  );
  assert.throws(
    () => compilePolicyOptions({ releaseCheckIntervalMs: 0 }),
    (e: unknown) => e instanceof ConfigError && e.key === 'policy.releaseCheckIntervalMs',
  );
});
