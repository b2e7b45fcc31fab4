import { readInt, readKey, type Env } from './config.ts';
import { CONFIG_KEYS as KEYS } from './config-keys.ts';
import { ConfigError } from './errors.ts';
import { readKafkaSecurity, type KafkaSecurity } from './kafka-client.ts';
import { parseMysqlUrl, readMysqlSecurity, type MysqlSecurity } from './mysql-url.ts';
import { readRegistryAccess, type RegistryAccess } from './registry-client.ts';
import { readTlsMaterial, type TlsMaterial } from './tls-files.ts';

/**
 * Where the pipeline's external parts are. Defaults point at the local stack (`pushctl stack up`);
 * set the `PUSH_*` keys to run the same workers against external Kafka, registry, MySQL and
 * ClickHouse, secured as the keys of common/config-keys-security.ts say (TLS material is read from
 * its files here, once, and every file key is checked).
 */
export interface Endpoints {
  /** PUSH_KAFKA_BROKERS, comma-separated host:port. Default 127.0.0.1:19092. */
  readonly kafkaBrokers: string[];
  /** PUSH_KAFKA_SECURITY_PROTOCOL, TLS and SASL (common/kafka-client.ts makes every client with it). */
  readonly kafkaSecurity: KafkaSecurity;
  /** PUSH_SCHEMA_REGISTRY_URL, a Confluent-compatible API root. Default the local Apicurio. */
  readonly schemaRegistryUrl: string;
  /** Basic-auth credentials and the CA of the registry (common/registry-client.ts). */
  readonly schemaRegistry: RegistryAccess;
  /** PUSH_MYSQL_URL, mysql://user:password@host:port/database. */
  readonly mysqlUrl: string;
  /**
   * PUSH_MYSQL_SHARDS: the uid shards' mysql:// URLs in shard order (sinks/mysql/shards.ts routes by
   * uid); `[mysqlUrl]` when unset. Each is validated here, so a bad one fails at start naming its item.
   */
  readonly mysqlShards: readonly string[];
  /** PUSH_MYSQL_PASSWORD and TLS, for every URL above (common/mysql-url.ts `mysqlClientOptions`). */
  readonly mysqlSecurity: MysqlSecurity;
  /** PUSH_CLICKHOUSE_URL, the HTTP interface. Default http://127.0.0.1:8123. */
  readonly clickhouseUrl: string;
  /** PUSH_CLICKHOUSE_TLS_CA_FILE, for an `https:` PUSH_CLICKHOUSE_URL. */
  readonly clickhouseTls?: TlsMaterial;
  /** PUSH_CLICKHOUSE_DATABASE. Default offline_push. */
  readonly clickhouseDatabase: string;
  /** PUSH_CLICKHOUSE_USER / PUSH_CLICKHOUSE_PASSWORD. Default `default` with no password. */
  readonly clickhouseUser: string;
  readonly clickhousePassword: string;
  /** PUSH_CONNECT_TIMEOUT_MS: connecting, TLS and authentication included, to any of them. */
  readonly connectTimeoutMs: number;
}

export const DEFAULT_PORTS = {
  kafka: 19092,
  kafkaController: 19093,
  registry: 18081,
  mysql: 3306,
  clickhouseHttp: 8123,
  clickhouseTcp: 19000,
  prometheus: 19090,
} as const;

/** A local-stack port: PUSH_STACK_<NAME>_PORT when set (so moving the stack moves the defaults), else the default. */
export function localStackPort(env: Env, name: keyof typeof DEFAULT_PORTS, stackKey: string): number {
  return readInt(env, `PUSH_STACK_${stackKey}_PORT`, DEFAULT_PORTS[name], { min: 1, max: 65535 });
}

/** The endpoints from their PUSH_* keys (common/config-keys.ts; the declared defaults are these with the default ports). */
export function readEndpoints(env: Env = process.env): Endpoints {
  const port = (name: keyof typeof DEFAULT_PORTS, stackKey: string) => localStackPort(env, name, stackKey);
  const mysqlUrl = readKey(env, KEYS.PUSH_MYSQL_URL, `mysql://root@127.0.0.1:${port('mysql', 'MYSQL')}/offline_push`);
  const schemaRegistryUrl = readKey(env, KEYS.PUSH_SCHEMA_REGISTRY_URL, `http://127.0.0.1:${port('registry', 'REGISTRY')}/apis/ccompat/v7`);
  const clickhouseUrl = readKey(env, KEYS.PUSH_CLICKHOUSE_URL, `http://127.0.0.1:${port('clickhouseHttp', 'CLICKHOUSE')}`);
  const clickhouseTls = readClickhouseTls(env, clickhouseUrl);
  return Object.freeze({
    kafkaBrokers: readKey(env, KEYS.PUSH_KAFKA_BROKERS, [`127.0.0.1:${port('kafka', 'KAFKA')}`]),
    kafkaSecurity: readKafkaSecurity(env),
    schemaRegistryUrl,
    schemaRegistry: readRegistryAccess(env, schemaRegistryUrl),
    mysqlUrl,
    mysqlShards: readMysqlShards(env, mysqlUrl),
    mysqlSecurity: readMysqlSecurity(env),
    clickhouseUrl,
    ...(clickhouseTls ? { clickhouseTls } : {}),
    clickhouseDatabase: readKey(env, KEYS.PUSH_CLICKHOUSE_DATABASE),
    clickhouseUser: readKey(env, KEYS.PUSH_CLICKHOUSE_USER),
    clickhousePassword: readKey(env, KEYS.PUSH_CLICKHOUSE_PASSWORD),
    connectTimeoutMs: readKey(env, KEYS.PUSH_CONNECT_TIMEOUT_MS),
  });
}

/** PUSH_CLICKHOUSE_TLS_CA_FILE, refused with an `http:` URL (it would not be used). */
export function readClickhouseTls(env: Env, url: string): TlsMaterial | undefined {
  const tls = readTlsMaterial(env, { ca: KEYS.PUSH_CLICKHOUSE_TLS_CA_FILE });
  if (tls && !url.startsWith('https:')) throw new ConfigError(KEYS.PUSH_CLICKHOUSE_TLS_CA_FILE.key, 'set, but PUSH_CLICKHOUSE_URL is not an https: URL');
  return tls;
}

/**
 * PUSH_MYSQL_SHARDS as a list of validated mysql:// URLs (an error names the key and the item's
 * position, never the URL: it may hold a password). Unset or empty: the one database of PUSH_MYSQL_URL.
 * Two shards naming the same database would split its users' rows under two shard numbers and are refused.
 */
export function readMysqlShards(env: Env, mysqlUrl: string): string[] {
  const urls = readKey(env, KEYS.PUSH_MYSQL_SHARDS);
  if (urls.length === 0) return [mysqlUrl];
  const seen = new Map<string, number>();
  urls.forEach((url, i) => {
    const { connection, database } = parseMysqlUrl(url, `PUSH_MYSQL_SHARDS[${i}]`);
    const where = `${connection.host}:${connection.port}/${database}`;
    const first = seen.get(where);
    if (first !== undefined) throw new ConfigError(`PUSH_MYSQL_SHARDS[${i}]`, `names the same database as shard ${first}`);
    seen.set(where, i);
  });
  return urls;
}
