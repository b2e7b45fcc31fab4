import { createHash } from 'node:crypto';
import type { AppConfig, AppsConfig } from './apps-config.ts';
import type { AdapterContext } from './module.ts';
import { vendorModule } from './modules.ts';
import { VENDORS, type SubmitOutcome, type Vendor, type VendorAdapter, type VendorLimits } from '../../processors/fan-out/vendor-port.ts';
import type { VendorCommon } from './vendor-config.ts';

/** Options of the registry (tests inject a clock). */
export interface VendorRegistryOptions {
  /** Clock for credential lifetimes, epoch ms. Default Date.now. */
  readonly now?: () => number;
  /** Longest wait for a replaced app's calls in flight before its adapters close anyway, ms. Default: twice its longest `timeoutMs`, plus a second. */
  readonly drainTimeoutMs?: number;
}

/**
 * Every adapter of every configured app, created on first use by its vendor's module (modules.ts)
 * and injected into the fan-out (no client globals, no `switch (vendor)`). The registry owns the
 * adapters: whoever gets one uses it and never closes it.
 */
export interface VendorRegistry {
  /** The adapter of (vendor, app), or undefined when that app has no such vendor configured. */
  adapter(vendor: Vendor, appId: string): VendorAdapter | undefined;
  /** Rate and concurrency limits of (vendor, app), or undefined when not configured. */
  limits(vendor: Vendor, appId: string): VendorLimits | undefined;
  /** Whether the apps file now lists `appId` (a push of an app no longer listed ends DROPPED app_removed). */
  hasApp(appId: string): boolean;
  /** Parses a receipt with the vendor's adapter of any app (receipt formats are per vendor). */
  receiptParser(vendor: Vendor): VendorAdapter | undefined;
  close(): Promise<void>;
}

/** What a `replace` changed, by app id. */
export interface AppsChange {
  readonly added: readonly string[];
  readonly removed: readonly string[];
  /** Apps whose entry (or the shared CA) differs: their adapters were rebuilt. */
  readonly changed: readonly string[];
  readonly unchanged: readonly string[];
  /** Settles once every replaced adapter has drained its calls in flight and closed. */
  readonly drained: Promise<void>;
}

/** A push that reached an adapter after its app left the apps file: not sent, retried, and the fan-out ends it (app_removed). */
export const APP_REMOVED_CODE = 'APP_REMOVED';

/**
 * One app's entry and the adapters made from it: the unit the registry swaps. Adapters are made on
 * first use and count their calls in flight, so a retired generation can drain (wait for them)
 * before it closes its adapters. A call that reaches a retired generation's adapter (a fan-out path
 * built before the swap) goes to the app's current adapter, or, the app removed, is answered
 * without a call.
 */
class AppAdapters {
  private readonly adapters = new Map<Vendor, VendorAdapter>();
  /** The adapters' own close, called once this generation is done. */
  private readonly closers: Array<() => Promise<void>> = [];
  private inFlight = 0;
  private idle: (() => void) | undefined;
  private retired = false;

  constructor(
    readonly config: AppConfig,
    /** Digest of the entry and the CA: equal digests, same adapters. */
    readonly fingerprint: string,
    private readonly ctx: AdapterContext,
    /** The adapter of (vendor, app) of whatever generation is current, for calls that reach this one once retired. */
    private readonly current: (vendor: Vendor) => VendorAdapter | undefined,
  ) {}

  adapter(vendor: Vendor): VendorAdapter | undefined {
    const made = this.adapters.get(vendor);
    if (made) return made;
    const c: VendorCommon | undefined = this.config.vendors[vendor];
    if (c === undefined || this.retired) return undefined;
    const adapter = vendorModule(vendor).createAdapter(c, this.ctx);
    // The adapter keeps its identity (tests and metrics read its own fields): its submit and close
    // are replaced on the instance by the registry's, which counts calls in flight and owns closing.
    const submit = adapter.submit.bind(adapter);
    this.closers.push(adapter.close.bind(adapter));
    adapter.close = () => Promise.resolve();
    adapter.submit = (messages) => {
      if (this.retired) {
        const next = this.current(vendor);
        return next ? next.submit(messages) : Promise.resolve(messages.map((): SubmitOutcome => ({ kind: 'retryable', code: APP_REMOVED_CODE })));
      }
      this.inFlight++;
      return submit(messages).finally(() => {
        if (--this.inFlight === 0) this.idle?.();
      });
    };
    this.adapters.set(vendor, adapter);
    return adapter;
  }

  /** Adapters made so far (for tests). */
  get adapterCount(): number {
    return this.adapters.size;
  }

  limits(vendor: Vendor): VendorLimits | undefined {
    const c: VendorCommon | undefined = this.config.vendors[vendor];
    return c && { ratePerSecond: c.ratePerSecond, concurrency: c.concurrency };
  }

  /**
   * No new call starts here; once the calls in flight have finished (or `timeoutMs` passed, past
   * which a call has overrun every vendor deadline), every adapter closes.
   */
  async retire(timeoutMs: number): Promise<void> {
    this.retired = true;
    if (this.inFlight > 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, timeoutMs);
        timer.unref();
        this.idle = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
    await this.closeAll();
  }

