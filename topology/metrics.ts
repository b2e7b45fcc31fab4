import type { Logger } from '../common/log.ts';

/**
 * Observability hooks of the runtime. Every method is synchronous, must return quickly and must
 * not throw (the runtime guards against it anyway): a Prometheus or logging adapter records the
 * figure and returns. All methods are optional.
 */
export interface MetricsListener {
  /** Records processed by a node since the last report (reported at each commit, per task). */
  onNodeRecords?(event: { applicationId: string; taskId: string; node: string; recordsIn: number; recordsOut: number }): void;
  /** One commit of a task: latency in ms from flush start to broker acknowledgement. */
  onCommit?(event: {
    applicationId: string;
    taskId: string;
    latencyMs: number;
    outputRecords: number;
    changelogRecords: number;
    inputRecords: number;
    /** Records written, by topic (outputs, DLQ and changelogs). */
    recordsByTopic: ReadonlyMap<string, number>;
  }): void;
  /** Restore progress of one store of one task; `done` on the last call. */
  onRestoreProgress?(event: { applicationId: string; taskId: string; store: string; restoredRecords: number; done: boolean }): void;
  /** Consumer lag of an input partition (high watermark − position), from each fetched batch. */
  onLag?(event: { applicationId: string; topic: string; partition: number; lag: number }): void;
  /** Records of one fetched batch handed to a task (transaction markers and aborted records are not in it). */
  onFetch?(event: { applicationId: string; topic: string; partition: number; records: number }): void;
  /**
   * Records a task took before one of its other input partitions had caught up with them, because
   * the wait for it (maxTaskIdleMs) ran out (topology/task-input.ts): their order against that
   * partition's records is not guaranteed.
   */
  onEnforcedProcessing?(event: { applicationId: string; taskId: string; records: number }): void;
  /** One Kafka request sent by the application's consumer or a task's producer, by API (Fetch, Produce, EndTxn, …). */
  onKafkaRequest?(event: { applicationId: string; api: string }): void;
  /**
   * A record sent to the DLQ: `topic` and `partition` are the input record's, or, for an output
   * written without an input record (a punctuator's), the sink node's topic and the task's partition.
   */
  onDeadLetter?(event: { applicationId: string; topic: string; partition: number; code: string }): void;
  /**
   * The application is restarting (its consumer and every task): `code` is the reason's error
   * code, `consecutive` counts the restarts of the current run (1 for the first), `backoffMs` is the
   * wait before this one rejoins.
   */
  onRestart?(event: { applicationId: string; code: string; consecutive: number; backoffMs: number }): void;
  /** The application ran long enough after its last restart (restartBackoffResetMs): the run of restarts is over. */
  onRestartsSettled?(event: { applicationId: string }): void;
  /** Tasks assigned to this instance after a rebalance. */
  onAssignment?(event: { applicationId: string; taskIds: string[] }): void;
}

/** Wraps a listener so a faulty one can never break processing. */
export function safeMetrics(listener: MetricsListener | undefined, logger?: Logger): Required<MetricsListener> {
  const wrap =
    <E>(name: keyof MetricsListener) =>
    (event: E) => {
      const fn = listener?.[name] as ((e: E) => void) | undefined;
      if (!fn) return;
      try {
        fn.call(listener, event);
      } catch (error) {
        logger?.warn('metrics listener threw', { method: name, error });
      }
    };
  return {
    onNodeRecords: wrap('onNodeRecords'),
    onCommit: wrap('onCommit'),
    onRestoreProgress: wrap('onRestoreProgress'),
    onLag: wrap('onLag'),
    onFetch: wrap('onFetch'),
    onEnforcedProcessing: wrap('onEnforcedProcessing'),
    onKafkaRequest: wrap('onKafkaRequest'),
    onDeadLetter: wrap('onDeadLetter'),
    onAssignment: wrap('onAssignment'),
    onRestart: wrap('onRestart'),
    onRestartsSettled: wrap('onRestartsSettled'),
  };
}
