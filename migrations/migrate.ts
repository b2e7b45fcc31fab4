/**
 * Applies the numbered MySQL (migrations/mysql) and ClickHouse (migrations/clickhouse) files in
 * order, once each, recording every applied version in a `schema_migrations` table on each side.
 * Idempotent: a second run applies nothing. Creates the databases when missing. A file changed after
 * it was applied fails the run (its checksum no longer matches) instead of being skipped silently.
 * Concurrent runs (several workers starting) serialise on a MySQL named lock.
 */
import { basename } from 'node:path';
import { fileURLToPath } from 'node:url';
import mysql from 'mysql2/promise';
import { readEndpoints } from '../common/endpoints.ts';
import { ConfigError, ContractError, errorMessage } from '../common/errors.ts';
import { mysqlClientOptions, parseMysqlUrl, type MysqlSecurity } from '../common/mysql-url.ts';
import type { Logger } from '../common/log.ts';
import { chIdent, chString, clickhouseQuery, type ClickHouseTarget } from './clickhouse-http.ts';
import { readMigrations, serverAtLeast, type MigrationFile } from './files.ts';

export const MYSQL_MIGRATIONS_DIR = fileURLToPath(new URL('./mysql', import.meta.url));
export const CLICKHOUSE_MIGRATIONS_DIR = fileURLToPath(new URL('./clickhouse', import.meta.url));

export interface MigrateOptions {
  /** mysql://user:password@host:port/database (PUSH_MYSQL_URL). The database is created when missing. */
  mysqlUrl: string;
  /**
   * The uid shards' URLs (PUSH_MYSQL_SHARDS, Endpoints.mysqlShards): each is migrated, in shard
   * order, instead of `mysqlUrl` alone. The same files, so every shard has the same tables.
   */
  mysqlShards?: readonly string[];
  /** The password of URLs without one, and TLS (PUSH_MYSQL_PASSWORD, PUSH_MYSQL_TLS*). Default none. */
  mysqlSecurity?: MysqlSecurity;
  /** ClickHouse HTTP target (PUSH_CLICKHOUSE_*); omit to migrate MySQL only. */
  clickhouse?: ClickHouseTarget;
  /** Default migrations/mysql. */
  mysqlDir?: string;
  /** Default migrations/clickhouse. */
  clickhouseDir?: string;
  /**
   * Accept files whose checksum changed after they were applied (warn and skip instead of failing).
   * For development databases only; default false.
   */
  allowChangedFiles?: boolean;
  /** How long to wait for another run's lock, in seconds. Default 60. */
  lockTimeoutSeconds?: number;
  log?: Logger;
}

export interface AppliedSide {
  /** Versions applied by this run, in order. */
  applied: number[];
  /** Versions that were already recorded. */
  alreadyApplied: number[];
  /** ClickHouse files that need a newer server than this one (`-- requires ClickHouse >= X.Y`), left pending; absent when none. */
  waiting?: number[];
}

/** Runs one ClickHouse statement, in the target database or (`inDatabase` false) outside it; resolves with the answer's text. */
export type ClickhouseRunner = (sql: string, inDatabase?: boolean) => Promise<string>;

export interface MigrateResult {
  /** Shard 0's (the one database without shards). */
  mysql: AppliedSide;
  /** Every shard's, in shard order (one entry without shards). */
  mysqlShards: AppliedSide[];
  clickhouse?: AppliedSide;
}

/** Splits a mysql:// URL into connection options and the database name (common/mysql-url.ts). */
export { parseMysqlUrl };

export async function migrate(options: MigrateOptions): Promise<MigrateResult> {
  const urls = options.mysqlShards && options.mysqlShards.length > 0 ? options.mysqlShards : [options.mysqlUrl];
  // Every shard is tried, so one that is down does not keep the others behind; the failures are reported together.
  const sides: AppliedSide[] = [];
  const failures: string[] = [];
  for (const [i, mysqlUrl] of urls.entries()) {
    try {
      sides.push(await migrateMysql({ ...options, mysqlUrl }));
    } catch (error) {
      if (urls.length === 1) throw error;
      failures.push(`shard ${i}: ${errorMessage(error)}`);
    }
  }
  if (failures.length > 0)
    throw new ContractError('MIGRATION_FAILED', `mysql migration failed on ${failures.length} of ${urls.length} shards:\n  ${failures.join('\n  ')}`);
  const result: MigrateResult = { mysql: sides[0]!, mysqlShards: sides };
  if (options.clickhouse) result.clickhouse = await migrateClickHouse(options.clickhouse, options.clickhouseDir ?? CLICKHOUSE_MIGRATIONS_DIR, options);
  return result;
}

const MYSQL_VERSIONS_DDL = `CREATE TABLE IF NOT EXISTS schema_migrations (
  version    INT UNSIGNED NOT NULL,
  name       VARCHAR(255) NOT NULL,
  checksum   CHAR(64)     NOT NULL,
  applied_at DATETIME(3)  NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  PRIMARY KEY (version)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`;

