/**
 * Start-up checks of the services a process needs, connecting as its clients do: TCP, TLS,
 * authentication and one request (Kafka: the cluster and the topics the process uses; the
 * registry: its configuration; MySQL: every shard; ClickHouse: `SELECT 1`), within
 * PUSH_CONNECT_TIMEOUT_MS. A failure names the service, what went wrong (a certificate no trusted
 * authority signs, a certificate for another name, a listener speaking another security protocol,
 * refused credentials, missing ACLs, no answer in time) and the PUSH_* key to fix, where a client
 * would retry or wait on a connection that can never work. Workers, the entry, the receiver and
 * pushctl run them before anything else (docs/operations.md, "Connecting to a secured cluster").
 */
import mysql from 'mysql2/promise';
import { fetch } from 'undici';
import type { Admin } from 'kafkajs';
import type { Endpoints } from '../common/endpoints.ts';
import { PushError, errorMessage } from '../common/errors.ts';
import { kafkaClient } from '../common/kafka-client.ts';
import { mysqlClientOptions } from '../common/mysql-url.ts';
import { withTimeout } from '../common/retry.ts';
import { tlsDispatcher, type TlsMaterial } from '../common/tls-files.ts';
import { checkReachable, explainConnectionError, serviceAddresses, SERVICES, type Service } from './connections.ts';

/** Why a service could not be used. */
export type ServiceCheckCode =
  | 'TLS_UNTRUSTED'
  | 'TLS_HOSTNAME_MISMATCH'
  | 'TLS_CERT_EXPIRED'
  | 'TLS_CLIENT_CERT_REFUSED'
  | 'SECURITY_PROTOCOL_MISMATCH'
  | 'SASL_MECHANISM_UNSUPPORTED'
  | 'AUTHENTICATION_FAILED'
  | 'AUTHORIZATION_FAILED'
  | 'CONNECT_TIMEOUT'
  | 'UNEXPECTED_ANSWER';

/** A service that answered but could not be used; the message says why and which key to fix. */
export class ServiceCheckError extends PushError {
  constructor(
    readonly service: Service,
    readonly reason: ServiceCheckCode,
    address: string,
    what: string,
    fix: string,
  ) {
    super(`${service.toUpperCase()}_${reason}`, `${SERVICES[service].name} at ${address} ${what}: ${fix}`);
  }
}

export interface ServiceCheckOptions {
  /** Topics the process reads or writes: the Kafka user must be allowed to describe each (its ACLs). */
  readonly kafkaTopics?: readonly string[];
}

/** The keys that set each service's trust, client certificate, address and security protocol. */
const KEYS: Readonly<Record<Service, { readonly ca: string; readonly cert?: string; readonly address: string; readonly protocol: string }>> = {
  kafka: { ca: 'PUSH_KAFKA_TLS_CA_FILE', cert: 'PUSH_KAFKA_TLS_CERT_FILE', address: 'PUSH_KAFKA_BROKERS', protocol: 'PUSH_KAFKA_SECURITY_PROTOCOL' },
  registry: { ca: 'PUSH_SCHEMA_REGISTRY_TLS_CA_FILE', address: 'PUSH_SCHEMA_REGISTRY_URL', protocol: 'PUSH_SCHEMA_REGISTRY_URL' },
  mysql: { ca: 'PUSH_MYSQL_TLS_CA_FILE', cert: 'PUSH_MYSQL_TLS_CERT_FILE', address: 'PUSH_MYSQL_URL', protocol: 'PUSH_MYSQL_TLS' },
  clickhouse: { ca: 'PUSH_CLICKHOUSE_TLS_CA_FILE', address: 'PUSH_CLICKHOUSE_URL', protocol: 'PUSH_CLICKHOUSE_URL' },
};

/** Node's and OpenSSL's verification failures of a peer's chain. */
const UNTRUSTED = new Set([
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_SIGNATURE_FAILURE',
  'CERT_UNTRUSTED',
]);

/** The codes and messages of `error` and its causes (clients wrap what the socket said). */
function chain(error: unknown): Array<{ code: string; message: string; name: string }> {
  const out: Array<{ code: string; message: string; name: string }> = [];
  for (let e: unknown = error, depth = 0; e && typeof e === 'object' && depth < 6; e = (e as { cause?: unknown }).cause, depth++) {
    const f = e as { code?: unknown; message?: unknown; name?: unknown; type?: unknown };
    const code = typeof f.code === 'string' ? f.code : typeof f.type === 'string' ? f.type : '';
    out.push({ code, message: typeof f.message === 'string' ? f.message : '', name: typeof f.name === 'string' ? f.name : '' });
  }
  return out;
}

