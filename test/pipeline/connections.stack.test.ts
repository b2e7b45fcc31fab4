/**
 * A service that is not where its PUSH_* key says: pushctl names the service and the key to fix
 * (pipeline/connections.ts), before the command starts and when a client fails to connect later on.
 * Each case points one key at a port nothing listens on; the rest of the stack is the real one.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import mysql from 'mysql2/promise';
import { kafkaClient } from '../../common/kafka-client.ts';
import { readEndpoints } from '../../common/endpoints.ts';
import { explainConnectionError } from '../../pipeline/connections.ts';
import { pushctl } from '../cli/pushctl-process.ts';

/** A port that was free a moment ago and that nothing listens on now. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

test('an unreachable service is named with the PUSH_* key to fix, for each of Kafka, the registry, MySQL and ClickHouse', async () => {
  const port = await closedPort();
  const cases: Array<{ env: Record<string, string>; args: string[]; service: string; key: string }> = [
    { env: { PUSH_KAFKA_BROKERS: `127.0.0.1:${port}` }, args: ['status'], service: 'Kafka', key: 'PUSH_KAFKA_BROKERS' },
    {
      env: { PUSH_SCHEMA_REGISTRY_URL: `http://127.0.0.1:${port}/apis/ccompat/v7` },
      args: ['replay', '--since', '1h'],
      service: 'the schema registry',
      key: 'PUSH_SCHEMA_REGISTRY_URL',
    },
    {
      env: { PUSH_MYSQL_URL: `mysql://root:hunter2-secret@127.0.0.1:${port}/offline_push` },
      args: ['tokens', 'show', 'u1'],
      service: 'MySQL',
      key: 'PUSH_MYSQL_URL',
    },
    { env: { PUSH_CLICKHOUSE_URL: `http://127.0.0.1:${port}` }, args: ['arrival'], service: 'ClickHouse', key: 'PUSH_CLICKHOUSE_URL' },
  ];
  await Promise.all(
    cases.map(async ({ env, args, service, key }) => {
      const started = Date.now();
      const result = await pushctl(args, env);
      assert.equal(result.code, 1, `${key}: exit code`);
      assert.equal(
        result.stderr.trim(),
        `pushctl: cannot reach ${service} at 127.0.0.1:${port} (connection refused): set ${key} to where it runs, or start the local stack with pushctl stack up`,
      );
      assert.ok(Date.now() - started < 30_000, `${key}: said at once, not after the clients' retries`);
      assert.doesNotMatch(result.stderr + result.stdout, /hunter2/, 'a password in a URL is never printed');
    }),
  );
});

test("a client's own connection error is explained the same way (the errors of mysql2, kafkajs and fetch)", async () => {
  const port = await closedPort();
  const endpoints = readEndpoints({
    ...process.env,
    PUSH_KAFKA_BROKERS: `127.0.0.1:${port}`,
    PUSH_MYSQL_URL: `mysql://root@127.0.0.1:${port}/offline_push`,
  });
  const mysqlError = await mysql.createConnection({ uri: endpoints.mysqlUrl }).then(
    () => assert.fail('connected to a closed port'),
    (e: unknown) => e,
  );
  // Kafka and MySQL at the same closed port: the first service whose address matches is named.
  assert.match(
    explainConnectionError(mysqlError, { ...endpoints, kafkaBrokers: [] })!.message,
    /^cannot reach MySQL at 127\.0\.0\.1:\d+ \(connection refused\): set PUSH_MYSQL_URL/,
  );

  const admin = kafkaClient(endpoints, { clientId: 'test', retry: { retries: 0 } }).admin();
  const kafkaError = await admin.connect().then(
    () => assert.fail('connected to a closed port'),
    (e: unknown) => e,
  );
  assert.match(
    explainConnectionError(kafkaError, endpoints)!.message,
    /^cannot reach Kafka at 127\.0\.0\.1:\d+ \(connection refused\): set PUSH_KAFKA_BROKERS/,
  );

  const registryEndpoints = { ...endpoints, kafkaBrokers: [], mysqlUrl: 'mysql://root@127.0.0.1:3306/x', schemaRegistryUrl: `http://127.0.0.1:${port}/apis` };
  const fetchError = await fetch(`http://127.0.0.1:${port}/apis/subjects`).then(
    () => assert.fail('connected to a closed port'),
    (e: unknown) => e,
  );
  assert.match(
    explainConnectionError(fetchError, registryEndpoints)!.message,
    /^cannot reach the schema registry at 127\.0\.0\.1:\d+ .*PUSH_SCHEMA_REGISTRY_URL/,
  );
  assert.equal(explainConnectionError(new Error('something else'), endpoints), undefined);
});
