/**
 * The keys of secured connections: TLS and SASL to Kafka, HTTPS and basic auth to the schema
 * registry, TLS to MySQL and HTTPS to ClickHouse, and the connect timeout every start-up check
 * keeps (docs/operations.md, "Connecting to a secured cluster"). Declared like every key
 * (common/config-keys.ts spreads them into CONFIG_KEYS). Every `secret` key may instead be given as
 * a file, `<KEY>_FILE` (common/config.ts reads it), and is never printed.
 */
import { bool, int, MINUTE, oneOf, str, type StringKey } from './config-key-kinds.ts';

export const KAFKA_SECURITY_PROTOCOLS = ['PLAINTEXT', 'SSL', 'SASL_PLAINTEXT', 'SASL_SSL'] as const;
export const KAFKA_SASL_MECHANISMS = ['PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512', 'OAUTHBEARER'] as const;

/** A PEM file key of one service's TLS settings. */
const pemFile = (key: `PUSH_${string}`, doc: string): StringKey => str({ key, section: 'security', default: '', defaultDoc: 'none', doc });

export const SECURITY_KEYS = {
  PUSH_KAFKA_SECURITY_PROTOCOL: oneOf(KAFKA_SECURITY_PROTOCOLS, {
    key: 'PUSH_KAFKA_SECURITY_PROTOCOL',
    section: 'security',
    default: 'PLAINTEXT',
    doc: "how every Kafka client of the project (workers, entry, receiver, pushctl, bench, chaos) talks to the brokers, as Kafka's `security.protocol`: `SSL` and `SASL_SSL` encrypt (TLS), `SASL_*` authenticate with PUSH_KAFKA_SASL_*",
  }),
  PUSH_KAFKA_SASL_MECHANISM: oneOf(KAFKA_SASL_MECHANISMS, {
    key: 'PUSH_KAFKA_SASL_MECHANISM',
    section: 'security',
    default: 'SCRAM-SHA-512',
    doc: 'SASL mechanism with a `SASL_*` protocol',
  }),
  PUSH_KAFKA_SASL_USERNAME: str({
    key: 'PUSH_KAFKA_SASL_USERNAME',
    section: 'security',
    default: '',
    defaultDoc: 'none',
    doc: 'SASL user (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512); required with a `SASL_*` protocol',
  }),
  PUSH_KAFKA_SASL_PASSWORD: str({
    key: 'PUSH_KAFKA_SASL_PASSWORD',
    section: 'security',
    default: '',
    defaultDoc: 'none',
    secret: true,
    doc: "the SASL user's password",
  }),
  PUSH_KAFKA_SASL_OAUTHBEARER_TOKEN: str({
    key: 'PUSH_KAFKA_SASL_OAUTHBEARER_TOKEN',
    section: 'security',
    default: '',
    defaultDoc: 'none',
    secret: true,
    doc: 'the token (a JWT) OAUTHBEARER presents; its file, when given as one, is read again at every authentication, so a refresher that replaces it is followed',
  }),
  PUSH_KAFKA_TLS_CA_FILE: pemFile(
    'PUSH_KAFKA_TLS_CA_FILE',
    "PEM file of the certificate authorities that sign the brokers' certificates; unset, the system's trusted authorities",
  ),
  PUSH_KAFKA_TLS_CERT_FILE: pemFile('PUSH_KAFKA_TLS_CERT_FILE', 'PEM client certificate for mutual TLS, with PUSH_KAFKA_TLS_KEY_FILE'),
  PUSH_KAFKA_TLS_KEY_FILE: pemFile('PUSH_KAFKA_TLS_KEY_FILE', 'PEM private key of PUSH_KAFKA_TLS_CERT_FILE'),
  PUSH_KAFKA_TLS_KEY_PASSWORD: str({
    key: 'PUSH_KAFKA_TLS_KEY_PASSWORD',
    section: 'security',
    default: '',
    defaultDoc: 'none',
    secret: true,
    doc: 'passphrase of an encrypted PUSH_KAFKA_TLS_KEY_FILE',
  }),
  PUSH_SCHEMA_REGISTRY_USERNAME: str({
    key: 'PUSH_SCHEMA_REGISTRY_USERNAME',
    section: 'security',
    default: '',
    defaultDoc: 'none',
    doc: "the registry's basic-auth user (Confluent Cloud: the API key)",
  }),
  PUSH_SCHEMA_REGISTRY_PASSWORD: str({
    key: 'PUSH_SCHEMA_REGISTRY_PASSWORD',
    section: 'security',
    default: '',
    defaultDoc: 'none',
    secret: true,
    doc: "the registry's basic-auth password (Confluent Cloud: the API secret)",
  }),
  PUSH_SCHEMA_REGISTRY_TLS_CA_FILE: pemFile(
    'PUSH_SCHEMA_REGISTRY_TLS_CA_FILE',
    "PEM file of the authorities that sign an `https:` PUSH_SCHEMA_REGISTRY_URL's certificate; unset, the system's",
  ),
  PUSH_MYSQL_PASSWORD: str({
    key: 'PUSH_MYSQL_PASSWORD',
    section: 'security',
    default: '',
    defaultDoc: 'none',
    secret: true,
    doc: 'password of the MySQL user of every URL (PUSH_MYSQL_URL, PUSH_MYSQL_SHARDS) that carries none',
  }),
  PUSH_MYSQL_TLS: bool({
    key: 'PUSH_MYSQL_TLS',
    section: 'security',
    default: false,
    doc: "connect to MySQL over TLS; the server's certificate is verified, its name included, unless PUSH_MYSQL_TLS_REJECT_UNAUTHORIZED=false",
  }),
  PUSH_MYSQL_TLS_CA_FILE: pemFile('PUSH_MYSQL_TLS_CA_FILE', "PEM file of the authorities that sign MySQL's certificate; unset, the system's"),
  PUSH_MYSQL_TLS_CERT_FILE: pemFile('PUSH_MYSQL_TLS_CERT_FILE', 'PEM client certificate (a user `REQUIRE X509`), with PUSH_MYSQL_TLS_KEY_FILE'),
  PUSH_MYSQL_TLS_KEY_FILE: pemFile('PUSH_MYSQL_TLS_KEY_FILE', 'PEM private key of PUSH_MYSQL_TLS_CERT_FILE'),
  PUSH_MYSQL_TLS_REJECT_UNAUTHORIZED: bool({
    key: 'PUSH_MYSQL_TLS_REJECT_UNAUTHORIZED',
    section: 'security',
    default: true,
    doc: 'with PUSH_MYSQL_TLS: refuse a server whose certificate no trusted authority signed or that names another host; `false` encrypts without knowing who answers',
  }),
  PUSH_CLICKHOUSE_TLS_CA_FILE: pemFile(
    'PUSH_CLICKHOUSE_TLS_CA_FILE',
    "PEM file of the authorities that sign an `https:` PUSH_CLICKHOUSE_URL's certificate; unset, the system's",
  ),
  PUSH_CONNECT_TIMEOUT_MS: int({
    key: 'PUSH_CONNECT_TIMEOUT_MS',
    section: 'security',
    default: 10_000,
    min: 100,
    max: 5 * MINUTE,
    doc: "how long opening a connection (TCP, TLS, authentication) may take, ms: the Kafka clients' connection and authentication timeouts; a process's start-up check of its services (docs/operations.md) fails within it, naming the service and the key to fix",
  }),
};
