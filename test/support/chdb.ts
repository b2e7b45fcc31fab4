import type { ClickHouseClient } from '@clickhouse/client';
import { Session } from 'chdb';
import type { ClickhouseRunner } from '../../migrations/migrate.ts';

/**
 * A current ClickHouse engine in this process (the npm package chdb: ClickHouse 26.x as a library),
 * for proving the schema and the queries on today's server beside the stack's 18.16. It is the
 * real engine, not a stand-in; only the transport differs, so it is reached through the two shapes
 * the project's code takes: a migration runner and the part of @clickhouse/client's interface the
 * queries use (`query(...).json()`, `insert`, `command`).
 */
export interface EmbeddedClickhouse {
  readonly version: string;
  readonly run: ClickhouseRunner;
  /** What the project's readers take; only `query`, `insert`, `command` and `close` answer. */
  readonly client: ClickHouseClient;
  close(): void;
}

export function embeddedClickhouse(): EmbeddedClickhouse {
  const session = new Session();
  // One database: the session's default one is where migrations' unqualified names land.
  const run: ClickhouseRunner = async (sql) => session.query(sql, 'TabSeparated');
  const rows = (sql: string): unknown[] =>
    session
      .query(sql, 'JSONEachRow')
      .split('\n')
      .filter((line) => line.trim() !== '')
      .map((line) => JSON.parse(line) as unknown);
  const client = {
    query: async ({ query }: { query: string; format?: string }) => ({ json: async () => rows(query) }),
    command: async ({ query }: { query: string }) => void session.query(query, 'TabSeparated'),
    insert: async ({ table, values }: { table: string; values: readonly unknown[]; format?: string }) =>
      void session.query(`INSERT INTO ${table} FORMAT JSONEachRow ${values.map((v) => JSON.stringify(v)).join('\n')}`, 'TabSeparated'),
    close: async () => undefined,
  } as unknown as ClickHouseClient;
  return { version: session.query('SELECT version()', 'TabSeparated').trim(), run, client, close: () => session.close() };
}
