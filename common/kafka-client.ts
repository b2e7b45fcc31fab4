/**
 * The one place Kafka clients are made. Every kafkajs client of the project (the workers' runtime,
 * the entry, the receiver, pushctl, the demo, bench and chaos, the tests) comes from `kafkaClient`,
 * so TLS and SASL (PUSH_KAFKA_SECURITY_PROTOCOL and the keys beside it,
 * common/config-keys-security.ts) apply to all of them alike and none can quietly connect in plain
 * text to a cluster that wants otherwise (test/static/kafka-clients.test.ts keeps it so).
 */
import { readFileSync } from 'node:fs';
import { Kafka, logLevel, type KafkaConfig, type SASLOptions } from 'kafkajs';
import { isKeySet, readKey, type Env } from './config.ts';
import { KAFKA_SASL_MECHANISMS, KAFKA_SECURITY_PROTOCOLS, SECURITY_KEYS as KEYS } from './config-keys-security.ts';
import { ConfigError, PushError, errorMessage } from './errors.ts';
import { rememberSecret } from './secret-values.ts';
import { readTlsMaterial, tlsKeysSet, type TlsKeys, type TlsMaterial } from './tls-files.ts';

export type KafkaSecurityProtocol = (typeof KAFKA_SECURITY_PROTOCOLS)[number];
export type KafkaSaslMechanism = (typeof KAFKA_SASL_MECHANISMS)[number];

/** SASL credentials: a user and password, or an OAUTHBEARER token (or the file that holds the current one). */
export type KafkaSasl =
  | { readonly mechanism: 'PLAIN' | 'SCRAM-SHA-256' | 'SCRAM-SHA-512'; readonly username: string; readonly password: string }
  | { readonly mechanism: 'OAUTHBEARER'; readonly token?: string; readonly tokenFile?: string };

/**
 * How clients reach the brokers besides their addresses. Plain data (structured-cloneable: a worker
 * thread gets it as it is, pipeline/broker-delay-thread.mjs).
 */
export interface KafkaSecurity {
  readonly protocol: KafkaSecurityProtocol;
  /** With `SSL` and `SASL_SSL`: the authorities to trust and the client certificate, if any. */
  readonly tls?: TlsMaterial;
  /** With `SASL_*`. */
  readonly sasl?: KafkaSasl;
  /** Connection and authentication timeout of every client, ms (PUSH_CONNECT_TIMEOUT_MS). */
  readonly connectTimeoutMs: number;
}

/** What a client needs: the bootstrap brokers and, unless plain text, the security (Endpoints has both). */
export interface KafkaAccess {
  readonly kafkaBrokers: readonly string[];
  readonly kafkaSecurity?: KafkaSecurity;
}

export const PLAINTEXT: KafkaSecurity = Object.freeze({ protocol: 'PLAINTEXT', connectTimeoutMs: KEYS.PUSH_CONNECT_TIMEOUT_MS.default });

export const KAFKA_TLS_KEYS: TlsKeys = {
  ca: KEYS.PUSH_KAFKA_TLS_CA_FILE,
  cert: KEYS.PUSH_KAFKA_TLS_CERT_FILE,
  key: KEYS.PUSH_KAFKA_TLS_KEY_FILE,
  passphrase: KEYS.PUSH_KAFKA_TLS_KEY_PASSWORD,
};

const usesTls = (protocol: KafkaSecurityProtocol) => protocol === 'SSL' || protocol === 'SASL_SSL';
const usesSasl = (protocol: KafkaSecurityProtocol) => protocol.startsWith('SASL_');

function readSasl(env: Env, protocol: KafkaSecurityProtocol): KafkaSasl {
  const mechanism = readKey(env, KEYS.PUSH_KAFKA_SASL_MECHANISM);
  const required = (key: { key: string }) =>
    new ConfigError(key.key, `required with PUSH_KAFKA_SECURITY_PROTOCOL=${protocol} and PUSH_KAFKA_SASL_MECHANISM=${mechanism}`);
  if (mechanism === 'OAUTHBEARER') {
    const tokenFile = env.PUSH_KAFKA_SASL_OAUTHBEARER_TOKEN_FILE || undefined;
    // Read once here too: a missing or unreadable file fails at start, naming the key.
    const token = readKey(env, KEYS.PUSH_KAFKA_SASL_OAUTHBEARER_TOKEN);
    if (token === '') throw required(KEYS.PUSH_KAFKA_SASL_OAUTHBEARER_TOKEN);
    return tokenFile ? { mechanism, tokenFile } : { mechanism, token };
  }
  const username = readKey(env, KEYS.PUSH_KAFKA_SASL_USERNAME);
  const password = readKey(env, KEYS.PUSH_KAFKA_SASL_PASSWORD);
  if (username === '') throw required(KEYS.PUSH_KAFKA_SASL_USERNAME);
  if (password === '') throw required(KEYS.PUSH_KAFKA_SASL_PASSWORD);
  return { mechanism, username, password };
}

