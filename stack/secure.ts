import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import kafkajs, { type AclEntry } from 'kafkajs';
import { readInt } from '../common/config.ts';
import { kafkaClient } from '../common/kafka-client.ts';
import { clickhouseService } from './clickhouse.ts';
import { brokerAdminSecurity, kafkaService, type KafkaInstance } from './kafka.ts';
import { mariadbInstanceService } from './mariadb.ts';
import { ensureDir, stackPath } from './paths.ts';
import { registryService } from './registry.ts';
import type { StackService } from './service.ts';
import { certificateAuthority, issueCertificate, type CertificateFiles } from './tls.ts';

/**
 * The secured local stack (`pushctl stack up --secure`, docs/operations.md "Connecting to a secured
 * cluster"): the same four services as the plain stack, beside it (ports and folders of their own,
 * so both run at once), each reached the way a company's cluster is:
 *
 * - Kafka: clients over SASL_SSL only (SCRAM-SHA-256/512, PLAIN, OAUTHBEARER with unsigned test
 *   tokens) or mutual TLS; the StandardAuthorizer refuses any principal without ACLs.
 * - Apicurio: HTTPS only, HTTP basic auth on every request.
 * - MariaDB: a server of its own, TLS required on every TCP connection, a user with a password.
 * - ClickHouse: a server of its own, HTTPS only, a user with a password.
 *
 * One certificate authority (made with openssl, stack/tls.ts) signs a server certificate for
 * 127.0.0.1 that every service presents, and a client certificate for the user `push`. Passwords
 * are random, made once, in files readable by this user only; clients get them as `*_FILE` keys
 * (secureClientEnv), never as values. Users:
 *
 * - `push`: the pipeline's, everywhere; on Kafka ALL on every topic, group and transactional id.
 * - `guest`: Kafka only, allowed topics named `guest.*` and nothing of the pipeline's (a user
 *   without rights on the ingest topic).
 * - `admin`: Kafka's super user (inter-broker traffic, the ACLs above).
 *
 * Ports: PUSH_STACK_SECURE_PORT (default 19400) and the six after it: Kafka SASL_SSL, its
 * controller, its mutual-TLS listener, the registry (and its management port), MariaDB, ClickHouse.
 */
export interface SecureStack {
  /** Prefix of the services' names (PID files, logs, data folders): `<name>-kafka`, ... */
  readonly name: string;
  /** Certificates and secrets: `<dir>/tls`, `<dir>/secrets`. */
  readonly dir: string;
  readonly ports: {
    readonly kafka: number;
    readonly kafkaController: number;
    readonly kafkaMtls: number;
    readonly registry: number;
    readonly mysql: number;
    readonly clickhouse: number;
  };
}

/** The users of the secured stack. */
export const SECURE_USERS = { pipeline: 'push', guest: 'guest', admin: 'admin' } as const;
/** The prefix of the topics `guest` may use. */
export const GUEST_TOPIC_PREFIX = 'guest.';
const DATABASE = 'offline_push';

/** The secured stack `name` (default `secure`), its ports from PUSH_STACK_SECURE_PORT unless given. */
export function secureStack(env: NodeJS.ProcessEnv = process.env, name = 'secure', basePort?: number): SecureStack {
  const base = basePort ?? readInt(env, 'PUSH_STACK_SECURE_PORT', 19400, { min: 1, max: 65535 - 7 });
  return {
    name,
    dir: stackPath(name),
    ports: { kafka: base, kafkaController: base + 1, kafkaMtls: base + 2, registry: base + 3, mysql: base + 5, clickhouse: base + 6 },
  };
}

/** Files of the secured stack: the authority, the server's and the client's certificates, and one file per secret. */
export interface SecureMaterial {
  readonly ca: CertificateFiles;
  readonly server: CertificateFiles;
  /** Key and certificate in one file (Kafka's PEM keystore). */
  readonly serverKeystore: string;
  /** The client certificate of `push` (mutual TLS). */
  readonly client: CertificateFiles;
  /** Secret files, by what they are. */
  readonly secrets: Readonly<Record<'kafkaAdmin' | 'kafkaPipeline' | 'kafkaGuest' | 'registry' | 'mysql' | 'clickhouse', string>>;
}