  async closeAll(): Promise<void> {
    const closers = this.closers.splice(0);
    await Promise.all(closers.map((close) => close()));
  }

  /** How long a retired generation waits for its calls: twice the longest vendor deadline it has, and a second. */
  get drainBoundMs(): number {
    const timeouts = VENDORS.map((v) => this.config.vendors[v]?.timeoutMs ?? 0);
    return 2 * Math.max(0, ...timeouts) + 1000;
  }
}

/** The digest of an app's entry together with the CA every adapter trusts: what decides whether a reload rebuilds it. */
function fingerprintOf(app: AppConfig, ca: string | undefined): string {
  return createHash('sha256')
    .update(JSON.stringify([ca ?? null, app]))
    .digest('hex');
}

/**
 * The registry of a worker, swappable per app at run time (docs/vendors.md, "Reloading the apps
 * file"): `replace` puts a new, validated apps file in place in one step. An app whose entry is
 * unchanged keeps its adapters (and their connections and cached credentials); an added app gets
 * adapters on first use; a changed or removed app's generation is retired: calls in flight finish
 * on its adapters, which then close, while new calls go to the new generation (or, removed, are not
 * made). Credentials apps share (`ctx.shared`, an APNs provider token per key) are keyed by their
 * content, so an unchanged key keeps its token across reloads.
 */
export class ReloadableVendorRegistry implements VendorRegistry {
  private apps = new Map<string, AppAdapters>();
  private running: AppsConfig;
  private readonly shared = new Map<string, unknown>();
  private readonly now: () => number;
  private readonly retiring = new Set<Promise<void>>();
  private closed = false;

  constructor(
    config: AppsConfig,
    private readonly options: VendorRegistryOptions = {},
  ) {
    this.now = options.now ?? Date.now;
    this.running = config;
    this.apps = this.generations(config, new Map());
  }

  /** The apps file in force. */
  get config(): AppsConfig {
    return this.running;
  }

  private context(config: AppsConfig): AdapterContext {
    const shared = this.shared;
    return {
      ca: config.ca,
      now: this.now,
      shared<T>(key: string, create: () => T): T {
        if (!shared.has(key)) shared.set(key, create());
        return shared.get(key) as T;
      },
    };
  }

  /** The generations of `config`: those of `keep` whose fingerprint is unchanged, new ones for the rest. */
  private generations(config: AppsConfig, keep: ReadonlyMap<string, AppAdapters>): Map<string, AppAdapters> {
    const ctx = this.context(config);
    const next = new Map<string, AppAdapters>();
    for (const app of config.apps) {
      const fingerprint = fingerprintOf(app, config.ca);
      const kept = keep.get(app.appId);
      next.set(
        app.appId,
        kept && kept.fingerprint === fingerprint ? kept : new AppAdapters(app, fingerprint, ctx, (vendor) => this.adapter(vendor, app.appId)),
      );
    }
    return next;
  }

  /**
   * Puts `config` (validated as a whole: parseAppsConfig) in force and returns what changed. The
   * generations of changed and removed apps drain and close in the background (`drained`).
   */
  replace(config: AppsConfig): AppsChange {
    if (this.closed) throw new Error('the vendor registry is closed');
    const previous = this.apps;
    const next = this.generations(config, previous);
    const added: string[] = [];
    const changed: string[] = [];
    const unchanged: string[] = [];
    for (const [appId, generation] of next) {
      const before = previous.get(appId);
      if (!before) added.push(appId);
      else if (before === generation) unchanged.push(appId);
      else changed.push(appId);
    }
    const removed = [...previous.keys()].filter((appId) => !next.has(appId));
    this.apps = next;
    this.running = config;
    const retired = [...changed, ...removed].map((appId) => previous.get(appId)!);
    const drained = Promise.all(retired.map((g) => g.retire(this.options.drainTimeoutMs ?? g.drainBoundMs))).then(() => undefined);
    this.retiring.add(drained);
    void drained.finally(() => this.retiring.delete(drained));
    return { added, removed, changed, unchanged, drained };
  }

  adapter(vendor: Vendor, appId: string): VendorAdapter | undefined {
    return this.apps.get(appId)?.adapter(vendor);
  }

  limits(vendor: Vendor, appId: string): VendorLimits | undefined {
    return this.apps.get(appId)?.limits(vendor);
  }

  hasApp(appId: string): boolean {
    return this.apps.has(appId);
  }

  receiptParser(vendor: Vendor): VendorAdapter | undefined {
    const app = this.running.apps.find((a) => a.vendors[vendor] !== undefined);
    return app && this.adapter(vendor, app.appId);
  }

  /** Closes every adapter. The apps stay listed: a push still under way at shutdown is not taken for one of a removed app. */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([...[...this.apps.values()].map((g) => g.closeAll()), ...this.retiring]);
  }
}

/** Builds the registry for a validated apps configuration. */
export function createVendorRegistry(config: AppsConfig, options: VendorRegistryOptions = {}): ReloadableVendorRegistry {
  return new ReloadableVendorRegistry(config, options);
}
