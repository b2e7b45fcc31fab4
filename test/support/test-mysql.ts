import { readFileSync, readdirSync } from 'node:fs';
import { createPool, type Pool } from 'mysql2/promise';
import { stackEndpoints, uniqueName } from './stack.ts';

const MIGRATIONS = new URL('../../migrations/mysql/', import.meta.url);

export interface TestMysql {
  readonly pool: Pool;
  readonly database: string;
  drop(): Promise<void>;
}

/** A fresh MariaDB database with the project's MySQL migrations applied (migrations/mysql/*.sql). */
export async function createTestMysql(prefix = 'tokens'): Promise<TestMysql> {
  const url = new URL(stackEndpoints().mysqlUrl);
  const database = uniqueName(prefix).replace(/-/g, '_');
  const connection = {
    host: url.hostname,
    port: Number(url.port || 3306),
    user: decodeURIComponent(url.username || 'root'),
    password: decodeURIComponent(url.password),
  };
  const admin = createPool({ ...connection, connectionLimit: 1 });
  await admin.query(`CREATE DATABASE \`${database}\` CHARACTER SET utf8mb4`);
  await admin.end();
  const pool = createPool({ ...connection, database, connectionLimit: 4, timezone: 'Z', multipleStatements: true, dateStrings: false });
  for (const file of readdirSync(MIGRATIONS)
    .filter((f) => /^\d+_.*\.sql$/.test(f))
    .sort()) {
    await pool.query(readFileSync(new URL(file, MIGRATIONS), 'utf8'));
  }
  return {
    pool,
    database,
    async drop() {
      await pool.query(`DROP DATABASE IF EXISTS \`${database}\``);
      await pool.end();
    },
  };
}
