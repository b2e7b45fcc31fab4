/**
 * A broker delay probe whose thread ends on an error (pipeline/broker-delay.ts): each end counts
 * as a failed period, so the campaign expansion yields instead of going on at its last share, and
 * the thread is started again a period later until the probe is closed.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { BrokerDelayProbe } from '../../pipeline/broker-delay.ts';
import { createLogger } from '../../common/log.ts';

test('a thread that ends is reported as a failed period and started again, until close', { timeout: 30_000 }, async () => {
  const periods: Array<{ delayMs: number | null; active: boolean }> = [];
  const warnings: string[] = [];
  const probe = new BrokerDelayProbe({
    brokers: ['127.0.0.1:1'],
    topic: 'push.dispatch',
    periodMs: 200,
    threadUrl: new URL('../fixtures/failing-probe-thread.mjs', import.meta.url),
    onPeriod: (delayMs, _now, active) => void periods.push({ delayMs, active }),
    logger: { ...createLogger({}, 'error'), warn: (m: string) => void warnings.push(m) },
  });
  const keepAlive = setInterval(() => undefined, 1_000); // the probe's thread and timer do not hold the process open
  try {
    probe.start();
    const deadline = Date.now() + 10_000;
    while (periods.length < 3 && Date.now() < deadline) await sleep(50);
    assert.ok(periods.length >= 3, `the thread was started again: ${periods.length} ends`);
    assert.ok(
      periods.every((p) => p.delayMs === null && p.active),
      'every end is a failed period with IM taken as under way',
    );
    assert.ok(warnings.some((w) => w.includes('thread ended')));
    await probe.close();
    const ended = periods.length;
    await sleep(600);
    assert.equal(periods.length, ended, 'no restart after close');
  } finally {
    clearInterval(keepAlive);
    await probe.close();
  }
});
