import { connect, isIP, type Socket } from 'node:net';
import type { ConnectionOptions } from 'mysql2/promise';
import { readKey, type Env } from './config.ts';
import { SECURITY_KEYS as KEYS } from './config-keys-security.ts';
import { ConfigError } from './errors.ts';
import { readTlsMaterial, tlsKeysSet, type TlsKeys, type TlsMaterial } from './tls-files.ts';

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

/** The password for URLs without one, and TLS (docs/operations.md, "Connecting to a secured cluster"). */
export interface MysqlSecurity {
  /** PUSH_MYSQL_PASSWORD: the password of every URL that carries none. */
  readonly password?: string;
  /** With PUSH_MYSQL_TLS: the authorities and client certificate, and whether the server must prove who it is. */
  readonly tls?: TlsMaterial & { readonly rejectUnauthorized: boolean };
}

const MYSQL_TLS_KEYS: TlsKeys = { ca: KEYS.PUSH_MYSQL_TLS_CA_FILE, cert: KEYS.PUSH_MYSQL_TLS_CERT_FILE, key: KEYS.PUSH_MYSQL_TLS_KEY_FILE };

/** PUSH_MYSQL_PASSWORD and the PUSH_MYSQL_TLS keys of `env`; TLS files without PUSH_MYSQL_TLS=true are refused, not ignored. */
export function readMysqlSecurity(env: Env): MysqlSecurity {
  const password = readKey(env, KEYS.PUSH_MYSQL_PASSWORD);
  const enabled = readKey(env, KEYS.PUSH_MYSQL_TLS);
  const rejectUnauthorized = readKey(env, KEYS.PUSH_MYSQL_TLS_REJECT_UNAUTHORIZED);
  if (!enabled) {
    const stray = tlsKeysSet(env, MYSQL_TLS_KEYS)[0];
    if (stray) throw new ConfigError(stray, 'set, but PUSH_MYSQL_TLS is not true');
  }
  const tls = enabled ? { ...readTlsMaterial(env, MYSQL_TLS_KEYS), rejectUnauthorized } : undefined;
  return Object.freeze({ ...(password === '' ? {} : { password }), ...(tls ? { tls } : {}) });
}

/**
 * The TCP connection to a server reached by IP address, for mysql2 to upgrade to TLS. mysql2 names
 * no server for an address, and Node then checks the certificate against `localhost`; a socket that
 * carries its address the way Node records a host name's (`_host`) has the certificate checked
 * against that address, as for any other client (test/stack/secured-stack.stack.test.ts covers both).
 */
function addressedSocket(host: string, port: number): Socket {
  const socket = connect(port, host);
  socket.setNoDelay(true);
  (socket as Socket & { _host?: string })._host = host;
  return socket;
}

/**
 * Everything mysql2 needs to open a connection or pool to the database of `url` (a validated URL
 * of PUSH_MYSQL_URL or PUSH_MYSQL_SHARDS; `key` names it in errors): its address, user and
 * database, the password of `security` when the URL has none, and TLS. A verified server is also
 * held to the name or address it is reached by (mysql2 checks only the chain unless told).
 */
export function mysqlClientOptions(url: string, security: MysqlSecurity = {}, key = 'PUSH_MYSQL_URL'): ConnectionOptions {
  const { connection, database } = parseMysqlUrl(url, key);
  const { tls } = security;
  const { host, port } = connection as { host: string; port: number };
  const verify = tls?.rejectUnauthorized === true;
  return {
    ...connection,
    password: connection.password || security.password || '',
    database,
    ...(tls ? { ssl: { ...tls, verifyIdentity: verify } } : {}),
    ...(verify && isIP(host) !== 0 ? { stream: () => addressedSocket(host, port) } : {}),
  };
}
