/**
 * The workers' breakdown counters (sinks/metrics/pipeline-metrics.ts) as the benchmark reads them
 * (bench/worker-metrics.ts): what a worker reports through its listeners comes out of two scrapes
 * as records per message, commits per second, GC time and latency segments.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PipelineMetrics } from '../../../sinks/metrics/pipeline-metrics.ts';
import { delta, histogramQuantile, parseMetrics, stepBreakdown } from '../../../bench/worker-metrics.ts';
import type { PushDispatch } from '../../../processors/model/records.ts';

const APP = 'offline-push-rtest';

function dispatch(taskId: string, kind: PushDispatch['kind'], persistedAt: number): PushDispatch {
  return {
    task_id: taskId,
    uid: 'u1',
    device_id: 'd1',
    conv_id: 'c1',
    seq: 1,
    msg_id: 'm1',
    app_id: 'a',
    platform: 'ios',
    channels: [],
    title: '',
    body: '',
    badge: 1,
    collapse_id: 'c',
    silent: false,
    kind,
    merged_count: 1,
    persisted_at: persistedAt,
    decided_at: persistedAt,
  };
}

test('records produced, fetched and non-empty commits per application come out per persisted message and per second', () => {
  const metrics = new PipelineMetrics();
  try {
    const before = parseMetrics(metrics.registry.render());
    const commit = (stage: string, outputRecords: number, changelogRecords: number, inputRecords: number) =>
      metrics.listener.onCommit?.({
        applicationId: `${APP}-${stage}`,
        taskId: '0_0',
        latencyMs: 20,
        outputRecords,
        changelogRecords,
        inputRecords,
        recordsByTopic: new Map([
          [`run1.push.${stage}-out`, outputRecords],
          [`${APP}-${stage}-store-changelog`, changelogRecords],
        ]),
      });
    commit('decisions', 30, 20, 100);
    commit('decisions', 10, 0, 0); // punctuation output only
    commit('fan-out', 40, 0, 40);
    commit('receipts', 10, 10, 40);
    commit('clickhouse', 0, 0, 50);
    commit('fan-out', 0, 0, 0); // nothing to write: no transaction reaches the broker
    metrics.listener.onFetch?.({ applicationId: `${APP}-decisions`, topic: 't', partition: 0, records: 100 });
    metrics.listener.onFetch?.({ applicationId: `${APP}-fan-out`, topic: 't', partition: 1, records: 40 });
    const after = parseMetrics(metrics.registry.render());

    const b = stepBreakdown(delta(before, after), { applicationId: APP, topicPrefix: 'run1.', persistedMessages: 50, seconds: 2, workerCpuMs: 1000 });
    assert.equal(b.recordsProducedPerMessage, 2.4); // (40 + 20 + 40 + 20) / 50
    assert.equal(b.outputRecordsPerMessage, 1.8);
    assert.equal(b.changelogRecordsPerMessage, 0.6);
    assert.deepEqual(b.producedPerMessageByApp.decisions, { output: 0.8, changelog: 0.4 });
    assert.deepEqual(
      Object.entries(b.producedPerMessageByTopic),
      [
        ['push.decisions-out', 0.8],
        ['push.fan-out-out', 0.8],
        ['decisions-store-changelog', 0.4],
        ['push.receipts-out', 0.2],
        ['receipts-store-changelog', 0.2],
      ],
      'by topic, run prefix and application id left off, busiest first, then by name (topics with no record absent)',
    );
    assert.equal(b.recordsFetchedPerMessage, 2.8);
    assert.equal(b.recordsProcessedPerMessage, 4.6);
    assert.equal(b.commitsPerSecond, 2.5);
    assert.deepEqual(b.commitsPerSecondByApp, { decisions: 1, 'fan-out': 0.5, receipts: 0.5, clickhouse: 0.5 });
  } finally {
    metrics.stopGcObserver();
  }
});

test('a worker that restarted between scrapes counts from zero, not negative', () => {
  const d = delta(parseMetrics('push_records_fetched_total{app="x"} 500\n'), parseMetrics('push_records_fetched_total{app="x"} 30\n'));
  assert.equal(d.get('push_records_fetched_total{app="x"}'), 30);
});

test('latency segments of leading pushes: decided → received is timed between the decisions and the fan-out of one process', async () => {
  const metrics = new PipelineMetrics();
  try {
    const before = parseMetrics(metrics.registry.render());
    const now = Date.now();
    metrics.observeDispatch(dispatch('t1', 'LEADING', now - 40));
    metrics.observeDispatch(dispatch('t2', 'TRAILING', now - 5000));
    await new Promise((resolve) => setTimeout(resolve, 30));
    metrics.fanOutListener.onDispatchReceived?.(dispatch('t1', 'LEADING', now - 40));
    metrics.fanOutListener.onDispatchReceived?.(dispatch('t2', 'TRAILING', now - 5000));
    metrics.fanOutListener.onDispatchReceived?.(dispatch('t3', 'LEADING', now - 60)); // decided in another process
    metrics.fanOutListener.onClaimed?.(dispatch('t1', 'LEADING', now - 40), 12);
    const b = stepBreakdown(delta(before, parseMetrics(metrics.registry.render())), { applicationId: APP, persistedMessages: 3, seconds: 1, workerCpuMs: 100 });
    const s = b.segments;
    assert.equal(s.persistedToDecided.samples, 1, 'only the leading dispatch');
    assert.ok(s.persistedToDecided.p50Ms! >= 30, `persisted → decided ${s.persistedToDecided.p50Ms}`);
    assert.equal(s.decidedToReceived.samples, 1);
    assert.ok(s.decidedToReceived.p50Ms! >= 20, `decided → received ${s.decidedToReceived.p50Ms}`);
    assert.equal(s.persistedToReceived.samples, 2);
    assert.equal(s.claim.samples, 1);
    assert.ok(s.claim.p50Ms! > 10 && s.claim.p50Ms! <= 15, `claim ${s.claim.p50Ms}`);
    assert.equal(s.vendorCall.samples, 0);
    assert.equal(s.vendorCall.p99Ms, null);
  } finally {
    metrics.stopGcObserver();
  }
});

test('histogram quantiles interpolate within the bucket and sum the series that match', () => {
  const metrics = new PipelineMetrics();
  try {
    for (let i = 0; i < 100; i++) metrics.commitLatency.observe({ app: 'a' }, i < 50 ? 8 : 90);
    metrics.commitLatency.observe({ app: 'b' }, 4000);
    const s = parseMetrics(metrics.registry.render());
    const a = (l: Record<string, string>) => l.app === 'a';
    assert.equal(histogramQuantile(s, 'push_commit_latency_ms', 0.5, a), 10); // the 50th of 100 is the last in (5, 10]
    const p99 = histogramQuantile(s, 'push_commit_latency_ms', 0.99, a)!;
    assert.ok(p99 > 75 && p99 <= 100, `p99 ${p99}`);
    assert.equal(
      histogramQuantile(s, 'push_commit_latency_ms', 1, () => true),
      5000,
    );
  } finally {
    metrics.stopGcObserver();
  }
});

test('garbage-collection pauses are counted in push_gc_seconds_total', async () => {
  const metrics = new PipelineMetrics();
  try {
    let keep: object[] = [];
    for (let round = 0; round < 20; round++) {
      keep = [];
      for (let i = 0; i < 200_000; i++) keep.push({ i, s: `x${i}` });
    }
    assert.ok(keep.length > 0);
    await new Promise((resolve) => setTimeout(resolve, 50)); // observers are told asynchronously
    const gc = [...parseMetrics(metrics.registry.render())].filter(([k]) => k.startsWith('push_gc_seconds_total'));
    assert.ok(gc.length > 0 && gc.reduce((sum, [, v]) => sum + v, 0) > 0, 'GC time counted');
  } finally {
    metrics.stopGcObserver();
  }
});
