/**
 * A worker process for the runtime's integration tests: runs the counting topology of
 * fixtures.ts on the real broker until SIGTERM (graceful) or SIGKILL. Configured by env:
 * WORKER_BROKERS, WORKER_APP_ID, WORKER_INPUT, WORKER_OUTPUT, WORKER_DLQ, WORKER_GUARANTEE,
 * WORKER_COMMIT_MS, WORKER_SESSION_TIMEOUT_MS. Prints one JSON line per event on stdout:
 * {"event":"assigned","tasks":[...]} and {"event":"started"}.
 */
import { StreamsApp, type ProcessingGuarantee } from '../../topology/runtime.ts';
import { closeOnSignals } from '../../topology/shutdown.ts';
import { createLogger } from '../../common/log.ts';
import { countingTopology } from './fixtures.ts';

const env = process.env;
const say = (event: object) => process.stdout.write(JSON.stringify(event) + '\n');
const logger = createLogger({ worker: process.pid }, 'warn');

const app = new StreamsApp({
  applicationId: env.WORKER_APP_ID!,
  topology: countingTopology(env.WORKER_INPUT!, env.WORKER_OUTPUT!),
  brokers: (env.WORKER_BROKERS ?? '127.0.0.1:19092').split(','),
  processingGuarantee: (env.WORKER_GUARANTEE ?? 'exactly_once') as ProcessingGuarantee,
  commitIntervalMs: Number(env.WORKER_COMMIT_MS ?? 100),
  dlqTopic: env.WORKER_DLQ!,
  sessionTimeoutMs: Number(env.WORKER_SESSION_TIMEOUT_MS ?? 6000),
  logger,
  metricsListener: {
    onAssignment: (e) => say({ event: 'assigned', tasks: e.taskIds }),
    onCommit: (e) => {
      if (e.inputRecords > 0) say({ event: 'committed', task: e.taskId, inputRecords: e.inputRecords });
    },
  },
  onFatalError: (error) => {
    logger.error('fatal', { error });
    process.exit(2);
  },
});
closeOnSignals([app], { logger });
await app.start();
say({ event: 'started' });
