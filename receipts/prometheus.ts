import type { MetricsRegistry } from '../sinks/metrics/prometheus.ts';
import type { ConnectionRefusal, ReceiptMetricsListener, RejectReason } from './metrics.ts';

/** The receiver's metrics as Prometheus counters (served by `pushctl receiver` on its metrics port). */
export function receiptPrometheusListener(registry: MetricsRegistry): ReceiptMetricsListener {
  const accepted = registry.counter('push_receipts_callbacks_accepted_total', 'Verified receipt callbacks handed to Kafka, by vendor and app');
  const receipts = registry.counter('push_receipts_accepted_total', 'Receipts in the accepted callbacks, by vendor and app');
  const rejected = registry.counter('push_receipts_callbacks_rejected_total', 'Receipt callbacks refused with a 4xx status, by vendor, reason and status');
  const refused = registry.counter('push_receipts_connections_refused_total', 'Connections closed without an answer, by reason');
  const publishFailed = registry.counter('push_receipts_publish_failures_total', 'Verified callbacks Kafka did not take (answered 503), by vendor');
  const nonceFailed = registry.counter('push_receipts_nonce_check_failures_total', 'HMS callbacks whose nonce could not be checked (answered 503)');
  return {
    accepted: (vendor: string, appId: string, n: number) => {
      accepted.inc({ vendor, app_id: appId });
      receipts.inc({ vendor, app_id: appId }, n);
    },
    rejected: (vendor: string, reason: RejectReason, status: number) => rejected.inc({ vendor, reason, status: String(status) }),
    connectionRefused: (reason: ConnectionRefusal) => refused.inc({ reason }),
    publishFailed: (vendor: string) => publishFailed.inc({ vendor }),
    nonceCheckFailed: (code: string) => nonceFailed.inc({ code }),
  };
}