/** What is wrong with a peer's certificate, from the error's codes or, where a client kept only the text (mysql2), its messages. */
function certificateTrouble(error: unknown): { trouble: 'untrusted' | 'hostname' | 'expired' | 'client'; detail: string } | undefined {
  const links = chain(error);
  for (const { code } of links) {
    if (UNTRUSTED.has(code)) return { trouble: 'untrusted', detail: code };
    if (code === 'ERR_TLS_CERT_ALTNAME_INVALID') return { trouble: 'hostname', detail: code };
    if (code === 'CERT_HAS_EXPIRED' || code === 'CERT_NOT_YET_VALID') return { trouble: 'expired', detail: code };
  }
  for (const { message } of links) {
    if (/self[- ]signed certificate|unable to verify the first certificate|unable to get (local )?issuer certificate/i.test(message))
      return { trouble: 'untrusted', detail: message };
    if (/Hostname\/IP does not match|altnames/i.test(message)) return { trouble: 'hostname', detail: message };
    if (/certificate has expired|certificate is not yet valid/i.test(message)) return { trouble: 'expired', detail: message };
    // The server's TLS alerts about the client's certificate: 42 bad_certificate, 116 certificate_required.
    const alert = /alert (bad certificate|certificate required|unknown ca)|SSL alert number (42|116|48)\b/i.exec(message);
    if (alert) return { trouble: 'client', detail: `TLS alert: ${alert[1] ?? `number ${alert[2]}`}` };
  }
  return undefined;
}

/** A certificate problem in `error`, explained for `service` (undefined: none). */
function explainTls(service: Service, error: unknown, address: string, caSet: boolean): ServiceCheckError | undefined {
  const keys = KEYS[service];
  const found = certificateTrouble(error);
  if (!found) return undefined;
  // Without kafkajs' "Connection error:" prefix: the message says what the certificate lacks, not that a connection failed.
  const detail = found.detail.replace(/^Connection error: /, '');
  switch (found.trouble) {
    case 'untrusted':
      return new ServiceCheckError(
        service,
        'TLS_UNTRUSTED',
        address,
        `presents a certificate no authority ${caSet ? `in ${keys.ca}` : 'this system trusts'} signs (${detail})`,
        `set ${keys.ca} to the PEM certificate of the authority that signs it`,
      );
    case 'hostname':
      return new ServiceCheckError(
        service,
        'TLS_HOSTNAME_MISMATCH',
        address,
        `presents a certificate for another name than the one it was reached by (${detail})`,
        `set ${keys.address} to a name or address its certificate holds`,
      );
    case 'expired':
      return new ServiceCheckError(
        service,
        'TLS_CERT_EXPIRED',
        address,
        `presents a certificate out of its validity (${detail})`,
        `renew the server's certificate (trusted through ${keys.ca})`,
      );
    case 'client':
      return new ServiceCheckError(
        service,
        'TLS_CLIENT_CERT_REFUSED',
        address,
        `refused this client's certificate, or its lack of one (${detail})`,
        keys.cert
          ? `set ${keys.cert} (and its key) to a certificate an authority the server trusts signed`
          : 'the server asks for client certificates, which this client does not present',
      );
  }
}

/** A peer that hung up or answered garbage during the handshake: it speaks another protocol (TLS or not, SASL or not). */
function isProtocolMismatch(error: unknown): boolean {
  return chain(error).some(
    ({ code, message, name }) =>
      name === 'KafkaJSConnectionClosedError' ||
      ['ECONNRESET', 'EPROTO', 'ERR_SSL_WRONG_VERSION_NUMBER', 'UND_ERR_SOCKET', 'HANDSHAKE_NO_SSL_SUPPORT'].includes(code) ||
      /closed connection|connection closed|other side closed|socket hang up|wrong version number|disconnected before secure TLS|packets out of order/i.test(
        message,
      ),
  );
}

/** `error` of a failed check as the error to report: explained when it is one of the known causes, else as it is. */
function explain(service: Service, error: unknown, address: string, endpoints: Endpoints, caSet: boolean, protocolFix: string): unknown {
  if (error instanceof ServiceCheckError) return error;
  if (chain(error).some((c) => c.code === 'ETIMEDOUT' || /connection timeout|timed out/i.test(c.message))) return timedOut(service, endpoints);
  const unreachable = explainConnectionError(error, endpoints);
  if (unreachable && unreachable.service === service) return unreachable;
  const tls = explainTls(service, error, address, caSet);
  if (tls) return tls;
  if (isProtocolMismatch(error))
    return new ServiceCheckError(service, 'SECURITY_PROTOCOL_MISMATCH', address, `hung up during the handshake (${firstMessage(error)})`, protocolFix);
  return error;
}

