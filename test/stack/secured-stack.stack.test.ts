/**
 * The pipeline on the secured stack (stack/secure.ts), as it runs against a company's cluster:
 * Kafka over SASL_SSL with SCRAM and ACLs, the registry over HTTPS with basic auth, MariaDB over
 * TLS, ClickHouse over HTTPS, every secret read from a file. This file starts its own secured stack
 * (ports and folders of its own, beside the shared plain stack) and stops what it started.
 *
 * Nothing there listens in plain text, so a client that did not take the security settings fails
 * rather than falling back. A wrong password, an authority that does not sign the broker's
 * certificate, a user without ACLs on the ingest topic, a plain client at the TLS listener and a
 * name the certificate does not hold each stop a worker at start, naming the service and the key,
 * within PUSH_CONNECT_TIMEOUT_MS; no secret reaches a log line, `pushctl config` or /metrics.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import mysql from 'mysql2/promise';
import { startRun, type PipelineRun, type RunVerdict } from '../../chaos/harness.ts';
import { readEndpoints } from '../../common/endpoints.ts';
import { mysqlClientOptions } from '../../common/mysql-url.ts';
import { freePortRange } from '../../demo/ports.ts';
import { LOG_DIR, stackPath } from '../../stack/paths.ts';
import {
  GUEST_TOPIC_PREFIX,
  SECURE_USERS,
  secureClientEnv,
  secureMaterial,
  secureServices,
  secureStack,
  type SecureMaterial,
  type SecureStack,
} from '../../stack/secure.ts';
import type { StackService } from '../../stack/service.ts';
import { certificateAuthority } from '../../stack/tls.ts';
import { checkServices, ServiceCheckError } from '../../pipeline/service-checks.ts';
import { topicName } from '../../pipeline/topics.ts';
import { pushctl } from '../cli/pushctl-process.ts';
import { PARSING_APPS } from '../receipts/support.ts';
import { uniqueName } from '../support/stack.ts';

const NAME = 'secured-stack-test';
/** Short, so that a check that waited for it would show; every failure below must come sooner or as this. */
const CONNECT_TIMEOUT_MS = 8_000;

let stack: SecureStack;
let material: SecureMaterial;
let services: StackService[] = [];
const started: StackService[] = [];
/** The settings of a process of the pipeline on the secured stack, as user `push`. */
let secured: Record<string, string>;
/** Every password of the stack and the wrong one the tests give: none may be printed anywhere. */
let secrets: string[];
/** A vendor apps file for the workers that are to fail at start (no vendor is called). */
let appsFile: string;

const parts = () => ['kafka', 'registry', 'mariadb', 'clickhouse'].map((p) => stackPath(`${NAME}-${p}`));

before(async () => {
  stack = secureStack(process.env, NAME, await freePortRange(7));
  services = secureServices(stack);
  // A run of this file that was killed may have left its services behind (PID files): stop them, start afresh.
  for (const s of [...services].reverse()) await s.down();
  for (const dir of [stack.dir, ...parts()]) rmSync(dir, { recursive: true, force: true });
  services = secureServices(stack);
  material = secureMaterial(stack);
  for (const service of services) {
    if ((await service.up()) === 'started') started.push(service);
  }
  secured = { ...secureClientEnv(stack, material), PUSH_CONNECT_TIMEOUT_MS: String(CONNECT_TIMEOUT_MS) };
  appsFile = join(stack.dir, 'apps.json');
  writeFileSync(appsFile, JSON.stringify(PARSING_APPS), { mode: 0o600 });
  writeFileSync(join(stack.dir, 'wrong.password'), 'not-the-password-0f-push', { mode: 0o600 });
  secrets = [...Object.values(material.secrets).map((f) => readFileSync(f, 'utf8')), 'not-the-password-0f-push'];
});

after(async () => {
  for (const service of [...started].reverse()) await service.down();
  for (const dir of [stack.dir, ...parts()]) rmSync(dir, { recursive: true, force: true });
});

function assertNoSecret(text: string, where: string): void {
  for (const secret of secrets) assert.ok(!text.includes(secret), `${where} holds a secret`);
}

