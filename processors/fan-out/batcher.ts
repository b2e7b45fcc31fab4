import type { PushMessage, SubmitOutcome, VendorAdapter } from './vendor-port.ts';
import type { VendorGate } from './vendor-gate.ts';

/**
 * Collects the messages for one (vendor, app) that arrive in the same tick into submit calls of
 * up to the adapter's `maxBatchSize` (HMS, Xiaomi, vivo batch identical messages, OPPO any), each
 * admitted through the vendor gate. Single-token vendors (APNs, FCM) get one call per message.
 */
export class SubmitBatcher {
  private queue: Array<{ message: PushMessage; resolve: (o: SubmitOutcome) => void }> = [];
  private scheduled = false;
  /** Vendor calls made (for metrics and tests). */
  calls = 0;

  constructor(
    private readonly adapter: VendorAdapter,
    private readonly gate: VendorGate,
  ) {}

  submit(message: PushMessage): Promise<SubmitOutcome> {
    return new Promise((resolve) => {
      this.queue.push({ message, resolve });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.drain());
      }
    });
  }

  private drain(): void {
    this.scheduled = false;
    const queue = this.queue;
    this.queue = [];
    const size = Math.max(1, this.adapter.maxBatchSize);
    for (let i = 0; i < queue.length; i += size) void this.send(queue.slice(i, i + size));
  }

  /**
   * Every message of the batch is answered, whatever happens: each answer belongs to the dispatch
   * that asked, so nothing thrown here may escape (it would surface as an unhandled rejection or
   * leave the dispatches waiting forever).
   */
  private async send(batch: Array<{ message: PushMessage; resolve: (o: SubmitOutcome) => void }>): Promise<void> {
    let outcomes: SubmitOutcome[];
    try {
      await this.gate.acquire(batch.length);
      try {
        this.calls++;
        outcomes = await this.adapter.submit(batch.map((b) => b.message));
      } finally {
        this.gate.release();
      }
    } catch (error) {
      // Adapters answer network trouble with `retryable`; anything thrown is a bug, kept retryable.
      // Not swallowed: each push of the batch gets the retryable code ADAPTER_<error name>, so it
      // is retried like a 5xx, and one that ends on it carries that code in push.outcomes. The
      // message is not logged on purpose: an adapter's error text may carry the device token or
      // the app's credentials.
      outcomes = batch.map(() => ({ kind: 'retryable', code: `ADAPTER_${(error as Error | undefined)?.name ?? 'ERROR'}` }));
    }
    batch.forEach((b, i) => b.resolve(outcomes[i] ?? { kind: 'retryable', code: 'MISSING_OUTCOME' }));
  }
}