/** A secret file holding a random password, made once (mode 0600). */
function secretFile(dir: string, name: string): string {
  const file = join(ensureDir(dir), `${name}.password`);
  if (!existsSync(file)) writeFileSync(file, randomBytes(18).toString('base64url'), { mode: 0o600 });
  return file;
}

/** Makes what is missing of the stack's certificates and secrets; returns their files. */
export function secureMaterial(stack: SecureStack): SecureMaterial {
  const tls = join(stack.dir, 'tls');
  const ca = certificateAuthority(tls);
  // For the address only, no host name: a client that reaches it by another name is refused (a hostname mismatch).
  const server = issueCertificate(ca, tls, 'server', 'offline-push local stack server', { server: { ips: ['127.0.0.1'] } });
  const client = issueCertificate(ca, tls, 'client-push', SECURE_USERS.pipeline, { client: true });
  const serverKeystore = join(tls, 'server-keystore.pem');
  if (!existsSync(serverKeystore)) writeFileSync(serverKeystore, readFileSync(server.key, 'utf8') + readFileSync(server.cert, 'utf8'), { mode: 0o600 });
  const dir = join(stack.dir, 'secrets');
  return {
    ca,
    server,
    serverKeystore,
    client,
    secrets: {
      kafkaAdmin: secretFile(dir, 'kafka-admin'),
      kafkaPipeline: secretFile(dir, 'kafka-push'),
      kafkaGuest: secretFile(dir, 'kafka-guest'),
      registry: secretFile(dir, 'registry-push'),
      mysql: secretFile(dir, 'mysql-push'),
      clickhouse: secretFile(dir, 'clickhouse-push'),
    },
  };
}

const read = (file: string) => readFileSync(file, 'utf8');

/** The stack's broker. */
export function secureKafka(stack: SecureStack, material: SecureMaterial = secureMaterial(stack)): KafkaInstance {
  return {
    name: `${stack.name}-kafka`,
    port: stack.ports.kafka,
    controllerPort: stack.ports.kafkaController,
    secured: {
      mtlsPort: stack.ports.kafkaMtls,
      keystore: material.serverKeystore,
      truststore: material.ca.cert,
      admin: { name: SECURE_USERS.admin, password: read(material.secrets.kafkaAdmin) },
      users: [
        { name: SECURE_USERS.pipeline, password: read(material.secrets.kafkaPipeline) },
        { name: SECURE_USERS.guest, password: read(material.secrets.kafkaGuest) },
      ],
    },
  };
}

// kafkajs is CommonJS whose ACL enums Node's named-export detection does not find.
const { AclOperationTypes, AclPermissionTypes, AclResourceTypes, ResourcePatternTypes } = kafkajs;

/** The ACLs of the stack's users (creating one that exists changes nothing). */
function stackAcls(): AclEntry[] {
  const allow = (principal: string, resourceType: kafkajs.AclResourceTypes, resourceName: string, pattern = ResourcePatternTypes.LITERAL): AclEntry => ({
    principal: `User:${principal}`,
    host: '*',
    resourceType,
    resourceName,
    resourcePatternType: pattern,
    operation: AclOperationTypes.ALL,
    permissionType: AclPermissionTypes.ALLOW,
  });
  const { pipeline, guest } = SECURE_USERS;
  return [
    // The local stack's pipeline user serves any topic prefix and application id (tests, demo, bench runs each use their own).
    allow(pipeline, AclResourceTypes.TOPIC, '*'),
    allow(pipeline, AclResourceTypes.GROUP, '*'),
    allow(pipeline, AclResourceTypes.TRANSACTIONAL_ID, '*'),
    allow(guest, AclResourceTypes.TOPIC, GUEST_TOPIC_PREFIX, ResourcePatternTypes.PREFIXED),
    allow(guest, AclResourceTypes.GROUP, '*'),
  ];
}

