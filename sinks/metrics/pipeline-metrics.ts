import type { MetricsListener } from '../../topology/metrics.ts';
import type { FanOutListener } from '../../processors/fan-out/options.ts';
import type { MergeListener } from '../../processors/merge/options.ts';
import { LATENCY_BUCKETS_MS, MetricsRegistry } from './prometheus.ts';
import { observeGarbageCollection } from './gc.ts';

/** Changelog topics end so (topology/changelog.ts, changelogTopicName). */
const CHANGELOG_SUFFIX = '-changelog';

/** Dispatches remembered between the decisions and the fan-out of one process (bounded). */
const DECIDED_LIMIT = 50_000;

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
  readonly commitLatency = this.registry.histogram(
    'push_commit_latency_ms',
    'Flush-to-acknowledgement latency of a commit that wrote something, ms',
    LATENCY_BUCKETS_MS,
  );
  readonly transactions = this.registry.counter(
    'push_transactions_total',
    'Commits that wrote something (a transaction under exactly-once, an offset commit at-least-once), by application',
  );
  readonly lag = this.registry.gauge('push_consumer_lag', 'High watermark minus position per input partition');
  readonly deadLetters = this.registry.counter('push_dlq_records_total', 'Records sent to the DLQ, by source topic and error code');
  readonly restored = this.registry.gauge('push_restored_records', 'Changelog records restored per store and task');
  readonly assignedTasks = this.registry.gauge('push_assigned_tasks', 'Tasks assigned to this instance');
  readonly appRestarts = this.registry.counter(
    'push_app_restarts_total',
    'Restarts of a streams application (consumer and all its tasks), by application and reason code',
  );
  readonly restartBackoff = this.registry.gauge(
    'push_app_restart_backoff_ms',
    'Wait before the latest restart of the current run of restarts, ms; 0 once the application ran restartBackoffResetMs without one',
  );
  readonly consecutiveRestarts = this.registry.gauge(
    'push_app_consecutive_restarts',
    'Restarts in the current run (each within restartBackoffResetMs of running after the previous); 0 when there is none',
  );
  readonly outcomes = this.registry.counter('push_outcomes_total', 'Outcomes produced, by stage, status, reason and vendor (suppressions and drops by reason)');
  readonly endToEndLatency = this.registry.histogram(
    'push_persist_to_accept_ms',
    'Persisted to vendor-accepted latency of pushes, ms, by vendor',
    LATENCY_BUCKETS_MS,
  );
  readonly vendorLatency = this.registry.histogram(
    'push_vendor_latency_ms',
    'Latency of one vendor submit call (a batch for batch vendors), ms, by vendor',
    LATENCY_BUCKETS_MS,
  );
  readonly vendorResults = this.registry.counter(
    'push_vendor_results_total',
    'Vendor answers per message and call, by vendor, app, outcome kind and vendor code',
  );
  readonly receipts = this.registry.counter(
    'push_receipts_total',
    'Vendor receipts the receipt join wrote to push.receipts, by vendor and status (DELIVERED, FAILED, DEAD_TOKEN)',
  );
  readonly tokenInvalidations = this.registry.counter('push_token_invalidations_total', 'Tokens invalidated, by vendor and reason');
  readonly receiptJoinEvictions = this.registry.counter(
    'push_receipt_join_evictions_total',
    'Receipt-join entries forgotten before their due time because a task held PUSH_RECEIPT_JOIN_MAX_ENTRIES',
  );
  readonly mysqlRetries = this.registry.counter(
    'push_mysql_retries_total',
    'MySQL statements retried after a transient error, by writer (table) and error code',
  );
  readonly mysqlRowsRefused = this.registry.counter(
    'push_mysql_rows_refused_total',
    'Rows MySQL refused as data errors and left out after their record was processed, by writer and error code',
  );
  /** The MySQL writers' listener (sinks/mysql/errors.ts). */
  readonly mysqlListener = {
    onRetry: (writer: string, code: string) => this.mysqlRetries.inc({ writer, code }),
    onDataError: (writer: string, code: string) => this.mysqlRowsRefused.inc({ writer, code }),
  };
  readonly campaignPace = this.registry.gauge(
    'push_campaign_pace',
    'Share of PUSH_CAMPAIGN_EXPANSION_RATE the campaign expansion runs at (below 1 while it yields to IM)',
  );
  readonly campaignsExpanding = this.registry.gauge(
    'push_campaigns_expanding',
    'Campaigns a campaign-expansion task holds as expanding, by task (0 once the task closed)',
  );
  readonly campaignUidsExpanded = this.registry.counter('push_campaign_uids_expanded_total', 'Uids the campaign expansion turned into push requests');
  readonly campaignQueueing = this.registry.gauge('push_campaign_broker_queueing_ms', "The broker delay probe's latest round trip over its base, ms");
  readonly quotaUsed = this.registry.counter('push_quota_used_total', 'Pushes the vendor accepted (what vendor daily quotas count), by vendor and app');
  readonly dispatches = this.registry.counter('push_dispatches_total', 'Push decisions sent to the fan-out, by kind (LEADING, TRAILING, IMMEDIATE, DEFERRED)');
  readonly mergeEvictions = this.registry.counter(
    'push_merge_evictions_total',
    "Merge entries (uid, conv) evicted by the store cap PUSH_MERGE_MAX_ENTRIES, by kind (closed-early: open windows closed and their trailing update sent early; forgotten: a closed window's memory)",
  );
  /** The merge stage's listener (processors/merge/options.ts). */
  readonly mergeListener: MergeListener = { evicted: (kind) => this.mergeEvictions.inc({ kind }) };
  readonly mergeRatio = this.registry.gauge(
    'push_merge_ratio',
    'Dispatches per trigger reaching the merge stage (dispatches / (dispatches + merged)); lower is fewer pushes',
  );
  readonly recordsProduced = this.registry.counter(
    'push_records_produced_total',
    'Records written by committed tasks, by application, kind (output, changelog) and topic; transaction markers not included',
  );
  readonly recordsProcessed = this.registry.counter('push_records_processed_total', 'Input records processed by committed tasks, by application');
  readonly kafkaRequests = this.registry.counter(
    'push_kafka_requests_total',
    'Kafka requests sent by the consumers and task producers, by application and API',
  );
  readonly enforcedProcessing = this.registry.counter(
    'push_task_enforced_processing_total',
    'Records a task processed before another of its input partitions had caught up with them, because PUSH_MAX_TASK_IDLE_MS ran out (their order against that partition is not guaranteed), by application',
  );
  readonly recordsFetched = this.registry.counter(
    'push_records_fetched_total',
    'Records fetched and handed to tasks (transaction markers and aborted records excluded), by application',
  );
  readonly gcSeconds = this.registry.counter('push_gc_seconds_total', 'Garbage-collection pauses of this process, s, by kind (main-thread time)');
  readonly latencySegments = this.registry.histogram(
    'push_latency_segment_ms',
    'Wall-clock time of one segment of a push on its way to the vendor, ms, by segment (persisted-decided, decided-received, persisted-received, claim) and dispatch kind',
    LATENCY_BUCKETS_MS,
  );
  /** Stops the garbage-collection observer (a process keeps one per PipelineMetrics until then). */
  readonly stopGcObserver = observeGarbageCollection(this.gcSeconds);
  private dispatched = 0;
  private merged = 0;
  /** Wall-clock time each dispatch was decided (serialized by the decisions), by task id, until the fan-out of this process receives it. */
  private readonly decidedAt = new Map<string, number>();

  /** Records one push.receipts record this worker produced. */
  observeReceipt(r: { vendor: string; status: string }): void {
    this.receipts.inc({ vendor: r.vendor, status: r.status });
  }

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

  /**
   * Records one push.dispatch record this worker produced (called as the decisions serialize it,
   * so `now − persisted_at` is the persisted → decided segment).
   */
  observeDispatch(d: { kind: string; task_id?: string; persisted_at?: number }): void {
    this.dispatches.inc({ kind: d.kind });
    if (d.task_id !== undefined && d.persisted_at !== undefined) {
      const now = Date.now();
      this.latencySegments.observe({ segment: 'persisted-decided', kind: d.kind }, now - d.persisted_at);
      this.decidedAt.set(d.task_id, now);
      if (this.decidedAt.size > DECIDED_LIMIT) this.decidedAt.delete(this.decidedAt.keys().next().value!);
    }
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
      // A commit with nothing in it sends nothing to the broker (topology/eos.ts).
      if (e.outputRecords + e.changelogRecords + e.inputRecords === 0) return;
      this.transactions.inc({ app: e.applicationId });
      this.commitLatency.observe({ app: e.applicationId }, e.latencyMs);
      for (const [topic, n] of e.recordsByTopic)
        if (n > 0) this.recordsProduced.inc({ app: e.applicationId, kind: topic.endsWith(CHANGELOG_SUFFIX) ? 'changelog' : 'output', topic }, n);
      if (e.inputRecords > 0) this.recordsProcessed.inc({ app: e.applicationId }, e.inputRecords);
    },
    onRestoreProgress: (e) => this.restored.set({ app: e.applicationId, task: e.taskId, store: e.store }, e.restoredRecords),
    onLag: (e) => this.lag.set({ app: e.applicationId, topic: e.topic, partition: String(e.partition) }, e.lag),
    onFetch: (e) => this.recordsFetched.inc({ app: e.applicationId }, e.records),
    onEnforcedProcessing: (e) => this.enforcedProcessing.inc({ app: e.applicationId }, e.records),
    onKafkaRequest: (e) => this.kafkaRequests.inc({ app: e.applicationId, api: e.api }),
    onDeadLetter: (e) => this.deadLetters.inc({ app: e.applicationId, topic: e.topic, code: e.code }),
    onAssignment: (e) => this.assignedTasks.set({ app: e.applicationId }, e.taskIds.length),
    onRestart: (e) => {
      this.appRestarts.inc({ app: e.applicationId, code: e.code });
      this.restartBackoff.set({ app: e.applicationId }, e.backoffMs);
      this.consecutiveRestarts.set({ app: e.applicationId }, e.consecutive);
    },
    onRestartsSettled: (e) => {
      this.restartBackoff.set({ app: e.applicationId }, 0);
      this.consecutiveRestarts.set({ app: e.applicationId }, 0);
    },
  };

  readonly appsConfigInfo = this.registry.gauge(
    'push_apps_config_info',
    'The apps file (PUSH_APPS_CONFIG) this worker runs: 1 for its version, the first 12 hex digits of the sha256 of its content',
  );
  readonly appsReloads = this.registry.counter(
    'push_apps_reloads_total',
    'Reloads of the apps file that put a new version in force, by trigger (watch, signal, http)',
  );
  readonly appsReloadFailures = this.registry.counter(
    'push_apps_reload_failures_total',
    'Reloads of the apps file refused (invalid or unreadable; the running version stays), by trigger',
  );
  readonly credentialExpiry = this.registry.gauge(
    'push_credential_expiry_seconds',
    'Seconds until a vendor credential of the apps file expires (negative once expired), by app, vendor and credential; only credentials that carry an expiry',
  );

  readonly fanOutEvictions = this.registry.counter(
    'push_fanout_evictions_total',
    "Parked pushes ended by the fan-out's cap PUSH_FANOUT_MAX_PARKED (the oldest first, FAILED parked_evicted), by vendor",
  );
  readonly fanOutParked = this.registry.gauge('push_fanout_parked', 'Pushes the fan-out holds parked, waiting out retryable vendor answers, by task');
  readonly fanOutTakeoverResends = this.registry.counter(
    'push_fanout_takeover_resends_total',
    'Vendor calls repeated after a takeover or restart because the earlier call had no answer recorded in im_push_task, by vendor',
  );

  /**
   * The fan-out's listener: time from the decisions to the fan-out's `process` (when both ran in
   * this process; the dispatch's decided_at is event time, not wall clock) and of each claim; the
   * parked pushes the cap evicts, how many each task holds parked, and the calls a takeover repeats.
   */
  readonly fanOutListener: FanOutListener = {
    onDispatchReceived: (d) => {
      const now = Date.now();
      this.latencySegments.observe({ segment: 'persisted-received', kind: d.kind }, now - d.persisted_at);
      const decided = this.decidedAt.get(d.task_id);
      if (decided === undefined) return;
      this.decidedAt.delete(d.task_id);
      this.latencySegments.observe({ segment: 'decided-received', kind: d.kind }, now - decided);
    },
    onClaimed: (d, ms) => this.latencySegments.observe({ segment: 'claim', kind: d.kind }, ms),
    onEvicted: (vendor) => this.fanOutEvictions.inc({ vendor }),
    onParked: (task, count) => this.fanOutParked.set({ task }, count),
    onTakeoverResend: (vendor) => this.fanOutTakeoverResends.inc({ vendor }),
  };
}
