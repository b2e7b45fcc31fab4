import type { CancelledCampaigns } from './cancelled.ts';
import type { VendorDirectory } from './options.ts';
import { VendorGate, type GateClock } from './vendor-gate.ts';
import { VENDORS, type PushMessage, type SubmitOutcome, type Vendor, type VendorAdapter, type VendorLimits } from './vendor-port.ts';

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

/** The submit path of one (vendor, app): calls batched through its gate (rate, concurrency, pause after a 429). */
export interface SubmitPath {
  readonly batcher: SubmitBatcher;
  readonly gate: VendorGate;
  /** The directory's adapter the path was made for. */
  readonly adapter: VendorAdapter;
}

/**
 * The (vendor, app) submit paths of a fan-out supplier, created on first use. Shared by every task
 * of the process, so a 429 seen by one partition's task pauses that vendor for all of them. When the
 * directory hands out another adapter for (vendor, app) (the app changed in a reload of the apps
 * file), the path is made anew with the new limits; calls already in the old one finish there.
 */
export class SubmitPaths {
  private readonly paths = new Map<string, SubmitPath>();

  constructor(
    private readonly vendors: VendorDirectory,
    private readonly defaultLimits: VendorLimits,
    private readonly clock: GateClock,
    /** The business lane's campaign cancellations: each adapter then checks them right before its calls. */
    private readonly cancelled?: CancelledCampaigns,
  ) {}

  /** The submit path of (vendor, app); undefined for an unknown vendor or one no adapter serves. */
  get(vendor: string, appId: string): SubmitPath | undefined {
    if (!(VENDORS as readonly string[]).includes(vendor)) return undefined;
    const key = `${vendor}/${appId}`;
    const adapter = this.vendors.adapter(vendor as Vendor, appId);
    let path = this.paths.get(key);
    if (path && path.adapter === adapter) return path;
    if (!adapter) {
      this.paths.delete(key);
      return undefined;
    }
    const limits = this.vendors.limits(vendor as Vendor, appId) ?? this.defaultLimits;
    const gate = new VendorGate(limits.ratePerSecond, limits.concurrency, this.clock);
    path = { batcher: new SubmitBatcher(this.cancelled ? this.cancelled.guard(adapter) : adapter, gate), gate, adapter };
    this.paths.set(key, path);
    return path;
  }
}
