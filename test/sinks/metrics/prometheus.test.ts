/**
 * The worker's Prometheus registry (sinks/metrics/prometheus.ts): a series is its label set,
 * whatever order the labels are given in, and values are escaped as the text format requires.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MetricsRegistry } from '../../../sinks/metrics/prometheus.ts';

test('one series per label set in any order, names sorted and values escaped in the exposition', () => {
  const registry = new MetricsRegistry();
  const outcomes = registry.counter('push_outcomes_total', 'outcomes');
  outcomes.inc({ stage: 'fan-out', status: 'ACCEPTED', reason: '', vendor: 'fcm' });
  outcomes.inc({ vendor: 'fcm', reason: '', status: 'ACCEPTED', stage: 'fan-out' }, 2);
  outcomes.inc({ status: 'FAILED', stage: 'fan-out', vendor: 'hms', reason: 'say "no"\\\nnow' });
  outcomes.inc();
  assert.equal(outcomes.get({ reason: '', stage: 'fan-out', status: 'ACCEPTED', vendor: 'fcm' }), 3);
  const latency = registry.histogram('push_latency_ms', 'latency', [10, 100]);
  latency.observe({ vendor: 'apns', kind: 'im' }, 42);
  latency.observe({ kind: 'im', vendor: 'apns' }, 7);
  assert.equal(
    registry.render(),
    [
      '# HELP push_outcomes_total outcomes',
      '# TYPE push_outcomes_total counter',
      'push_outcomes_total{reason="",stage="fan-out",status="ACCEPTED",vendor="fcm"} 3',
      'push_outcomes_total{reason="say \\"no\\"\\\\\\nnow",stage="fan-out",status="FAILED",vendor="hms"} 1',
      'push_outcomes_total 1',
      '# HELP push_latency_ms latency',
      '# TYPE push_latency_ms histogram',
      'push_latency_ms_bucket{kind="im",vendor="apns",le="10"} 1',
      'push_latency_ms_bucket{kind="im",vendor="apns",le="100"} 2',
      'push_latency_ms_bucket{kind="im",vendor="apns",le="+Inf"} 2',
      'push_latency_ms_sum{kind="im",vendor="apns"} 49',
      'push_latency_ms_count{kind="im",vendor="apns"} 2',
      '',
    ].join('\n'),
  );
});
