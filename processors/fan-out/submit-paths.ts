import { SubmitBatcher } from './batcher.ts';
import type { CancelledCampaigns } from './cancelled.ts';
import type { VendorDirectory } from './options.ts';
import { VendorGate, type GateClock } from './vendor-gate.ts';
import { VENDORS, type Vendor, type VendorLimits } from './vendor-port.ts';

/** The submit path of one (vendor, app): calls batched through its gate (rate, concurrency, pause after a 429). */
export interface SubmitPath {
  readonly batcher: SubmitBatcher;
  readonly gate: VendorGate;
}

/**
 * The (vendor, app) submit paths of a fan-out supplier, created on first use. Shared by every task
 * of the process, so a 429 seen by one partition's task pauses that vendor for all of them.
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
    let path = this.paths.get(key);
    if (path) return path;
    const adapter = this.vendors.adapter(vendor as Vendor, appId);
    if (!adapter) return undefined;
    const limits = this.vendors.limits(vendor as Vendor, appId) ?? this.defaultLimits;
    const gate = new VendorGate(limits.ratePerSecond, limits.concurrency, this.clock);
    path = { batcher: new SubmitBatcher(this.cancelled ? this.cancelled.guard(adapter) : adapter, gate), gate };
    this.paths.set(key, path);
    return path;
  }
}
