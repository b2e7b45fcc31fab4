/**
 * The security keys (common/config-keys-security.ts) as the readers take them: secrets from
 * `<KEY>_FILE`, TLS files checked at start, settings that would be ignored refused, each error
 * naming its key; and no secret read survives into a log line or `pushctl config`.
 */
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readKey, secretValue } from '../../common/config.ts';
import { CONFIG_KEYS } from '../../common/config-keys.ts';
import { maskUrlPasswords, renderConfigText } from '../../common/config-table.ts';
import { readClickhouseTls, readEndpoints } from '../../common/endpoints.ts';
import { ConfigError } from '../../common/errors.ts';
import { kafkaConnectionConfig, readKafkaSecurity } from '../../common/kafka-client.ts';
import { createLogger } from '../../common/log.ts';
import { mysqlClientOptions, readMysqlSecurity } from '../../common/mysql-url.ts';
import { readRegistryAccess } from '../../common/registry-client.ts';
import { scrubSecrets } from '../../common/secret-values.ts';
import { certificateAuthority, issueCertificate, type CertificateFiles } from '../../stack/tls.ts';
import { configurationErrors } from '../../cli/config-check.ts';

let dir: string;
let ca: CertificateFiles;
let client: CertificateFiles;
let encryptedKey: string;

before(() => {
  dir = mkdtempSync(join(tmpdir(), 'security-config-'));
  ca = certificateAuthority(dir);
  client = issueCertificate(ca, dir, 'client', 'push', { client: true });
  encryptedKey = join(dir, 'client-key.enc.pem');
  execFileSync('openssl', ['pkey', '-in', client.key, '-aes256', '-passout', 'pass:key-passphrase', '-out', encryptedKey]);
});

after(() => rmSync(dir, { recursive: true, force: true }));

const file = (name: string, content: string) => {
  const path = join(dir, name);
  writeFileSync(path, content, { mode: 0o600 });
  return path;
};

