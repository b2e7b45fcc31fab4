/**
 * The broker delay probe (pipeline/broker-delay.ts) against the local stack's broker: one median
 * round trip a period from its own thread, whether records crossed the topic in the period, a
 * broker that cannot answer reported as a failed period (the expansion yields rather than speeds
 * up), and a close that stops the thread.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { kafkaClient } from '../../common/kafka-client.ts';
import { BrokerDelayProbe } from '../../pipeline/broker-delay.ts';
import { createLogger } from '../../common/log.ts';
import { stackEndpoints, uniqueName } from '../support/stack.ts';
import { createTopicsWithLeaders } from '../../topology/create-topics.ts';

const endpoints = stackEndpoints();
const kafka = kafkaClient(endpoints, { clientId: 'broker-delay-test' });

interface Period {
  readonly delayMs: number | null;
  readonly active: boolean;
}

/** Runs a probe until `enough` says so for the periods so far; then closes it. */
async function probe(topic: string, enough: (periods: readonly Period[]) => boolean, warnings: string[] = []) {
  const periods: Period[] = [];
  let done!: () => void;
  const finished = new Promise<void>((resolve) => (done = resolve));
  const p = new BrokerDelayProbe({
    brokers: endpoints.kafkaBrokers,
    topic,
    intervalMs: 100,
    periodMs: 500,
    onPeriod: (delayMs, _now, active) => {
      periods.push({ delayMs, active });
      if (enough(periods)) done();
    },
    logger: { ...createLogger({}, 'error'), warn: (m: string) => void warnings.push(m) },
  });
  p.start();
  const keepAlive = setInterval(() => undefined, 1_000); // the probe's thread does not hold the process open
  await finished.finally(() => clearInterval(keepAlive));
  const started = Date.now();
  await p.close();
  return { periods, closeMs: Date.now() - started };
}

test('the probe reports the median round trip once a period from its own thread, and whether records crossed the topic', { timeout: 60_000 }, async () => {
  const topic = uniqueName('broker-delay');
  const admin = kafka.admin();
  const producer = kafka.producer();
  await Promise.all([admin.connect(), producer.connect()]);
  try {
    await createTopicsWithLeaders(admin, [{ topic, numPartitions: 3 }]);
    let produced = false;
    const { periods, closeMs } = await probe(topic, (so) => {
      if (so.length === 3 && !produced) {
        produced = true;
        void producer.send({ topic, messages: [{ key: 'k', value: 'v' }] });
      }
      return so.length >= 3 && so.slice(3).some((p) => p.active);
    });
    for (const { delayMs } of periods) assert.ok(delayMs !== null && delayMs > 0 && delayMs < 500, `a round trip of ${delayMs} ms`);
    assert.deepEqual(
      periods.slice(0, 3).map((p) => p.active),
      [false, false, false],
      'nothing crossed the topic in the first three periods',
    );
    assert.ok(closeMs < 5_000, `closed in ${closeMs} ms`);
  } finally {
    await admin.deleteTopics({ topics: [topic] }).catch(() => undefined);
    await Promise.all([admin.disconnect(), producer.disconnect()]);
  }
});

test('a topic the brokers cannot answer for gives failed periods with IM taken as under way, and the failure is logged once', { timeout: 60_000 }, async () => {
  const warnings: string[] = [];
  const { periods } = await probe(uniqueName('no-such-topic'), (so) => so.length >= 2, warnings);
  assert.deepEqual(periods, [
    { delayMs: null, active: true },
    { delayMs: null, active: true },
  ]);
  assert.deepEqual(warnings, ['broker delay probe failed; the campaign expansion yields until it answers']);
});