describe('the pipeline on the secured stack', () => {
  test(
    'end to end over SASL_SSL (SCRAM), HTTPS and TLS with secrets from files: every push reaches its vendor once and its row is in ClickHouse; no secret in logs, /metrics or pushctl config',
    { timeout: 300_000 },
    async () => {
      Object.assign(process.env, secured);
      let run: PipelineRun | undefined;
      let verdict: RunVerdict;
      let metrics = '';
      try {
        run = await startRun({
          instances: 1,
          partitions: 2,
          users: 40,
          messagesPerUser: 2,
          durationMs: 6_000,
          startStack: false,
          workerEnv: { PUSH_LOG_LEVEL: 'info' },
        });
        await run.play();
        await run.drain(120_000);
        verdict = await run.verdict(60_000);
        metrics = await (await fetch(`http://127.0.0.1:${run.env.workers[0]!.metricsPort}/metrics`)).text();
      } finally {
        await run?.close();
      }
      const { pushes, outcomes, arrival } = verdict;
      assert.ok(run.scenario.expectedPushes.length > 0, 'the scenario pushes');
      assert.deepEqual(pushes.lost, [], 'expected pushes that never reached their vendor');
      assert.equal(pushes.duplicates, 0, 'pushes that reached their vendor more than once');
      assert.deepEqual(pushes.unexpected, [], 'pushes the scenario suppresses');
      assert.equal(pushes.delivered, run.scenario.expectedPushes.length);
      assert.deepEqual(outcomes.missing, [], 'inputs without an outcome');
      assert.equal(outcomes.asExpected, outcomes.inputs);
      // Accounting went over HTTPS into ClickHouse: its rows equal what the emulators saw.
      assert.ok(arrival.exact, `ClickHouse vs emulators: ${JSON.stringify(arrival.byVendor)}`);
      assert.equal(
        Object.values(arrival.byVendor).reduce((n, v) => n + v.clickhouse.arrived, 0),
        run.scenario.expectedPushes.length,
        'arrived pushes in ClickHouse',
      );

      assert.match(metrics, /push_outcomes_total/, 'the worker served its metrics');
      assertNoSecret(metrics, '/metrics');
      const log = readFileSync(join(LOG_DIR, `${run.env.run}-worker-0.log`), 'utf8');
      assert.match(log, /"level":"info"/, 'the worker logged');
      assertNoSecret(log, "the worker's log");
      const config = await pushctl(['config'], secured);
      assert.equal(config.code, 0, config.stderr);
      assert.match(config.stdout, /PUSH_KAFKA_SASL_PASSWORD .*\(set: \*\*\* from PUSH_KAFKA_SASL_PASSWORD_FILE=/);
      assertNoSecret(config.stdout + config.stderr, 'pushctl config');
    },
  );

  test('MySQL is reached over TLS, checked against the address it is reached by', async () => {
    const endpoints = readEndpoints(secured);
    const connection = await mysql.createConnection(mysqlClientOptions(endpoints.mysqlUrl, endpoints.mysqlSecurity));
    try {
      const [rows] = await connection.query("SHOW SESSION STATUS LIKE 'Ssl_version'");
      assert.match((rows as Array<{ Value: string }>)[0]!.Value, /^TLSv1\.[23]$/);
    } finally {
      await connection.end();
    }
  });
});

/** A worker (`pushctl run`) started with `overrides` over the secured settings: its exit code and what it printed. */
async function workerStart(overrides: Record<string, string>): Promise<{ code: number; output: string; ms: number }> {
  const started = Date.now();
  const result = await pushctl(
    ['run'],
    { ...secured, PUSH_TOPIC_PREFIX: `${uniqueName('sec')}.`, PUSH_STAGES: 'decisions', PUSH_APPS_CONFIG: appsFile, PUSH_METRICS_PORT: '0', ...overrides },
    120_000,
  );
  return { code: result.code, output: result.stdout + result.stderr, ms: Date.now() - started };
}

describe('a worker that cannot use the secured cluster stops at start, naming the service and the key', () => {
  const cases: Array<{ what: string; overrides: () => Record<string, string>; message: RegExp; reason: string }> = [
    {
      what: 'a wrong Kafka password',
      overrides: () => ({ PUSH_KAFKA_SASL_PASSWORD_FILE: join(stack.dir, 'wrong.password') }),
      message: /Kafka at 127\.0\.0\.1:\d+ refused the SCRAM-SHA-512 credentials of user "push": check PUSH_KAFKA_SASL_PASSWORD/,
      reason: 'KAFKA_AUTHENTICATION_FAILED',
    },
    {
      what: "an authority that does not sign the broker's certificate",
      overrides: () => ({ PUSH_KAFKA_TLS_CA_FILE: certificateAuthority(join(stack.dir, 'other-ca'), 'other', '/CN=another authority').cert }),
      message:
        /Kafka at 127\.0\.0\.1:\d+ presents a certificate no authority in PUSH_KAFKA_TLS_CA_FILE signs \(UNABLE_TO_VERIFY_LEAF_SIGNATURE\): set PUSH_KAFKA_TLS_CA_FILE/,
      reason: 'KAFKA_TLS_UNTRUSTED',
    },
    {
      what: 'a user without ACLs on the ingest topic',
      overrides: () => ({ PUSH_KAFKA_SASL_USERNAME: SECURE_USERS.guest, PUSH_KAFKA_SASL_PASSWORD_FILE: material.secrets.kafkaGuest }),
      message:
        /Kafka at 127\.0\.0\.1:\d+ refused user "guest" access to topic [^ ]*im\.message\.persisted[, ].*\(TOPIC_AUTHORIZATION_FAILED\).*PUSH_KAFKA_SASL_USERNAME/,
      reason: 'KAFKA_AUTHORIZATION_FAILED',
    },
    {
      what: 'a plain-text client at the TLS listener',
      overrides: () => ({
        PUSH_KAFKA_SECURITY_PROTOCOL: 'PLAINTEXT',
        PUSH_KAFKA_TLS_CA_FILE: '',
        PUSH_KAFKA_SASL_USERNAME: '',
        PUSH_KAFKA_SASL_PASSWORD_FILE: '',
      }),
      message:
        /Kafka at 127\.0\.0\.1:\d+ hung up during the handshake \(.*\): its listener expects another security protocol than PUSH_KAFKA_SECURITY_PROTOCOL=PLAINTEXT/,
      reason: 'KAFKA_SECURITY_PROTOCOL_MISMATCH',
    },
    {
      what: 'a broker reached by a name its certificate does not hold',
      overrides: () => ({ PUSH_KAFKA_BROKERS: `localhost:${stack.ports.kafka}` }),
      message: /Kafka at localhost:\d+ presents a certificate for another name .*: set PUSH_KAFKA_BROKERS/,
      reason: 'KAFKA_TLS_HOSTNAME_MISMATCH',
    },
  ];

  for (const c of cases) {
    test(`${c.what}: a start-up error naming the key, within PUSH_CONNECT_TIMEOUT_MS`, async () => {
      // The check itself, in this process: the cause, and no longer than the timeout.
      const env = { ...secured, ...c.overrides() };
      const t0 = Date.now();
      const error = await checkServices(['kafka'], readEndpoints(env), { kafkaTopics: [topicName('persisted', 'sec.')] }).then(
        () => assert.fail('the check passed'),
        (e: unknown) => e,
      );
      const checkMs = Date.now() - t0;
      assert.ok(error instanceof ServiceCheckError, String(error));
      assert.equal(error.code, c.reason);
      assert.match(error.message, c.message);
      assert.ok(checkMs < CONNECT_TIMEOUT_MS, `the check took ${checkMs} ms`);

      // A worker, the way an operator starts one: it exits 1 with the same message, and prints no secret.
      const worker = await workerStart(c.overrides());
      assert.equal(worker.code, 1, worker.output);
      assert.match(worker.output, c.message);
      assert.doesNotMatch(worker.output, /retrying in/, 'not retried: it will not change by itself');
      assertNoSecret(worker.output, "the worker's output");
    });
  }

  test('a listener that accepts the connection and never answers: CONNECT_TIMEOUT after PUSH_CONNECT_TIMEOUT_MS, not a hang', async () => {
    const sockets = new Set<import('node:net').Socket>();
    const silent: Server = createServer((socket) => sockets.add(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const { port } = silent.address() as { port: number };
    try {
      const t0 = Date.now();
      const error = await checkServices(
        ['kafka'],
        readEndpoints({ ...secured, PUSH_KAFKA_BROKERS: `127.0.0.1:${port}`, PUSH_CONNECT_TIMEOUT_MS: '2000' }),
      ).then(
        () => assert.fail('the check passed'),
        (e: unknown) => e,
      );
      const ms = Date.now() - t0;
      assert.ok(error instanceof ServiceCheckError, String(error));
      assert.equal(error.code, 'KAFKA_CONNECT_TIMEOUT');
      assert.match(error.message, /did not finish connecting .* within PUSH_CONNECT_TIMEOUT_MS=2000: if PUSH_KAFKA_BROKERS is right/);
      assert.ok(ms >= 1_900 && ms < 2_000 + 3_000, `failed after ${ms} ms`);
    } finally {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => silent.close(() => resolve()));
    }
  });

  test('the registry, MySQL and ClickHouse with a wrong password each name their key', async () => {
    const wrong = join(stack.dir, 'wrong.password');
    const cases = [
      {
        service: 'registry',
        key: 'PUSH_SCHEMA_REGISTRY_PASSWORD_FILE',
        message: /the schema registry at https:\/\/127\.0\.0\.1:\d+\/apis\/ccompat\/v7 refused the credentials of user "push" \(HTTP 401\)/,
      },
      {
        service: 'mysql',
        key: 'PUSH_MYSQL_PASSWORD_FILE',
        message: /MySQL at 127\.0\.0\.1:\d+\/offline_push refused user "push" \(access denied\): check its password .*PUSH_MYSQL_PASSWORD/,
      },
      {
        service: 'clickhouse',
        key: 'PUSH_CLICKHOUSE_PASSWORD_FILE',
        message: /ClickHouse at https:\/\/127\.0\.0\.1:\d+ refused user "push": check PUSH_CLICKHOUSE_PASSWORD/,
      },
    ] as const;
    for (const c of cases) {
      const error = await checkServices([c.service], readEndpoints({ ...secured, [c.key]: wrong })).then(
        () => assert.fail(`${c.service}: the check passed`),
        (e: unknown) => e,
      );
      assert.ok(error instanceof ServiceCheckError, `${c.service}: ${String(error)}`);
      assert.match(error.message, c.message);
      assertNoSecret(error.message, `${c.service}'s error`);
    }
    // And with the right ones, all four pass.
    await checkServices(['kafka', 'registry', 'mysql', 'clickhouse'], readEndpoints(secured));
  });
});

describe('the other ways into the secured Kafka', () => {
  /** An unsigned token for Kafka's unsecured validator (the local stack's stand-in for an identity provider). */
  const unsignedToken = (sub: string) => {
    const now = Math.floor(Date.now() / 1000);
    const part = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
    return `${part({ alg: 'none' })}.${part({ sub, iat: now, exp: now + 3600 })}.`;
  };

  test('SCRAM-SHA-256, PLAIN, OAUTHBEARER (token from a file) and mutual TLS reach the cluster with the ACLs of their user', async () => {
    const tokenFile = join(stack.dir, 'oauth.token');
    writeFileSync(tokenFile, unsignedToken(SECURE_USERS.pipeline), { mode: 0o600 });
    const topics = { kafkaTopics: [topicName('persisted', 'sec.')] };
    const noSasl = { PUSH_KAFKA_SASL_USERNAME: '', PUSH_KAFKA_SASL_PASSWORD_FILE: '' };
    const ways: Record<string, Record<string, string>> = {
      'SCRAM-SHA-256': { PUSH_KAFKA_SASL_MECHANISM: 'SCRAM-SHA-256' },
      PLAIN: { PUSH_KAFKA_SASL_MECHANISM: 'PLAIN' },
      OAUTHBEARER: { ...noSasl, PUSH_KAFKA_SASL_MECHANISM: 'OAUTHBEARER', PUSH_KAFKA_SASL_OAUTHBEARER_TOKEN_FILE: tokenFile },
      'mutual TLS': {
        ...noSasl,
        PUSH_KAFKA_SECURITY_PROTOCOL: 'SSL',
        PUSH_KAFKA_BROKERS: `127.0.0.1:${stack.ports.kafkaMtls}`,
        PUSH_KAFKA_TLS_CERT_FILE: material.client.cert,
        PUSH_KAFKA_TLS_KEY_FILE: material.client.key,
      },
    };
    for (const [way, overrides] of Object.entries(ways)) {
      await checkServices(['kafka'], readEndpoints({ ...secured, ...overrides }), topics).catch((error: unknown) => assert.fail(`${way}: ${String(error)}`));
    }
    // The token's subject is the principal: `guest`'s token gets guest's rights.
    writeFileSync(tokenFile, unsignedToken(SECURE_USERS.guest));
    const guest = { ...secured, ...ways.OAUTHBEARER };
    await checkServices(['kafka'], readEndpoints(guest), { kafkaTopics: [`${GUEST_TOPIC_PREFIX}anything`] });
    await assert.rejects(checkServices(['kafka'], readEndpoints(guest), topics), /refused the OAUTHBEARER token access to topic/);
    // Without its certificate the mutual-TLS listener refuses the client.
    const { PUSH_KAFKA_TLS_CERT_FILE: _cert, PUSH_KAFKA_TLS_KEY_FILE: _key, ...withoutCertificate } = ways['mutual TLS']!;
    await assert.rejects(
      checkServices(['kafka'], readEndpoints({ ...secured, ...withoutCertificate })),
      (e: unknown) => e instanceof ServiceCheckError && e.code === 'KAFKA_TLS_CLIENT_CERT_REFUSED' && /set PUSH_KAFKA_TLS_CERT_FILE/.test(e.message),
    );
  });
});
