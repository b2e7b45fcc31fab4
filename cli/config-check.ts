import { readKey, type Env } from '../common/config.ts';
import { CONFIG_KEYS, configKeys } from '../common/config-keys.ts';
import { readClickhouseTls, readEndpoints } from '../common/endpoints.ts';
import { readKafkaSecurity } from '../common/kafka-client.ts';
import { readMysqlSecurity } from '../common/mysql-url.ts';
import { readRegistryAccess } from '../common/registry-client.ts';
import { ConfigError } from '../common/errors.ts';
import { compilePolicyOptions, parseQuotas } from '../processors/policy/options.ts';
import { readWorkerConfig } from '../pipeline/worker-config.ts';
import { businessOptionsFromEnv } from '../pipeline/apps/business-config.ts';
import { compileBusinessOptions } from '../processors/business/options.ts';
import { BUSINESS_KEYS } from '../common/config-keys-business.ts';

/**
 * Every configuration error of `env` at once: each declared PUSH_* key (common/config-keys.ts)
 * against its declaration, then the checks that read several keys or parse a value (the security
 * settings and their TLS files, the local stack's ports, PUSH_VENDOR_QUOTAS, PUSH_QUOTA_TIME_ZONE, the business strategies and templates, the restart backoff's maximum against
 * its initial wait; with `worker`, what `pushctl run` needs beside: PUSH_APPS_CONFIG), each
 * reported once per key.
 */
export function configurationErrors(env: Env, options: { worker?: boolean } = {}): ConfigError[] {
  const errors: ConfigError[] = [];
  const bad = new Set<string>();
  const attempt = (read: () => unknown) => {
    try {
      read();
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error;
      const key = /^PUSH_[A-Z0-9_]+/.exec(error.key)?.[0] ?? error.key;
      if (bad.has(key)) return;
      bad.add(key);
      errors.push(error);
    }
  };
  for (const key of configKeys()) attempt(() => readKey(env, key as never));
  // The security settings against each other and their files, each service on its own so all are reported.
  attempt(() => readKafkaSecurity(env));
  attempt(() => readRegistryAccess(env, readKey(env, CONFIG_KEYS.PUSH_SCHEMA_REGISTRY_URL)));
  attempt(() => readMysqlSecurity(env));
  attempt(() => readClickhouseTls(env, readKey(env, CONFIG_KEYS.PUSH_CLICKHOUSE_URL)));
  attempt(() => readEndpoints(env));
  attempt(() => parseQuotas(readKey(env, CONFIG_KEYS.PUSH_VENDOR_QUOTAS)));
  attempt(() => compilePolicyOptions({ quotaTimeZone: readKey(env, CONFIG_KEYS.PUSH_QUOTA_TIME_ZONE) }));
  // The business lane's templates and strategies files and its default zone, each on its own so all are reported.
  attempt(() => businessOptionsFromEnv({ ...env, PUSH_BUSINESS_STRATEGIES: '' }));
  attempt(() => compileBusinessOptions({ ...businessOptionsFromEnv({ ...env, PUSH_BUSINESS_TEMPLATES: '' }), defaultTimeZone: 'UTC' }));
  attempt(() => compileBusinessOptions({ defaultTimeZone: readKey(env, BUSINESS_KEYS.PUSH_BUSINESS_DEFAULT_TIME_ZONE) }));
  attempt(() => {
    // As pipeline/worker.ts reads it: the maximum is at least the initial wait.
    const initialMs = readKey(env, CONFIG_KEYS.PUSH_RESTART_BACKOFF_INITIAL_MS);
    const max = CONFIG_KEYS.PUSH_RESTART_BACKOFF_MAX_MS;
    readKey(env, max, Math.max(initialMs, max.default), { min: initialMs, max: max.max });
  });
  // The worker's own reading: only what the declarations above let through is left to find.
  attempt(() => readWorkerConfig(options.worker ? env : { ...env, PUSH_APPS_CONFIG: env.PUSH_APPS_CONFIG || 'unchecked' }));
  return errors;
}

/** One ConfigError listing every error (its key is the bad keys, comma-separated); the error itself when there is one. */
export function combineConfigErrors(errors: readonly ConfigError[]): ConfigError {
  if (errors.length === 1) return errors[0]!;
  return new ConfigError(errors.map((e) => e.key).join(', '), `${errors.length} configuration errors:\n${errors.map((e) => `  ${e.message}`).join('\n')}`);
}

/** Throws one ConfigError naming every bad key of `env`. */
export function checkConfiguration(env: Env, options: { worker?: boolean } = {}): void {
  const errors = configurationErrors(env, options);
  if (errors.length > 0) throw combineConfigErrors(errors);
}
