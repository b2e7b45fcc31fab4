import { ClickHouseLogLevel, createClient, type ClickHouseClient } from '@clickhouse/client';
import type { Endpoints } from '../../common/endpoints.ts';
import type { TlsMaterial } from '../../common/tls-files.ts';

/** Where and as whom to reach ClickHouse's HTTP interface. */
export interface ClickhouseConnection {
  /** HTTP interface root, e.g. http://127.0.0.1:8123 (no credentials in the URL). */
  readonly url: string;
  readonly database: string;
  /** Default `default`. */
  readonly username?: string;
  /** Default empty. Never logged: the client's own logger is switched off. */
  readonly password?: string;
  /** Time allowed for one request, ms. Default 30 000. */
  readonly requestTimeoutMs?: number;
  /** The authorities an `https:` URL's certificate must chain to (PUSH_CLICKHOUSE_TLS_CA_FILE); absent: the system's. */
  readonly tls?: TlsMaterial;
}

export function connectionFromEndpoints(endpoints: Endpoints): ClickhouseConnection {
  return {
    url: endpoints.clickhouseUrl,
    database: endpoints.clickhouseDatabase,
    username: endpoints.clickhouseUser,
    password: endpoints.clickhousePassword,
    ...(endpoints.clickhouseTls ? { tls: endpoints.clickhouseTls } : {}),
  };
}

/**
 * An `@clickhouse/client` for this project. Its console logger is OFF: by default it prints every
 * failed request, and those lines are not redacted. Callers report failures through their own
 * listeners instead. No query parameters are used anywhere (ClickHouse 18.16 has none).
 */
export function createClickhouseClient(connection: ClickhouseConnection, database: string | null = connection.database): ClickHouseClient {
  return createClient({
    url: connection.url,
    ...(database === null ? {} : { database }),
    username: connection.username ?? 'default',
    password: connection.password ?? '',
    request_timeout: connection.requestTimeoutMs ?? 30_000,
    log: { level: ClickHouseLogLevel.OFF },
    ...(connection.tls?.ca ? { tls: { ca_cert: connection.tls.ca } } : {}),
  });
}

/**
 * Quotes a string as a ClickHouse SQL literal. ClickHouse 18.16 has no query parameters, so the
 * few values that reach SQL text (database names in tests, app ids in the CLI) go through here.
 */
export function sqlString(value: string): string {
  return `'${value.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}

/** Quotes an identifier (database or table name). */
export function sqlIdentifier(name: string): string {
  return `\`${name.replace(/\\/g, '\\\\').replace(/`/g, '\\`')}\``;
}