/** The innermost message of `error` (what the socket said, not a client's summary of it), without kafkajs' prefix. */
const firstMessage = (error: unknown) =>
  (
    chain(error)
      .filter((c) => c.message)
      .at(-1)?.message ?? errorMessage(error)
  ).replace(/^Connection error: /, '');

// Kafka ---------------------------------------------------------------------------------------

async function deniedTopics(admin: Admin, topics: readonly string[]): Promise<string[]> {
  // One request per topic: a metadata answer fails on its first topic error, which would hide the others.
  const denied = await Promise.all(
    topics.map((topic) =>
      admin.fetchTopicMetadata({ topics: [topic] }).then(
        () => undefined,
        (error: unknown) => {
          const type = chain(error).find((c) => /_AUTHORIZATION_FAILED$|^UNKNOWN_TOPIC_OR_PARTITION$/.test(c.code))?.code;
          if (type === 'TOPIC_AUTHORIZATION_FAILED') return topic;
          if (type === 'UNKNOWN_TOPIC_OR_PARTITION') return undefined; // described, just not created yet: the process creates it
          throw error;
        },
      ),
    ),
  );
  return denied.filter((t): t is string => t !== undefined);
}

async function checkKafka(endpoints: Endpoints, options: ServiceCheckOptions): Promise<void> {
  const security = endpoints.kafkaSecurity;
  const address = endpoints.kafkaBrokers.join(',');
  const sasl = security.sasl;
  const who = sasl === undefined ? 'this client' : sasl.mechanism === 'OAUTHBEARER' ? 'the OAUTHBEARER token' : `user "${sasl.username}"`;
  const userKey = sasl?.mechanism === 'OAUTHBEARER' ? 'PUSH_KAFKA_SASL_OAUTHBEARER_TOKEN' : 'PUSH_KAFKA_SASL_USERNAME';
  const aclFix = `grant ${who} the ACLs docs/operations.md lists ("Connecting to a secured cluster"), or set ${userKey} to one that has them`;
  const admin = kafkaClient(endpoints, { clientId: 'push-start-check', retry: { retries: 0 }, requestTimeout: endpoints.connectTimeoutMs }).admin();
  try {
    await admin.connect();
    await admin.describeCluster();
    const denied = await deniedTopics(admin, options.kafkaTopics ?? []);
    if (denied.length > 0)
      throw new ServiceCheckError(
        'kafka',
        'AUTHORIZATION_FAILED',
        address,
        `refused ${who} access to topic ${denied.join(', ')} (TOPIC_AUTHORIZATION_FAILED)`,
        aclFix,
      );
  } catch (error) {
    const codes = chain(error);
    if (codes.some((c) => c.name === 'KafkaJSSASLAuthenticationError' || /SASL .*authentication failed/i.test(c.message))) {
      const fix =
        sasl?.mechanism === 'OAUTHBEARER'
          ? 'check the token of PUSH_KAFKA_SASL_OAUTHBEARER_TOKEN (or the file PUSH_KAFKA_SASL_OAUTHBEARER_TOKEN_FILE names)'
          : 'check PUSH_KAFKA_SASL_PASSWORD (or the file PUSH_KAFKA_SASL_PASSWORD_FILE names) and PUSH_KAFKA_SASL_USERNAME';
      throw new ServiceCheckError('kafka', 'AUTHENTICATION_FAILED', address, `refused the ${sasl?.mechanism ?? 'SASL'} credentials of ${who}`, fix);
    }
    if (codes.some((c) => c.code === 'UNSUPPORTED_SASL_MECHANISM'))
      throw new ServiceCheckError(
        'kafka',
        'SASL_MECHANISM_UNSUPPORTED',
        address,
        `does not offer SASL mechanism ${sasl?.mechanism}`,
        'set PUSH_KAFKA_SASL_MECHANISM to one its listener enables',
      );
    if (codes.some((c) => c.code === 'CLUSTER_AUTHORIZATION_FAILED'))
      throw new ServiceCheckError('kafka', 'AUTHORIZATION_FAILED', address, `refused ${who} to describe the cluster (CLUSTER_AUTHORIZATION_FAILED)`, aclFix);
    throw explain(
      'kafka',
      error,
      address,
      endpoints,
      security.tls?.ca !== undefined,
      `its listener expects another security protocol than PUSH_KAFKA_SECURITY_PROTOCOL=${security.protocol} (TLS or not, SASL or not): set PUSH_KAFKA_SECURITY_PROTOCOL to the listener's`,
    );
  } finally {
    await admin.disconnect().catch(() => undefined); // best-effort: the check's outcome is decided
  }
}

