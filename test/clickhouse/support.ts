import { readFileSync, readdirSync } from 'node:fs';
import type { ClickHouseClient } from '@clickhouse/client';
import { createClickhouseClient, sqlIdentifier, type ClickhouseConnection } from '../../sinks/clickhouse/client.ts';
import { connectionFromEndpoints } from '../../sinks/clickhouse/client.ts';
import { splitStatements } from '../../migrations/files.ts';
import { stackEndpoints, uniqueName } from '../support/stack.ts';

const MIGRATIONS = new URL('../../migrations/clickhouse/', import.meta.url);

/** The statements of migrations/clickhouse/*.sql in file order, split as `pushctl migrate` splits them. */
export function clickhouseStatements(): string[] {
  const files = readdirSync(MIGRATIONS)
    .filter((f) => /^\d+_.*\.sql$/.test(f))
    .sort();
  return files.flatMap((f) => splitStatements(readFileSync(new URL(f, MIGRATIONS), 'utf8')));
}

export interface TestDatabase {
  readonly connection: ClickhouseConnection;
  readonly client: ClickHouseClient;
  drop(): Promise<void>;
}

/** A fresh ClickHouse database with the project's tables and views, for one test file. */
export async function createTestDatabase(prefix = 'ch_test'): Promise<TestDatabase> {
  const base = connectionFromEndpoints(stackEndpoints());
  const database = uniqueName(prefix).replace(/-/g, '_');
  const admin = createClickhouseClient(base, null);
  await admin.command({ query: `CREATE DATABASE ${sqlIdentifier(database)}` });
  await admin.close();
  const connection = { ...base, database };
  const client = createClickhouseClient(connection);
  for (const statement of clickhouseStatements()) await client.command({ query: statement });
  return {
    connection,
    client,
    async drop() {
      await client.command({ query: `DROP DATABASE IF EXISTS ${sqlIdentifier(database)}` });
      await client.close();
    },
  };
}
