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
  readonly outcomes = this.registry.counter('push_outcomes_total', 'Outcomes produced, by stage, status, reason and vendor (suppressions and drops by reason)');
  readonly endToEndLatency = this.registry.histogram('push_persist_to_accept_ms', 'Persisted to vendor-accepted latency of pushes, ms, by vendor', LATENCY_BUCKETS_MS);
  readonly vendorLatency = this.registry.histogram('push_vendor_latency_ms', 'Latency of one vendor submit call (a batch for batch vendors), ms, by vendor', LATENCY_BUCKETS_MS);
  readonly vendorResults = this.registry.counter('push_vendor_results_total', 'Vendor answers per message and call, by vendor, app, outcome kind and vendor code');
  readonly tokenInvalidations = this.registry.counter('push_token_invalidations_total', 'Tokens invalidated, by vendor and reason');
  readonly quotaUsed = this.registry.counter('push_quota_used_total', 'Pushes the vendor accepted (what vendor daily quotas count), by vendor and app');
  readonly dispatches = this.registry.counter('push_dispatches_total', 'Push decisions sent to the fan-out, by kind (LEADING, TRAILING, IMMEDIATE, DEFERRED)');
  readonly mergeRatio = this.registry.gauge('push_merge_ratio', 'Dispatches per trigger reaching the merge stage (dispatches / (dispatches + merged)); lower is fewer pushes');
  private dispatched = 0;
  private merged = 0;

  /** Records one push.outcomes record this worker produced. */
  observeOutcome(o: { stage: string; status: string; reason: string | null; vendor: string | null; app_id: string; latency_ms: number | null }): void {
    this.outcomes.inc({ stage: o.stage, status: o.status, reason: o.reason ?? '', vendor: o.vendor ?? '' });
    if (o.status === 'ACCEPTED' && o.vendor) {
      this.quotaUsed.inc({ vendor: o.vendor, app: o.app_id });
      if (o.latency_ms !== null) this.endToEndLatency.observe({ vendor: o.vendor }, Number(o.latency_ms));
    }
    if (o.status === 'MERGED') {
      this.merged++;
      this.updateMergeRatio();
    }
  }

  /** Records one push.dispatch record this worker produced. */
  observeDispatch(d: { kind: string }): void {
    this.dispatches.inc({ kind: d.kind });
    this.dispatched++;
    this.updateMergeRatio();
  }

  private updateMergeRatio(): void {
    this.mergeRatio.set({}, this.dispatched / Math.max(1, this.dispatched + this.merged));
  }

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