/**
 * The Kafka security settings of `env`, checked against each other: TLS files with a protocol
 * without TLS, or SASL credentials with one without SASL, are refused rather than ignored.
 */
export function readKafkaSecurity(env: Env = process.env): KafkaSecurity {
  const protocol = readKey(env, KEYS.PUSH_KAFKA_SECURITY_PROTOCOL);
  const connectTimeoutMs = readKey(env, KEYS.PUSH_CONNECT_TIMEOUT_MS);
  if (!usesTls(protocol)) {
    const stray = tlsKeysSet(env, KAFKA_TLS_KEYS)[0];
    if (stray) throw new ConfigError(stray, `set, but PUSH_KAFKA_SECURITY_PROTOCOL=${protocol} does not use TLS (SSL and SASL_SSL do)`);
  }
  if (!usesSasl(protocol)) {
    const saslKeys = [KEYS.PUSH_KAFKA_SASL_USERNAME, KEYS.PUSH_KAFKA_SASL_PASSWORD, KEYS.PUSH_KAFKA_SASL_OAUTHBEARER_TOKEN].map((k) => k.key);
    const stray = saslKeys.find((k) => isKeySet(env, k));
    if (stray)
      throw new ConfigError(stray, `set, but PUSH_KAFKA_SECURITY_PROTOCOL=${protocol} does not authenticate with SASL (SASL_SSL and SASL_PLAINTEXT do)`);
  }
  const tls = usesTls(protocol) ? readTlsMaterial(env, KAFKA_TLS_KEYS) : undefined;
  const sasl = usesSasl(protocol) ? readSasl(env, protocol) : undefined;
  return Object.freeze({ protocol, connectTimeoutMs, ...(tls ? { tls } : {}), ...(sasl ? { sasl } : {}) });
}

/** The OAUTHBEARER token: the file's current contents when given as a file (a refresher may have replaced it). */
function oauthToken(sasl: Extract<KafkaSasl, { mechanism: 'OAUTHBEARER' }>): string {
  if (!sasl.tokenFile) return sasl.token ?? '';
  try {
    const token = readFileSync(sasl.tokenFile, 'utf8').trim();
    rememberSecret(token);
    return token;
  } catch (error) {
    throw new PushError('KAFKA_OAUTHBEARER_TOKEN_UNREADABLE', `PUSH_KAFKA_SASL_OAUTHBEARER_TOKEN_FILE: cannot read ${sasl.tokenFile}: ${errorMessage(error)}`);
  }
}

function saslOptions(sasl: KafkaSasl): SASLOptions {
  switch (sasl.mechanism) {
    case 'OAUTHBEARER':
      return { mechanism: 'oauthbearer', oauthBearerProvider: () => Promise.resolve({ value: oauthToken(sasl) }) };
    default:
      // kafkajs names the mechanisms in lower case: plain, scram-sha-256, scram-sha-512.
      return { mechanism: sasl.mechanism.toLowerCase() as 'plain' | 'scram-sha-256' | 'scram-sha-512', username: sasl.username, password: sasl.password };
  }
}

/** What kafkajs takes for `security`: its `ssl`, `sasl` and timeouts. */
export function kafkaConnectionConfig(security: KafkaSecurity = PLAINTEXT): Pick<KafkaConfig, 'ssl' | 'sasl' | 'connectionTimeout' | 'authenticationTimeout'> {
  const { tls, sasl } = security;
  return {
    connectionTimeout: security.connectTimeoutMs,
    authenticationTimeout: security.connectTimeoutMs,
    ...(usesTls(security.protocol) ? { ssl: tls ? { ...tls } : true } : {}),
    ...(sasl ? { sasl: saslOptions(sasl) } : {}),
  };
}

/** The rest of a client's settings: its id, retries, timeouts; logging defaults to off (kafkajs' logger is not redacted). */
export type KafkaClientConfig = Omit<KafkaConfig, 'brokers' | 'ssl' | 'sasl'>;

/** A kafkajs client for `access` (usually the Endpoints), secured as its `kafkaSecurity` says. */
export function kafkaClient(access: KafkaAccess, config: KafkaClientConfig = {}): Kafka {
  // The one construction of the project (test/static/kafka-clients.test.ts).
  return new Kafka({
    logLevel: logLevel.NOTHING,
    ...kafkaConnectionConfig(access.kafkaSecurity),
    ...config,
    brokers: [...access.kafkaBrokers],
  });
}