/** The ConfigError `read` throws. */
function configError(read: () => unknown): ConfigError {
  try {
    read();
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  assert.fail('no ConfigError');
}

describe('secrets from files', () => {
  test('<KEY>_FILE gives a secret key its value, one trailing newline dropped', () => {
    const path = file('kafka.password', 's3cret-from-a-file\n');
    assert.equal(readKey({ PUSH_KAFKA_SASL_PASSWORD_FILE: path }, CONFIG_KEYS.PUSH_KAFKA_SASL_PASSWORD), 's3cret-from-a-file');
    assert.equal(
      readKey({ PUSH_CLICKHOUSE_PASSWORD_FILE: path }, CONFIG_KEYS.PUSH_CLICKHOUSE_PASSWORD),
      's3cret-from-a-file',
      'every secret key has the variant',
    );
    assert.equal(readKey({ PUSH_KAFKA_SASL_PASSWORD: 'in-the-env' }, CONFIG_KEYS.PUSH_KAFKA_SASL_PASSWORD), 'in-the-env');
  });

  test('both set, or a file that cannot be read, fail naming the key and never the value', () => {
    const both = configError(() => secretValue({ PUSH_MYSQL_PASSWORD: 'x-value', PUSH_MYSQL_PASSWORD_FILE: file('m', 'y') }, 'PUSH_MYSQL_PASSWORD'));
    assert.equal(both.message, 'PUSH_MYSQL_PASSWORD: set either PUSH_MYSQL_PASSWORD or PUSH_MYSQL_PASSWORD_FILE, not both');
    const missing = configError(() => readKey({ PUSH_MYSQL_PASSWORD_FILE: join(dir, 'absent') }, CONFIG_KEYS.PUSH_MYSQL_PASSWORD));
    assert.equal(missing.message, `PUSH_MYSQL_PASSWORD_FILE: cannot read ${join(dir, 'absent')}: ENOENT`);
  });

  test('a secret read is scrubbed from log lines wherever it appears, not only in fields named like secrets', () => {
    readKey({ PUSH_SCHEMA_REGISTRY_PASSWORD_FILE: file('registry.password', 'registry-pa"ss') }, CONFIG_KEYS.PUSH_SCHEMA_REGISTRY_PASSWORD);
    const lines: string[] = [];
    const write = process.stderr.write.bind(process.stderr);
    process.stderr.write = ((chunk: string) => lines.push(chunk) > 0) as typeof process.stderr.write;
    try {
      createLogger({}, 'info').info('registry answered', { error: new Error('401 for https://push:registry-pa"ss@registry/config'), note: 'registry-pa"ss' });
    } finally {
      process.stderr.write = write;
    }
    assert.equal(lines.length, 1);
    assert.doesNotMatch(lines[0]!, /registry-pa/);
    assert.match(lines[0]!, /\[redacted\]/);
    assert.equal(scrubSecrets(`https://push:${encodeURIComponent('registry-pa"ss')}@h`), 'https://push:[redacted]@h');
  });

  test('pushctl config shows that a secret is set, and from which file, never its value; URLs lose their passwords', () => {
    const path = file('ch.password', 'clickhouse-pw-123');
    const text = renderConfigText({
      PUSH_CLICKHOUSE_PASSWORD_FILE: path,
      PUSH_KAFKA_SASL_PASSWORD: 'kafka-pw-456',
      PUSH_MYSQL_URL: 'mysql://push:db-pw-789@db:3306/offline_push',
    });
    assert.match(text, new RegExp(`PUSH_CLICKHOUSE_PASSWORD .*\\(set: \\*\\*\\* from PUSH_CLICKHOUSE_PASSWORD_FILE=${path}\\)`));
    assert.match(text, /PUSH_KAFKA_SASL_PASSWORD .*\(set: \*\*\*\)/);
    assert.match(text, /PUSH_MYSQL_URL .*\(set: mysql:\/\/push:\*\*\*@db:3306\/offline_push\)/);
    assert.doesNotMatch(text, /clickhouse-pw|kafka-pw|db-pw/);
    assert.equal(maskUrlPasswords('a,mysql://u:p@h/d,mysql://v@h/d'), 'a,mysql://u:***@h/d,mysql://v@h/d');
  });
});

describe('Kafka security', () => {
  test('plain text by default; SASL_SSL with SCRAM, a CA and mutual TLS become the kafkajs settings', () => {
    assert.deepEqual(kafkaConnectionConfig(readKafkaSecurity({})), { connectionTimeout: 10_000, authenticationTimeout: 10_000 });
    const security = readKafkaSecurity({
      PUSH_KAFKA_SECURITY_PROTOCOL: 'SASL_SSL',
      PUSH_KAFKA_SASL_MECHANISM: 'SCRAM-SHA-256',
      PUSH_KAFKA_SASL_USERNAME: 'push',
      PUSH_KAFKA_SASL_PASSWORD_FILE: file('k', 'pw-of-push\n'),
      PUSH_KAFKA_TLS_CA_FILE: ca.cert,
      PUSH_KAFKA_TLS_CERT_FILE: client.cert,
      PUSH_KAFKA_TLS_KEY_FILE: encryptedKey,
      PUSH_KAFKA_TLS_KEY_PASSWORD: 'key-passphrase',
      PUSH_CONNECT_TIMEOUT_MS: '4000',
    });
    const config = kafkaConnectionConfig(security);
    assert.deepEqual(config.sasl, { mechanism: 'scram-sha-256', username: 'push', password: 'pw-of-push' });
    const ssl = config.ssl as { ca: Buffer; cert: Buffer; key: Buffer; passphrase: string };
    assert.match(ssl.ca.toString(), /BEGIN CERTIFICATE/);
    assert.match(ssl.cert.toString(), /BEGIN CERTIFICATE/);
    assert.match(ssl.key.toString(), /BEGIN ENCRYPTED PRIVATE KEY/);
    assert.equal(ssl.passphrase, 'key-passphrase');
    assert.equal(config.connectionTimeout, 4000);
    assert.equal(kafkaConnectionConfig(readKafkaSecurity({ PUSH_KAFKA_SECURITY_PROTOCOL: 'SSL' })).ssl, true, "SSL without a CA: the system's authorities");
  });

  test('OAUTHBEARER reads its token file again at every authentication', async () => {
    const tokenFile = file('token', 'token-one\n');
    const security = readKafkaSecurity({
      PUSH_KAFKA_SECURITY_PROTOCOL: 'SASL_SSL',
      PUSH_KAFKA_SASL_MECHANISM: 'OAUTHBEARER',
      PUSH_KAFKA_SASL_OAUTHBEARER_TOKEN_FILE: tokenFile,
    });
    const sasl = kafkaConnectionConfig(security).sasl as { oauthBearerProvider: () => Promise<{ value: string }> };
    assert.equal((await sasl.oauthBearerProvider()).value, 'token-one');
    writeFileSync(tokenFile, 'token-two');
    assert.equal((await sasl.oauthBearerProvider()).value, 'token-two');
  });

  test('each inconsistent or unusable setting fails at start naming its key', () => {
    const cases: Array<[Record<string, string>, string]> = [
      [
        { PUSH_KAFKA_SECURITY_PROTOCOL: 'SASL_SSL' },
        'PUSH_KAFKA_SASL_USERNAME: required with PUSH_KAFKA_SECURITY_PROTOCOL=SASL_SSL and PUSH_KAFKA_SASL_MECHANISM=SCRAM-SHA-512',
      ],
      [
        { PUSH_KAFKA_SECURITY_PROTOCOL: 'SASL_SSL', PUSH_KAFKA_SASL_USERNAME: 'push' },
        'PUSH_KAFKA_SASL_PASSWORD: required with PUSH_KAFKA_SECURITY_PROTOCOL=SASL_SSL and PUSH_KAFKA_SASL_MECHANISM=SCRAM-SHA-512',
      ],
      [
        { PUSH_KAFKA_SECURITY_PROTOCOL: 'SASL_SSL', PUSH_KAFKA_SASL_MECHANISM: 'OAUTHBEARER' },
        'PUSH_KAFKA_SASL_OAUTHBEARER_TOKEN: required with PUSH_KAFKA_SECURITY_PROTOCOL=SASL_SSL and PUSH_KAFKA_SASL_MECHANISM=OAUTHBEARER',
      ],
      [{ PUSH_KAFKA_TLS_CA_FILE: ca.cert }, 'PUSH_KAFKA_TLS_CA_FILE: set, but PUSH_KAFKA_SECURITY_PROTOCOL=PLAINTEXT does not use TLS (SSL and SASL_SSL do)'],
      [
        { PUSH_KAFKA_SECURITY_PROTOCOL: 'SSL', PUSH_KAFKA_SASL_USERNAME: 'push' },
        'PUSH_KAFKA_SASL_USERNAME: set, but PUSH_KAFKA_SECURITY_PROTOCOL=SSL does not authenticate with SASL (SASL_SSL and SASL_PLAINTEXT do)',
      ],
      [{ PUSH_KAFKA_SECURITY_PROTOCOL: 'SSL', PUSH_KAFKA_TLS_CA_FILE: client.key }, `PUSH_KAFKA_TLS_CA_FILE: ${client.key} holds no PEM certificate`],
      [
        { PUSH_KAFKA_SECURITY_PROTOCOL: 'SSL', PUSH_KAFKA_TLS_CA_FILE: join(dir, 'none.pem') },
        `PUSH_KAFKA_TLS_CA_FILE: cannot read ${join(dir, 'none.pem')}: ENOENT`,
      ],
      [{ PUSH_KAFKA_SECURITY_PROTOCOL: 'SSL', PUSH_KAFKA_TLS_CERT_FILE: client.cert }, 'PUSH_KAFKA_TLS_KEY_FILE: required with PUSH_KAFKA_TLS_CERT_FILE'],
      [{ PUSH_KAFKA_SECURITY_PROTOCOL: 'SSL', PUSH_KAFKA_TLS_KEY_FILE: client.key }, 'PUSH_KAFKA_TLS_CERT_FILE: required with PUSH_KAFKA_TLS_KEY_FILE'],
      [
        {
          PUSH_KAFKA_SECURITY_PROTOCOL: 'SSL',
          PUSH_KAFKA_TLS_CERT_FILE: client.cert,
          PUSH_KAFKA_TLS_KEY_FILE: encryptedKey,
          PUSH_KAFKA_TLS_KEY_PASSWORD: 'wrong',
        },
        `PUSH_KAFKA_TLS_KEY_PASSWORD: does not decrypt ${encryptedKey}`,
      ],
      [{ PUSH_KAFKA_SECURITY_PROTOCOL: 'TLS' }, 'PUSH_KAFKA_SECURITY_PROTOCOL: expected one of PLAINTEXT | SSL | SASL_PLAINTEXT | SASL_SSL, got "TLS"'],
    ];
    for (const [env, message] of cases) assert.equal(configError(() => readKafkaSecurity(env)).message, message, JSON.stringify(env));
  });
});

describe('the registry, MySQL and ClickHouse', () => {
  test('registry credentials and CA; a CA for an http: URL, or half the credentials, are refused', () => {
    const access = readRegistryAccess(
      { PUSH_SCHEMA_REGISTRY_USERNAME: 'push', PUSH_SCHEMA_REGISTRY_PASSWORD: 'reg-pw', PUSH_SCHEMA_REGISTRY_TLS_CA_FILE: ca.cert },
      'https://r:8081/apis/ccompat/v7',
    );
    assert.deepEqual(access.auth, { username: 'push', password: 'reg-pw' });
    assert.match(access.tls!.ca!.toString(), /BEGIN CERTIFICATE/);
    assert.equal(
      configError(() => readRegistryAccess({ PUSH_SCHEMA_REGISTRY_TLS_CA_FILE: ca.cert }, 'http://r:8081')).message,
      'PUSH_SCHEMA_REGISTRY_TLS_CA_FILE: set, but PUSH_SCHEMA_REGISTRY_URL is not an https: URL',
    );
    assert.equal(
      configError(() => readRegistryAccess({ PUSH_SCHEMA_REGISTRY_USERNAME: 'push' }, 'https://r')).message,
      'PUSH_SCHEMA_REGISTRY_PASSWORD: required with PUSH_SCHEMA_REGISTRY_USERNAME',
    );
  });

  test('MySQL: PUSH_MYSQL_PASSWORD for URLs without one, TLS verified by default and held to the address, TLS files without PUSH_MYSQL_TLS refused', () => {
    const security = readMysqlSecurity({ PUSH_MYSQL_PASSWORD_FILE: file('db', 'db-password'), PUSH_MYSQL_TLS: 'true', PUSH_MYSQL_TLS_CA_FILE: ca.cert });
    const byAddress = mysqlClientOptions('mysql://push@127.0.0.1:3307/offline_push', security);
    assert.equal(byAddress.password, 'db-password');
    assert.equal(byAddress.database, 'offline_push');
    const ssl = byAddress.ssl as { rejectUnauthorized: boolean; verifyIdentity: boolean; ca: Buffer };
    assert.deepEqual([ssl.rejectUnauthorized, ssl.verifyIdentity], [true, true]);
    assert.equal(typeof byAddress.stream, 'function', 'a server reached by address gets a socket that carries it');
    assert.equal(mysqlClientOptions('mysql://push@db.internal:3306/offline_push', security).stream, undefined);
    assert.equal(mysqlClientOptions('mysql://push:in-url@db:3306/x', security).password, 'in-url', "the URL's own password wins");
    const unverified = readMysqlSecurity({ PUSH_MYSQL_TLS: 'true', PUSH_MYSQL_TLS_REJECT_UNAUTHORIZED: 'false' });
    assert.deepEqual(mysqlClientOptions('mysql://push@127.0.0.1/x', unverified).ssl, { rejectUnauthorized: false, verifyIdentity: false });
    assert.equal(mysqlClientOptions('mysql://push@127.0.0.1/x', readMysqlSecurity({})).ssl, undefined, 'no TLS unless asked for');
    assert.equal(
      configError(() => readMysqlSecurity({ PUSH_MYSQL_TLS_CA_FILE: ca.cert })).message,
      'PUSH_MYSQL_TLS_CA_FILE: set, but PUSH_MYSQL_TLS is not true',
    );
  });

  test('ClickHouse: a CA only with an https: URL; every error is collected by the configuration check', () => {
    assert.match(readClickhouseTls({ PUSH_CLICKHOUSE_TLS_CA_FILE: ca.cert }, 'https://ch:8443')!.ca!.toString(), /BEGIN CERTIFICATE/);
    assert.equal(
      configError(() => readClickhouseTls({ PUSH_CLICKHOUSE_TLS_CA_FILE: ca.cert }, 'http://ch:8123')).message,
      'PUSH_CLICKHOUSE_TLS_CA_FILE: set, but PUSH_CLICKHOUSE_URL is not an https: URL',
    );
    const endpoints = readEndpoints({
      PUSH_CLICKHOUSE_URL: 'https://ch:8443',
      PUSH_CLICKHOUSE_TLS_CA_FILE: ca.cert,
      PUSH_CLICKHOUSE_PASSWORD_FILE: file('c', 'ch-pw'),
    });
    assert.equal(endpoints.clickhousePassword, 'ch-pw');
    const keys = configurationErrors({ PUSH_KAFKA_SECURITY_PROTOCOL: 'SASL_SSL', PUSH_MYSQL_TLS_CA_FILE: ca.cert, PUSH_CLICKHOUSE_TLS_CA_FILE: ca.cert }).map(
      (e) => e.key,
    );
    for (const key of ['PUSH_KAFKA_SASL_USERNAME', 'PUSH_MYSQL_TLS_CA_FILE', 'PUSH_CLICKHOUSE_TLS_CA_FILE'])
      assert.ok(keys.includes(key), `${key} in ${keys.join(', ')}`);
  });
});
