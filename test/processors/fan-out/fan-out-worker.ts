/**
 * A fan-out worker process on the real stack, for the integration and crash tests (and a reference
 * for the production wiring): push.dispatch → vendor adapters → push.outcomes / push.tokens, with
 * im_push_task in MySQL. Configured by env: FANOUT_APP_ID (Kafka application id), FANOUT_TOPIC_PREFIX,
 * FANOUT_APPS_CONFIG (the apps file), FANOUT_TASK_TABLE (default im_push_task), FANOUT_GUARANTEE,
 * FANOUT_COMMIT_INTERVAL_MS (default 200),
 * plus the PUSH_* endpoints (PUSH_MYSQL_SHARDS: the task rows go to their uid's shard). Prints {"event":"started"} and {"event":"committed",...} lines.
 */
import { readEndpoints } from '../../../common/endpoints.ts';
import { createLogger } from '../../../common/log.ts';
import { registryValueSerdes } from '../../../pipeline/serdes.ts';
import { topicName } from '../../../pipeline/topics.ts';
import { fanOutOptionsFromEnv } from '../../../processors/fan-out/options.ts';
import { buildFanOutTopology } from '../../../pipeline/apps/fan-out.ts';
import { MysqlPushTaskLedger } from '../../../sinks/mysql/tasks.ts';
import { openShardedPools } from '../../../sinks/mysql/shards.ts';
import { loadAppsConfig } from '../../../sinks/vendors/apps-config.ts';
import { createVendorRegistry } from '../../../sinks/vendors/registry.ts';
import { StreamsApp, type ProcessingGuarantee } from '../../../topology/runtime.ts';
import { closeOnSignals } from '../../../topology/shutdown.ts';
import { schemaRegistryClient } from '../../../common/registry-client.ts';

const env = process.env;
const say = (event: object) => process.stdout.write(JSON.stringify(event) + '\n');
const logger = createLogger({ worker: process.pid, stage: 'fan-out' }, 'warn');
const endpoints = readEndpoints(env);
const prefix = env.FANOUT_TOPIC_PREFIX ?? '';

const vendors = createVendorRegistry(loadAppsConfig(env.FANOUT_APPS_CONFIG!));
const shards = openShardedPools(endpoints.mysqlShards, endpoints.mysqlSecurity, { connectionLimit: 4 });
const ledger = new MysqlPushTaskLedger({ shards, table: env.FANOUT_TASK_TABLE ?? 'im_push_task' });
const registry = schemaRegistryClient(endpoints);

const app = new StreamsApp({
  applicationId: env.FANOUT_APP_ID!,
  topology: buildFanOutTopology({
    valueSerdes: registryValueSerdes(registry, prefix),
    topicPrefix: prefix,
    fanOut: { ...fanOutOptionsFromEnv(env), vendors, ledger },
  }),
  brokers: endpoints.kafkaBrokers,
  processingGuarantee: (env.FANOUT_GUARANTEE ?? 'exactly_once') as ProcessingGuarantee,
  commitIntervalMs: Number(env.FANOUT_COMMIT_INTERVAL_MS ?? 200),
  dlqTopic: topicName('dlq', prefix),
  sessionTimeoutMs: 6000,
  logger,
  metricsListener: {
    onCommit: (e) => {
      if (e.inputRecords > 0) say({ event: 'committed', task: e.taskId, inputRecords: e.inputRecords });
    },
  },
  onFatalError: (error) => {
    logger.error('fatal', { error });
    process.exit(2);
  },
});
closeOnSignals(
  [
    app,
    {
      close: async () => {
        await ledger.flush();
        ledger.close();
        await vendors.close();
        await shards.end();
      },
    },
  ],
  { logger },
);
await app.start();
say({ event: 'started' });
