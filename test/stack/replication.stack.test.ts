/**
 * Replication settings (docs/operations.md, "Cluster mode"): the 3-broker cluster's generated broker configuration, the
 * PUSH_REPLICATION_FACTOR / PUSH_MIN_INSYNC_REPLICAS keys, and the topics the pipeline creates with
 * them on the stack's broker. The cluster itself runs in `npm run chaos -- --brokers 3`, which
 * checks every run topic's replication there (chaos/cluster-faults.ts checkReplication).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { kafkaClient } from '../../common/kafka-client.ts';
import { serverProperties } from '../../stack/kafka.ts';
import { CLUSTER_REPLICATION, clusterClientEnv, clusterNodes } from '../../stack/kafka-cluster.ts';
import { stackBrokers, stackServices } from '../../stack/index.ts';
import { createPipelineTopics } from '../../pipeline/topics-admin.ts';
import { readReplication } from '../../pipeline/worker-config.ts';
import { configurationErrors } from '../../cli/config-check.ts';
import { ConfigError } from '../../common/errors.ts';
import { isTransientStartError } from '../../pipeline/worker.ts';
import { TopicCreationError } from '../../topology/create-topics.ts';
import { TOPICS, topicName, type TopicKey } from '../../pipeline/topics.ts';
import { stackEndpoints, uniqueName } from '../support/stack.ts';
import { deleteRunTopics } from '../support/run-topics.ts';

const props = (lines: string[]) => new Map(lines.filter((l) => l.includes('=')).map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));

test('the cluster has three combined nodes with their own ports, ids and data, one quorum, and replication 3 / min ISR 2 for everything', () => {
  const nodes = clusterNodes({});
  assert.deepEqual(
    nodes.map((n) => [n.name, n.port, n.controllerPort]),
    [
      ['kafka-1', 19192, 19195],
      ['kafka-2', 19193, 19196],
      ['kafka-3', 19194, 19197],
    ],
  );
  const configs = nodes.map((n) => props(serverProperties(n)));
  assert.deepEqual(
    configs.map((c) => c.get('node.id')),
    ['1', '2', '3'],
  );
  for (const [i, c] of configs.entries()) {
    assert.equal(c.get('process.roles'), 'broker,controller');
    assert.equal(c.get('controller.quorum.voters'), '1@127.0.0.1:19195,2@127.0.0.1:19196,3@127.0.0.1:19197');
    assert.equal(c.get('listeners'), `PLAINTEXT://127.0.0.1:${19192 + i},CONTROLLER://127.0.0.1:${19195 + i}`);
    assert.match(c.get('log.dirs')!, new RegExp(`/kafka-${i + 1}/data$`));
    for (const key of ['default.replication.factor', 'offsets.topic.replication.factor', 'transaction.state.log.replication.factor'])
      assert.equal(c.get(key), '3', key);
    for (const key of ['min.insync.replicas', 'transaction.state.log.min.isr']) assert.equal(c.get(key), '2', key);
    assert.equal(c.get('unclean.leader.election.enable'), 'false');
  }
  // The single node keeps replication 1, so the stack's broker and its tests are unchanged.
  const single = props(serverProperties({ name: 'kafka', port: 19092, controllerPort: 19093 }));
  assert.equal(single.get('node.id'), '1');
  assert.equal(single.get('controller.quorum.voters'), '1@127.0.0.1:19093');
  for (const key of ['default.replication.factor', 'min.insync.replicas', 'transaction.state.log.replication.factor', 'transaction.state.log.min.isr'])
    assert.equal(single.get(key), '1', key);
  assert.equal(single.has('unclean.leader.election.enable'), false);

  // Moving the cluster's ports moves every one of them; the clients' settings follow.
  const moved = clusterNodes({ PUSH_STACK_KAFKA_CLUSTER_PORT: '29000' });
  assert.deepEqual(
    moved.map((n) => [n.port, n.controllerPort]),
    [
      [29000, 29003],
      [29001, 29004],
      [29002, 29005],
    ],
  );
  assert.deepEqual(clusterClientEnv({ PUSH_STACK_KAFKA_CLUSTER_PORT: '29000' }), {
    PUSH_KAFKA_BROKERS: '127.0.0.1:29000,127.0.0.1:29001,127.0.0.1:29002',
    PUSH_REPLICATION_FACTOR: String(CLUSTER_REPLICATION.factor),
    PUSH_MIN_INSYNC_REPLICAS: String(CLUSTER_REPLICATION.minInsyncReplicas),
  });
  // --brokers 3 puts the cluster in the single broker's place; the rest of the stack is shared.
  assert.deepEqual(
    stackServices(3).map((s) => s.name),
    ['kafka-cluster', 'registry', 'mariadb', 'clickhouse'],
  );
  assert.equal(stackBrokers({}), 1);
  assert.throws(() => stackBrokers({ PUSH_STACK_BROKERS: '2' }), /PUSH_STACK_BROKERS/);
});

test('replication keys: default 1/1, read as set, min ISR above the factor refused naming the key, all errors at once', () => {
  assert.deepEqual(readReplication({}), { factor: 1, minInsyncReplicas: 1 });
  assert.deepEqual(readReplication({ PUSH_REPLICATION_FACTOR: '3', PUSH_MIN_INSYNC_REPLICAS: '2' }), { factor: 3, minInsyncReplicas: 2 });
  assert.throws(
    () => readReplication({ PUSH_REPLICATION_FACTOR: '3', PUSH_MIN_INSYNC_REPLICAS: '4' }),
    (error: unknown) => error instanceof ConfigError && error.key === 'PUSH_MIN_INSYNC_REPLICAS' && /\[1, 3\]/.test(error.message),
  );
  const keys = configurationErrors({ PUSH_REPLICATION_FACTOR: 'three', PUSH_PARTITIONS: '0' }).map((e) => e.key);
  assert.ok(keys.includes('PUSH_REPLICATION_FACTOR') && keys.includes('PUSH_PARTITIONS'), `errors named ${keys.join(', ')}`);
  assert.deepEqual(
    configurationErrors({ PUSH_REPLICATION_FACTOR: '2', PUSH_MIN_INSYNC_REPLICAS: '3' }).map((e) => e.key),
    ['PUSH_MIN_INSYNC_REPLICAS'],
  );
});

test(
  'the pipeline topics get the configured replication; more replicas than brokers, or another partition count than the topics have, is refused with the reason',
  { timeout: 60_000 },
  async () => {
    const prefix = `${uniqueName('repl')}.`;
    const admin = kafkaClient(stackEndpoints(), { clientId: 'replication-test' }).admin();
    await admin.connect();
    try {
      const created = await createPipelineTopics({ partitions: 2, prefix, replication: { factor: 1, minInsyncReplicas: 1 } });
      const names = (Object.keys(TOPICS) as TopicKey[]).map((k) => topicName(k, prefix));
      assert.deepEqual([...created].sort(), [...names].sort());
      const { topics } = await admin.fetchTopicMetadata({ topics: names });
      for (const t of topics) assert.deepEqual(new Set(t.partitions.map((p) => p.replicas.length)), new Set([1]), t.name);
      const { resources } = await admin.describeConfigs({
        includeSynonyms: false,
        resources: names.map((name) => ({ type: 2, name, configNames: ['min.insync.replicas'] })),
      });
      for (const r of resources) {
        const entry = r.configEntries.find((e) => e.configName === 'min.insync.replicas');
        assert.equal(entry?.configValue, '1', r.resourceName);
        assert.equal(entry?.isDefault, false, `${r.resourceName}: min.insync.replicas set on the topic, not inherited`);
      }
      // Started again with another partition count than the topics have (a new generation started with the
      // old PUSH_PARTITIONS): refused naming the key, since tasks and quota shares follow the setting.
      await assert.rejects(
        createPipelineTopics({ partitions: 4, prefix, replication: { factor: 1, minInsyncReplicas: 1 } }),
        (error: unknown) =>
          error instanceof ConfigError &&
          error.key === 'PUSH_PARTITIONS' &&
          /4 set, but \d+ of the pipeline's topics have another count .* has 2/.test(error.message),
      );
      assert.deepEqual(await createPipelineTopics({ partitions: 2, prefix, replication: { factor: 1, minInsyncReplicas: 1 } }), [], 'the right count starts');
      // The stack's single broker cannot hold 3 replicas: creating is refused, saying why, and nothing is created.
      const other = `${uniqueName('repl3')}.`;
      await assert.rejects(
        createPipelineTopics({ partitions: 1, prefix: other, replication: { factor: 3, minInsyncReplicas: 2 } }),
        (error: unknown) => error instanceof ConfigError && error.key === 'PUSH_REPLICATION_FACTOR' && /INVALID_REPLICATION_FACTOR/.test(error.message),
      );
      assert.deepEqual(
        (await admin.listTopics()).filter((t) => t.startsWith(other)),
        [],
      );
    } finally {
      await admin.disconnect();
      await deleteRunTopics(prefix);
    }
  },
);

test('a worker start that meets a broker being lost or a starved connection is tried again, a refused topic is not', () => {
  for (const message of [
    'Broker not connected',
    'Connection timeout',
    'Connection error: connect ECONNREFUSED 127.0.0.1:19193',
    'This server does not host this topic-partition',
  ])
    assert.equal(isTransientStartError(new Error(message)), true, message);
  const refused = new TopicCreationError([{ topic: 't', type: 'INVALID_REPLICATION_FACTOR', message: 'Replication factor is invalid' }]);
  assert.equal(isTransientStartError(refused), false);
  assert.equal(isTransientStartError(new ConfigError('PUSH_REPLICATION_FACTOR', 'too many')), false);
});
