/**
 * The receipt receiver itself, run by `pushctl receiver` (cli/commands/receiver.ts) in a worker
 * thread with a small young generation. It answers the main thread's 'stop' by closing the
 * receiver and its metrics server, then ends; a start that fails throws, ending the thread with
 * the error.
 */
import { parentPort } from 'node:worker_threads';
import { readKey } from '../../common/config.ts';
import { CONFIG_KEYS } from '../../common/config-keys.ts';
import { createLogger } from '../../common/log.ts';
import { startReceiptReceiver } from '../../pipeline/receiver.ts';
import { receiptPrometheusListener } from '../../receipts/prometheus.ts';
import { MetricsRegistry } from '../../sinks/metrics/prometheus.ts';
import { startMetricsServer } from '../../sinks/metrics/server.ts';

const env = process.env;
const logger = createLogger({ service: 'push-receipts' });
const registry = new MetricsRegistry();
const receiver = await startReceiptReceiver(env, receiptPrometheusListener(registry), logger);
const metrics = await startMetricsServer(registry, { live: () => true, ready: () => true }, readKey(env, CONFIG_KEYS.PUSH_RECEIPTS_METRICS_PORT));
console.log(`receipt receiver on port ${receiver.port}, metrics http://127.0.0.1:${metrics.port}/metrics`);
parentPort!.once('message', () => {
  void (async () => {
    await receiver.stop();
    await metrics.close();
    parentPort!.close();
  })();
});
