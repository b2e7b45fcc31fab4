/**
 * What the receipt receiver reports. Methods must not block; Prometheus and logging adapters plug
 * in here. `ReceiptCounters` is a plain in-process implementation (status endpoints, tests).
 */
export type RejectReason =
  | 'unknown_route'
  | 'method_not_allowed'
  | 'unknown_app'
  | 'oversized'
  | 'body_timeout'
  | 'missing_signature'
  | 'bad_signature'
  | 'stale_signature'
  | 'replayed_nonce'
  | 'missing_secret'
  | 'bad_secret'
  | 'malformed'
  /** The body parses but a receipt breaks an ingest rule (an absurd or fractional time stamp, an oversized id). */
  | 'invalid_receipt'
  | 'rate_limited';

/** Why a connection was closed without an answer. */
export type ConnectionRefusal = 'max_connections' | 'max_client_connections' | 'headers_timeout';

export interface ReceiptMetricsListener {
  /** A verified callback was handed to Kafka; `receipts` is how many receipts its body holds. */
  accepted?(vendor: string, appId: string, receipts: number, duplicate: boolean): void;
  /**
   * A callback was refused with a 4xx status. Every authentication failure (unknown app included)
   * is answered alike (401); `reason` says which it was.
   */
  rejected?(vendor: string, reason: RejectReason, status: number): void;
  /** A connection was closed without an answer: over a connection cap, or its headers were too slow. */
  connectionRefused?(reason: ConnectionRefusal): void;
  /** The shared HMS nonce memory could not be asked; the vendor got 503 and will retry. */
  nonceCheckFailed?(errorCode: string): void;
  /** Kafka did not take a verified callback; the vendor got 503 and will retry. */
  publishFailed?(vendor: string, errorCode: string): void;
  /** The publisher sent a Kafka request (`api` is its name, e.g. Produce). */
  kafkaRequest?(api: string): void;
}

export class ReceiptCounters implements ReceiptMetricsListener {
  readonly acceptedCallbacks = new Map<string, number>();
  readonly acceptedReceipts = new Map<string, number>();
  readonly rejections = new Map<string, number>();
  readonly publishFailures = new Map<string, number>();
  readonly refusedConnections = new Map<ConnectionRefusal, number>();
  nonceFailures = 0;

  accepted(vendor: string, _appId: string, receipts: number): void {
    bump(this.acceptedCallbacks, vendor, 1);
    bump(this.acceptedReceipts, vendor, receipts);
  }

  rejected(vendor: string, reason: RejectReason): void {
    bump(this.rejections, `${vendor}:${reason}`, 1);
  }

  publishFailed(vendor: string): void {
    bump(this.publishFailures, vendor, 1);
  }

  connectionRefused(reason: ConnectionRefusal): void {
    bump(this.refusedConnections, reason, 1);
  }

  nonceCheckFailed(): void {
    this.nonceFailures++;
  }

  /** Rejections counted for a reason (all vendors), or for one vendor and reason. */
  rejectedCount(reason: RejectReason, vendor?: string): number {
    let total = 0;
    for (const [key, n] of this.rejections) if (key.endsWith(`:${reason}`) && (vendor === undefined || key === `${vendor}:${reason}`)) total += n;
    return total;
  }
}

function bump<K>(map: Map<K, number>, key: K, by: number): void {
  map.set(key, (map.get(key) ?? 0) + by);
}
