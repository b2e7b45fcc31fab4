import type { ConnectionOptions } from 'mysql2/promise';
import { ConfigError } from './errors.ts';

/**
 * Splits a mysql:// URL into connection options and the database name. `key` is the setting the
 * URL came from (PUSH_MYSQL_URL, or `PUSH_MYSQL_SHARDS[i]` for one of the shards), named by the
 * error; the error never quotes the URL, which may carry a password.
 */
export function parseMysqlUrl(raw: string, key = 'PUSH_MYSQL_URL'): { connection: ConnectionOptions; database: string } {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(key, 'expected mysql://user:password@host:port/database');
  }
  if (url.protocol !== 'mysql:') throw new ConfigError(key, `expected the mysql: scheme, got ${url.protocol}`);
  const database = decodeURIComponent(url.pathname.replace(/^\//, ''));
  if (!/^[A-Za-z0-9_]+$/.test(database)) throw new ConfigError(key, 'the path must name the database (letters, digits, _)');
  return {
    connection: {
      host: url.hostname,
      port: url.port ? Number(url.port) : 3306,
      user: decodeURIComponent(url.username || 'root'),
      password: decodeURIComponent(url.password),
      charset: 'utf8mb4',
    },
    database,
  };
}
