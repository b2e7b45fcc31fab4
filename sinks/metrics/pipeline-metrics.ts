import type { MetricsListener } from '../../topology/metrics.ts';
import { LATENCY_BUCKETS_MS, MetricsRegistry } from './prometheus.ts';

/**
 * The pipeline's Prometheus metrics, and the runtime metrics listener that feeds them. Stage
 * processors and sinks record their domain figures (suppressions, vendor outcomes, token
 * invalidations, quota usage) through the same registry.
 */
export class PipelineMetrics {
  readonly registry = new MetricsRegistry();
  readonly recordsIn = this.registry.counter('push_stage_records_in_total', 'Records processed per topology node');
  readonly recordsOut = this.registry.counter('push_stage_records_out_total', 'Records forwarded per topology node');
  readonly commits = this.registry.counter('push_commits_total', 'Commits (transactions under exactly-once) per task');
  readonly commitLatency = this.registry.histogram('push_commit_latency_ms', 'Flush-to-acknowledgement latency of a commit, ms', LATENCY_BUCKETS_MS);
  readonly lag = this.registry.gauge('push_consumer_lag', 'High watermark minus position per input partition');
  readonly deadLetters = this.registry.counter('push_dlq_records_total', 'Records sent to the DLQ, by source topic and error code');
  readonly restored = this.registry.gauge('push_restored_records', 'Changelog records restored per store and task');
  readonly assignedTasks = this.registry.gauge('push_assigned_tasks', 'Tasks assigned to this instance');
  readonly outcomes = this.registry.counter('push_outcomes_total', 'Final outcomes by stage, status, reason and vendor');
  readonly vendorLatency = this.registry.histogram('push_vendor_latency_ms', 'Vendor submit latency, ms', LATENCY_BUCKETS_MS);
  readonly vendorResults = this.registry.counter('push_vendor_results_total', 'Vendor answers by vendor, app and outcome code');
  readonly tokenInvalidations = this.registry.counter('push_token_invalidations_total', 'Tokens invalidated, by vendor and reason');
  readonly quotaUsed = this.registry.gauge('push_quota_used', 'Vendor daily quota used on this instance, by vendor and app');
  readonly mergeRatio = this.registry.gauge('push_merge_ratio', 'Vendor submissions per trigger in the merge stage (lower is better)');

  /** The runtime's listener; every method is a map update. */
  readonly listener: MetricsListener = {
    onNodeRecords: (e) => {
      this.recordsIn.inc({ app: e.applicationId, node: e.node }, e.recordsIn);
      this.recordsOut.inc({ app: e.applicationId, node: e.node }, e.recordsOut);
    },
    onCommit: (e) => {
      this.commits.inc({ app: e.applicationId, task: e.taskId });
      this.commitLatency.observe({ app: e.applicationId }, e.latencyMs);
    },
    onRestoreProgress: (e) => this.restored.set({ app: e.applicationId, task: e.taskId, store: e.store }, e.restoredRecords),
    onLag: (e) => this.lag.set({ app: e.applicationId, topic: e.topic, partition: String(e.partition) }, e.lag),
    onDeadLetter: (e) => this.deadLetters.inc({ app: e.applicationId, topic: e.topic, code: e.code }),
    onAssignment: (e) => this.assignedTasks.set({ app: e.applicationId }, e.taskIds.length),
  };
}
