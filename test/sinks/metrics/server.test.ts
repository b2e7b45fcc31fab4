import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PipelineMetrics } from '../../../sinks/metrics/pipeline-metrics.ts';
import { startMetricsServer } from '../../../sinks/metrics/server.ts';

test('/metrics exposes runtime figures in the Prometheus text format; /readyz follows readiness', async () => {
  const metrics = new PipelineMetrics();
  let ready = false;
  const server = await startMetricsServer(metrics.registry, { live: () => true, ready: () => ready }, 0);
  try {
    metrics.listener.onNodeRecords?.({ applicationId: 'app', taskId: '0_1', node: 'merge', recordsIn: 5, recordsOut: 2 });
    metrics.listener.onNodeRecords?.({ applicationId: 'app', taskId: '0_2', node: 'merge', recordsIn: 3, recordsOut: 1 });
    metrics.listener.onCommit?.({
      applicationId: 'app',
      taskId: '0_1',
      latencyMs: 12,
      outputRecords: 2,
      changelogRecords: 1,
      inputRecords: 5,
      recordsByTopic: new Map([
        ['push.dispatch', 2],
        ['app-merge-windows-changelog', 1],
      ]),
    });
    metrics.listener.onDeadLetter?.({ applicationId: 'app', topic: 'im.message.persisted', partition: 0, code: 'UNKNOWN_SCHEMA_ID' });
    const body = await (await fetch(`http://127.0.0.1:${server.port}/metrics`)).text();
    assert.match(body, /^push_stage_records_in_total\{app="app",node="merge"\} 8$/m);
    assert.match(body, /^push_stage_records_out_total\{app="app",node="merge"\} 3$/m);
    assert.match(body, /^push_commit_latency_ms_bucket\{app="app",le="25"\} 1$/m);
    assert.match(body, /^push_records_produced_total\{app="app",kind="output",topic="push.dispatch"\} 2$/m);
    assert.match(body, /^push_records_produced_total\{app="app",kind="changelog",topic="app-merge-windows-changelog"\} 1$/m);
    assert.match(body, /^push_commit_latency_ms_bucket\{app="app",le="10"\} 0$/m);
    assert.match(body, /^push_dlq_records_total\{app="app",code="UNKNOWN_SCHEMA_ID",topic="im.message.persisted"\} 1$/m);
    assert.equal((await fetch(`http://127.0.0.1:${server.port}/healthz`)).status, 200);
    assert.equal((await fetch(`http://127.0.0.1:${server.port}/readyz`)).status, 503);
    ready = true;
    assert.equal((await fetch(`http://127.0.0.1:${server.port}/readyz`)).status, 200);
  } finally {
    await server.close();
  }
});
