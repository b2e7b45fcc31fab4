import type { ClickHouseClient } from '@clickhouse/client';
import { createClickhouseClient, sqlIdentifier, type ClickhouseConnection } from '../../../sinks/clickhouse/client.ts';
import { connectionFromEndpoints } from '../../../sinks/clickhouse/client.ts';
import { clickhouseQuery } from '../../../migrations/clickhouse-http.ts';
import { CLICKHOUSE_MIGRATIONS_DIR, migrateClickhouseWith } from '../../../migrations/migrate.ts';
import { stackEndpoints, uniqueName } from '../../support/stack.ts';

export interface TestDatabase {
  readonly connection: ClickhouseConnection;
  readonly client: ClickHouseClient;
  drop(): Promise<void>;
}

/** A fresh ClickHouse database with the project's tables and views (migrated as `pushctl migrate` does), for one test file. */
export async function createTestDatabase(prefix = 'ch_test'): Promise<TestDatabase> {
  const base = connectionFromEndpoints(stackEndpoints());
  const database = uniqueName(prefix).replace(/-/g, '_');
  const target = { url: base.url, database, user: base.username, password: base.password, ...(base.tls ? { tls: base.tls } : {}) };
  await migrateClickhouseWith((sql, inDatabase = true) => clickhouseQuery(target, sql, inDatabase), database, CLICKHOUSE_MIGRATIONS_DIR);
  const connection = { ...base, database };
  const client = createClickhouseClient(connection);
  return {
    connection,
    client,
    async drop() {
      await client.command({ query: `DROP DATABASE IF EXISTS ${sqlIdentifier(database)}` });
      await client.close();
    },
  };
}