// The schema registry and ClickHouse (HTTP) ---------------------------------------------------------

/** The URL's scheme, host and path, without any credentials it may carry. */
function printable(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname === '/' ? '' : u.pathname}`;
  } catch {
    return '(an invalid URL)';
  }
}

const httpProtocolFix = (key: string) =>
  `the server speaks another protocol than the scheme of ${key} (https: or http:): set ${key} to the scheme and port it serves`;

async function httpGet(
  url: string,
  tls: TlsMaterial | undefined,
  headers: Record<string, string>,
  timeoutMs: number,
): Promise<{ status: number; body: string }> {
  const dispatcher = tlsDispatcher(tls);
  const response = await fetch(url, { headers, signal: AbortSignal.timeout(timeoutMs), ...(dispatcher ? { dispatcher } : {}) });
  return { status: response.status, body: await response.text() };
}

async function checkRegistry(endpoints: Endpoints): Promise<void> {
  const { auth, tls } = endpoints.schemaRegistry;
  const address = printable(endpoints.schemaRegistryUrl);
  let answer: { status: number; body: string };
  try {
    const headers: Record<string, string> = auth ? { authorization: `Basic ${Buffer.from(`${auth.username}:${auth.password}`).toString('base64')}` } : {};
    answer = await httpGet(`${endpoints.schemaRegistryUrl.replace(/\/$/, '')}/config`, tls, headers, endpoints.connectTimeoutMs);
  } catch (error) {
    throw explain('registry', error, address, endpoints, tls?.ca !== undefined, httpProtocolFix('PUSH_SCHEMA_REGISTRY_URL'));
  }
  if (answer.status === 401 || answer.status === 403)
    throw new ServiceCheckError(
      'registry',
      'AUTHENTICATION_FAILED',
      address,
      `refused ${auth ? `the credentials of user "${auth.username}"` : 'a request without credentials'} (HTTP ${answer.status})`,
      'set PUSH_SCHEMA_REGISTRY_USERNAME and PUSH_SCHEMA_REGISTRY_PASSWORD (or PUSH_SCHEMA_REGISTRY_PASSWORD_FILE)',
    );
  if (answer.status >= 300)
    throw new ServiceCheckError(
      'registry',
      'UNEXPECTED_ANSWER',
      address,
      `answered HTTP ${answer.status} to GET /config`,
      'set PUSH_SCHEMA_REGISTRY_URL to the root of a Confluent-compatible API (Apicurio: .../apis/ccompat/v7)',
    );
}

async function checkClickhouse(endpoints: Endpoints): Promise<void> {
  const address = printable(endpoints.clickhouseUrl);
  const url = new URL(endpoints.clickhouseUrl);
  url.searchParams.set('query', 'SELECT 1');
  const headers: Record<string, string> = { 'X-ClickHouse-User': endpoints.clickhouseUser };
  if (endpoints.clickhousePassword) headers['X-ClickHouse-Key'] = endpoints.clickhousePassword;
  let answer: { status: number; body: string };
  try {
    answer = await httpGet(url.toString(), endpoints.clickhouseTls, headers, endpoints.connectTimeoutMs);
  } catch (error) {
    throw explain('clickhouse', error, address, endpoints, endpoints.clickhouseTls?.ca !== undefined, httpProtocolFix('PUSH_CLICKHOUSE_URL'));
  }
  if (answer.status === 401 || answer.status === 403 || /Code: (192|193|194|516)\b|Authentication failed|Wrong password|Unknown user/i.test(answer.body))
    throw new ServiceCheckError(
      'clickhouse',
      'AUTHENTICATION_FAILED',
      address,
      `refused user "${endpoints.clickhouseUser}"`,
      'check PUSH_CLICKHOUSE_PASSWORD (or the file PUSH_CLICKHOUSE_PASSWORD_FILE names) and PUSH_CLICKHOUSE_USER',
    );
  if (answer.status >= 300)
    throw new ServiceCheckError(
      'clickhouse',
      'UNEXPECTED_ANSWER',
      address,
      `answered HTTP ${answer.status} to SELECT 1`,
      'set PUSH_CLICKHOUSE_URL to its HTTP interface',
    );
}

// MySQL --------------------------------------------------------------------------------------

async function checkMysqlShard(endpoints: Endpoints, url: string, key: string): Promise<void> {
  // Without the database: a database not created yet is for migrations to create, not a failure here.
  const { database, ...server } = mysqlClientOptions(url, endpoints.mysqlSecurity, key);
  const address = `${server.host}:${server.port}/${database}`;
  const tls = endpoints.mysqlSecurity.tls;
  let connection: mysql.Connection | undefined;
  try {
    connection = await mysql.createConnection({ ...server, connectTimeout: endpoints.connectTimeoutMs });
    await connection.query('SELECT 1');
  } catch (error) {
    const codes = chain(error);
    if (codes.some((c) => c.code === 'HANDSHAKE_NO_SSL_SUPPORT'))
      throw new ServiceCheckError(
        'mysql',
        'SECURITY_PROTOCOL_MISMATCH',
        address,
        'does not offer TLS',
        'set PUSH_MYSQL_TLS=false, or enable TLS on the server',
      );
    if (codes.some((c) => c.code === 'ER_SECURE_TRANSPORT_REQUIRED' || /insecure transport/i.test(c.message)))
      throw new ServiceCheckError('mysql', 'SECURITY_PROTOCOL_MISMATCH', address, 'requires TLS', 'set PUSH_MYSQL_TLS=true (and PUSH_MYSQL_TLS_CA_FILE)');
    if (codes.some((c) => c.code === 'ER_ACCESS_DENIED_ERROR' || c.code === 'ER_DBACCESS_DENIED_ERROR'))
      throw new ServiceCheckError(
        'mysql',
        'AUTHENTICATION_FAILED',
        address,
        `refused user "${server.user}" (access denied)`,
        `check its password (the one in ${key}, else PUSH_MYSQL_PASSWORD or the file PUSH_MYSQL_PASSWORD_FILE names)${tls ? '' : ', and PUSH_MYSQL_TLS if the user must connect over TLS'}`,
      );
    throw explain(
      'mysql',
      error,
      address,
      endpoints,
      tls?.ca !== undefined,
      tls ? 'set PUSH_MYSQL_TLS to whether the server speaks TLS' : 'it may require TLS: set PUSH_MYSQL_TLS=true',
    );
  } finally {
    await connection?.end().catch(() => undefined); // best-effort: the check's outcome is decided
  }
}

async function checkMysql(endpoints: Endpoints): Promise<void> {
  const urls = endpoints.mysqlShards;
  for (const [i, url] of urls.entries()) await checkMysqlShard(endpoints, url, urls.length > 1 ? `PUSH_MYSQL_SHARDS[${i}]` : 'PUSH_MYSQL_URL');
}

// All --------------------------------------------------------------------------------------

const CHECKS: Readonly<Record<Service, (endpoints: Endpoints, options: ServiceCheckOptions) => Promise<void>>> = {
  kafka: checkKafka,
  registry: checkRegistry,
  mysql: checkMysql,
  clickhouse: checkClickhouse,
};

function timedOut(service: Service, endpoints: Endpoints): ServiceCheckError {
  const keys = KEYS[service];
  const addresses = serviceAddresses(endpoints)[service];
  return new ServiceCheckError(
    service,
    'CONNECT_TIMEOUT',
    addresses.map((a) => `${a.host}:${a.port}`).join(','),
    `did not finish connecting (TLS, authentication, one request) within PUSH_CONNECT_TIMEOUT_MS=${endpoints.connectTimeoutMs}`,
    `if ${keys.address} is right, it may expect another security protocol (${keys.protocol}) or be overloaded`,
  );
}

/**
 * Checks `services` (in that order; the first failure is thrown): each port answers
 * (ServiceUnreachableError, pipeline/connections.ts), then each accepts a connection as the
 * process's clients make it, within PUSH_CONNECT_TIMEOUT_MS.
 */
export async function checkServices(services: readonly Service[], endpoints: Endpoints, options: ServiceCheckOptions = {}): Promise<void> {
  await checkReachable(services, endpoints, Math.min(3000, endpoints.connectTimeoutMs));
  const outcomes = await Promise.allSettled(
    services.map((service) => withTimeout(CHECKS[service](endpoints, options), endpoints.connectTimeoutMs, () => timedOut(service, endpoints))),
  );
  const failed = outcomes.find((o): o is PromiseRejectedResult => o.status === 'rejected');
  if (failed) throw failed.reason;
}