/** The broker as a part of the stack: `up` also sets the ACLs, as the super user. */
function secureKafkaService(instance: KafkaInstance): StackService {
  const broker = kafkaService(instance);
  return {
    ...broker,
    async up() {
      const how = await broker.up();
      const admin = kafkaClient(
        { kafkaBrokers: [`127.0.0.1:${instance.port}`], kafkaSecurity: brokerAdminSecurity(instance.secured)! },
        { retry: { retries: 5 } },
      ).admin();
      await admin.connect();
      try {
        await admin.createAcls({ acl: stackAcls() });
      } finally {
        await admin.disconnect();
      }
      return how;
    },
  };
}

/** The secured stack's services, in start order. */
export function secureServices(stack: SecureStack): StackService[] {
  const m = secureMaterial(stack);
  const tls = { cert: m.server.cert, key: m.server.key, ca: m.ca.cert };
  const user = (secret: string) => ({ name: SECURE_USERS.pipeline, password: read(secret) });
  return [
    secureKafkaService(secureKafka(stack, m)),
    registryService({
      name: `${stack.name}-registry`,
      port: stack.ports.registry,
      dir: stackPath(`${stack.name}-registry`),
      secured: { ...tls, user: user(m.secrets.registry) },
    }),
    mariadbInstanceService({
      name: `${stack.name}-mariadb`,
      port: stack.ports.mysql,
      dir: stackPath(`${stack.name}-mariadb`),
      tls,
      user: user(m.secrets.mysql),
      database: DATABASE,
    }),
    clickhouseService({
      name: `${stack.name}-clickhouse`,
      port: stack.ports.clickhouse,
      dir: stackPath(`${stack.name}-clickhouse`),
      secured: { ...tls, user: user(m.secrets.clickhouse) },
    }),
  ];
}

/**
 * The PUSH_* settings that point every process at the secured stack as the user `push`: SASL_SSL
 * with SCRAM-SHA-512, HTTPS with basic auth, TLS to MariaDB, HTTPS to ClickHouse, one CA; every
 * secret as a `*_FILE` key.
 */
export function secureClientEnv(stack: SecureStack, material: SecureMaterial = secureMaterial(stack)): Record<string, string> {
  const { ports } = stack;
  const { ca, secrets } = material;
  return {
    PUSH_KAFKA_BROKERS: `127.0.0.1:${ports.kafka}`,
    PUSH_KAFKA_SECURITY_PROTOCOL: 'SASL_SSL',
    PUSH_KAFKA_SASL_MECHANISM: 'SCRAM-SHA-512',
    PUSH_KAFKA_SASL_USERNAME: SECURE_USERS.pipeline,
    PUSH_KAFKA_SASL_PASSWORD_FILE: secrets.kafkaPipeline,
    PUSH_KAFKA_TLS_CA_FILE: ca.cert,
    PUSH_SCHEMA_REGISTRY_URL: `https://127.0.0.1:${ports.registry}/apis/ccompat/v7`,
    PUSH_SCHEMA_REGISTRY_USERNAME: SECURE_USERS.pipeline,
    PUSH_SCHEMA_REGISTRY_PASSWORD_FILE: secrets.registry,
    PUSH_SCHEMA_REGISTRY_TLS_CA_FILE: ca.cert,
    PUSH_MYSQL_URL: `mysql://${SECURE_USERS.pipeline}@127.0.0.1:${ports.mysql}/${DATABASE}`,
    PUSH_MYSQL_PASSWORD_FILE: secrets.mysql,
    PUSH_MYSQL_TLS: 'true',
    PUSH_MYSQL_TLS_CA_FILE: ca.cert,
    PUSH_CLICKHOUSE_URL: `https://127.0.0.1:${ports.clickhouse}`,
    PUSH_CLICKHOUSE_USER: SECURE_USERS.pipeline,
    PUSH_CLICKHOUSE_PASSWORD_FILE: secrets.clickhouse,
    PUSH_CLICKHOUSE_TLS_CA_FILE: ca.cert,
  };
}
