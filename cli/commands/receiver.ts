import { Worker } from 'node:worker_threads';
import { createLogger } from '../../common/log.ts';
import { closeOnSignals } from '../../topology/shutdown.ts';

export const receiverHelp = `pushctl receiver

  serves vendor receipt callbacks in a process of its own, until SIGTERM/SIGINT, so that a flood of
  callbacks costs this process and not the pipeline workers (docs/operations.md).
  configuration: PUSH_RECEIPTS_* keys, PUSH_APPS_CONFIG, PUSH_KAFKA_BROKERS, PUSH_SCHEMA_REGISTRY_URL,
  PUSH_TOPIC_PREFIX, PUSH_MYSQL_URL (HMS nonces), see README; metrics and health on
  127.0.0.1:PUSH_RECEIPTS_METRICS_PORT (default 9474; 0 picks a free port)`;

/**
 * The receiver thread's young generation, MB (V8's own limit is 3 × its 16 MB semi-space). A flood
 * allocates fast (connections, headers, the first socket read of every rejected body); with the
 * default, that garbage grows the young generation and waits there for a collection, which was
 * most of the receiver's RSS growth under test/receipts/flood.stack.test.ts. Node sets this limit only
 * for a thread it starts, hence the thread.
 */
const YOUNG_GENERATION_MB = 6;

export async function receiverCommand(): Promise<number> {
  const logger = createLogger({ service: 'push-receipts' });
  const thread = new Worker(new URL('./receiver-thread.mjs', import.meta.url), { resourceLimits: { maxYoungGenerationSizeMb: YOUNG_GENERATION_MB } });
  const ended = new Promise<number>((resolve, reject) => {
    // A start that failed (configuration, a port in use) ends the thread with its error: pushctl reports it.
    thread.once('error', reject);
    thread.once('exit', resolve);
  });
  closeOnSignals(
    [
      {
        async close() {
          thread.postMessage('stop');
          await ended;
        },
      },
    ],
    { logger },
  );
  return ended;
}