async function migrateMysql(options: MigrateOptions): Promise<AppliedSide> {
  const { database } = parseMysqlUrl(options.mysqlUrl);
  const files = readMigrations(options.mysqlDir ?? MYSQL_MIGRATIONS_DIR);
  // Without the database: the first statement creates it.
  const { database: _created, ...server } = mysqlClientOptions(options.mysqlUrl, options.mysqlSecurity);
  const conn = await mysql.createConnection(server);
  const lockName = `offline_push_migrate_${database}`;
  try {
    await conn.query(`CREATE DATABASE IF NOT EXISTS \`${database}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci`);
    await conn.query(`USE \`${database}\``);
    const [lock] = await conn.query<mysql.RowDataPacket[]>('SELECT GET_LOCK(?, ?) AS got', [lockName, options.lockTimeoutSeconds ?? 60]);
    if (lock[0]?.got !== 1) throw new ContractError('MIGRATION_LOCKED', `another migration run holds ${lockName}`);
    try {
      await conn.query(MYSQL_VERSIONS_DDL);
      const [rows] = await conn.query<mysql.RowDataPacket[]>('SELECT version, checksum FROM schema_migrations');
      const recorded = new Map(rows.map((r) => [Number(r.version), String(r.checksum)]));
      return await applyInOrder(files, recorded, 'mysql', options, async (file) => {
        // MySQL DDL commits implicitly; each statement is idempotent (IF NOT EXISTS), so a crash
        // between a statement and the version record re-runs harmlessly.
        for (const statement of file.statements) await conn.query(statement);
        await conn.query('INSERT INTO schema_migrations (version, name, checksum) VALUES (?, ?, ?)', [file.version, file.name, file.checksum]);
        options.log?.info('mysql migration applied', { version: file.version, name: file.name });
      });
    } finally {
      // Best-effort: ending the connection just below releases the lock anyway.
      await conn.query('SELECT RELEASE_LOCK(?)', [lockName]).catch(() => undefined);
    }
  } finally {
    await conn.end();
  }
}

async function migrateClickHouse(target: ClickHouseTarget, dir: string, options: MigrateOptions): Promise<AppliedSide> {
  if (!/^[A-Za-z0-9_]+$/.test(target.database)) throw new ConfigError('PUSH_CLICKHOUSE_DATABASE', 'letters, digits and _ only');
  return migrateClickhouseWith((sql, inDatabase = true) => clickhouseQuery(target, sql, inDatabase), target.database, dir, options);
}

/**
 * The ClickHouse side through any runner of statements: the HTTP interface here, an embedded current
 * engine in test/sinks/clickhouse/current-engine.test.ts. A file that needs a newer server than this one
 * waits, unrecorded, and is applied by the first run after an upgrade.
 */
export async function migrateClickhouseWith(
  run: ClickhouseRunner,
  database: string,
  dir: string,
  options: Pick<MigrateOptions, 'allowChangedFiles' | 'log'> = {},
): Promise<AppliedSide> {
  const server = (await run('SELECT version() FORMAT TabSeparated', false)).trim();
  const all = readMigrations(dir);
  const files = all.filter((f) => f.requiresServer === undefined || serverAtLeast(server, f.requiresServer));
  const waiting = all.filter((f) => !files.includes(f));
  for (const f of waiting)
    options.log?.info('clickhouse migration waits for a newer server', { version: f.version, name: f.name, server, requires: f.requiresServer });
  await run(`CREATE DATABASE IF NOT EXISTS ${chIdent(database)}`, false);
  // TinyLog: a handful of rows, appended once per version; runs on 18.16 and current releases.
  await run('CREATE TABLE IF NOT EXISTS schema_migrations (version UInt32, name String, checksum String, applied_at DateTime) ENGINE = TinyLog');
  const text = await run('SELECT version, checksum FROM schema_migrations FORMAT TabSeparated');
  const recorded = new Map<number, string>();
  for (const line of text.split('\n').filter(Boolean)) {
    const [version, checksum] = line.split('\t');
    recorded.set(Number(version), checksum ?? '');
  }
  const side = await applyInOrder(files, recorded, 'clickhouse', options, async (file) => {
    for (const statement of file.statements) await run(statement);
    await run(
      `INSERT INTO schema_migrations (version, name, checksum, applied_at) VALUES (${file.version}, ${chString(file.name)}, ${chString(file.checksum)}, now())`,
    );
    options.log?.info('clickhouse migration applied', { version: file.version, name: file.name });
  });
  return waiting.length > 0 ? { ...side, waiting: waiting.map((f) => f.version) } : side;
}

async function applyInOrder(
  files: MigrationFile[],
  recorded: Map<number, string>,
  side: string,
  options: Pick<MigrateOptions, 'allowChangedFiles' | 'log'>,
  apply: (file: MigrationFile) => Promise<void>,
): Promise<AppliedSide> {
  const out: AppliedSide = { applied: [], alreadyApplied: [] };
  for (const file of files) {
    const checksum = recorded.get(file.version);
    if (checksum !== undefined) {
      const same = checksum === file.checksum || file.formerChecksums.includes(checksum);
      if (!same && options.allowChangedFiles) {
        options.log?.warn('migration changed after it was applied; not re-applied', { side, file: basename(file.path) });
      } else if (!same) {
        throw new ContractError(
          'MIGRATION_CHANGED',
          `${side} migration ${basename(file.path)} was changed after it was applied; add a new numbered file instead`,
        );
      }
      out.alreadyApplied.push(file.version);
      continue;
    }
    await apply(file);
    out.applied.push(file.version);
  }
  return out;
}

/** Applies every pending migration to the MySQL shards and ClickHouse the environment names (PUSH_MYSQL_SHARDS or PUSH_MYSQL_URL, PUSH_CLICKHOUSE_*). */
export async function migrateAll(options: { mysqlOnly?: boolean } = {}): Promise<MigrateResult> {
  const e = readEndpoints();
  return migrate({
    mysqlUrl: e.mysqlUrl,
    mysqlShards: e.mysqlShards,
    mysqlSecurity: e.mysqlSecurity,
    ...(options.mysqlOnly
      ? {}
      : {
          clickhouse: {
            url: e.clickhouseUrl,
            database: e.clickhouseDatabase,
            user: e.clickhouseUser,
            password: e.clickhousePassword,
            ...(e.clickhouseTls ? { tls: e.clickhouseTls } : {}),
          },
        }),
  });
}
