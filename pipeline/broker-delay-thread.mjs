// The broker delay probe's thread (pipeline/broker-delay.ts): its own event loop, so what it times
// is the brokers' answer and this process's share of the CPU, not the worker's busy main loop.
// A worker thread does not inherit the main thread's `--import tsx`: it registers tsx itself to
// load the one Kafka client factory (common/kafka-client.ts), secured as the worker is.
import { parentPort, workerData } from 'node:worker_threads';
import { performance } from 'node:perf_hooks';
import { setTimeout } from 'node:timers';
import { register } from 'tsx/esm/api';

register();
const { kafkaClient } = await import('../common/kafka-client.ts');
const { brokers, kafkaSecurity, topic, intervalMs, periodMs } = workerData;
const admin = kafkaClient({ kafkaBrokers: brokers, kafkaSecurity }, { clientId: 'push-broker-delay', retry: { retries: 0 } }).admin();
let stopped = false;
let wake;
// Every intervalMs while a campaign is being expanded (an 'expanding' message in the last two
// periods), once a period otherwise: enough for the base delay's per-minute minima.
let fastUntil = 0;
parentPort.on('message', (message) => {
  if (message === 'expanding') {
    const idle = Date.now() >= fastUntil;
    fastUntil = Date.now() + 2 * periodMs;
    if (idle) wake?.();
  }
  if (message !== 'stop') return;
  stopped = true;
  wake?.();
});

let samples = [];
let periodStart = Date.now();
let failing = false;
let failedInPeriod = false;
// The topic's end offsets: when they moved during a period, IM pushes crossed it (records or their commit markers).
let lastEnd;
let moved = false;
while (!stopped) {
  const started = performance.now();
  try {
    const offsets = await admin.fetchTopicOffsets(topic);
    samples.push(performance.now() - started);
    const end = offsets.reduce((sum, p) => sum + Number(p.high), 0);
    moved ||= lastEnd !== undefined && end !== lastEnd;
    lastEnd = end;
    if (failing) parentPort.postMessage({ type: 'answered' });
    failing = false;
  } catch (error) {
    // A broker that cannot answer is no reason to speed up: the period reports a failure, not a delay.
    failedInPeriod = true;
    if (!failing) parentPort.postMessage({ type: 'failed', error: String(error?.message ?? error) });
    failing = true;
  }
  const now = Date.now();
  if (now - periodStart >= periodMs) {
    samples.sort((a, b) => a - b);
    const delayMs = failedInPeriod ? null : samples[Math.floor(samples.length / 2)];
    parentPort.postMessage({ type: 'period', delayMs, now, active: moved || failedInPeriod });
    samples = [];
    moved = false;
    failedInPeriod = false;
    periodStart = now;
  }
  await new Promise((resolve) => {
    wake = resolve;
    setTimeout(resolve, Date.now() < fastUntil ? intervalMs : periodMs);
  });
}
await admin.disconnect().catch(() => undefined);
parentPort.close();
