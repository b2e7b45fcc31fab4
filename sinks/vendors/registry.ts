import type { AppsConfig } from './apps-config.ts';
import type { AdapterContext } from './module.ts';
import { vendorModule } from './modules.ts';
import type { Vendor, VendorAdapter, VendorLimits } from '../../processors/fan-out/vendor-port.ts';
import type { VendorCommon } from './vendor-config.ts';

/** Options of the registry (tests inject a clock). */
export interface VendorRegistryOptions {
  /** Clock for credential lifetimes, epoch ms. Default Date.now. */
  readonly now?: () => number;
}

/**
 * Every adapter of every configured app, created on first use by its vendor's module (modules.ts)
 * and injected into the fan-out (no client globals, no `switch (vendor)`).
 */
export interface VendorRegistry {
  /** The adapter of (vendor, app), or undefined when that app has no such vendor configured. */
  adapter(vendor: Vendor, appId: string): VendorAdapter | undefined;
  /** Rate and concurrency limits of (vendor, app), or undefined when not configured. */
  limits(vendor: Vendor, appId: string): VendorLimits | undefined;
  /** Parses a receipt with the vendor's adapter of any app (receipt formats are per vendor). */
  receiptParser(vendor: Vendor): VendorAdapter | undefined;
  close(): Promise<void>;
}

/** Builds the registry for a validated apps configuration. */
export function createVendorRegistry(config: AppsConfig, options: VendorRegistryOptions = {}): VendorRegistry {
  const now = options.now ?? Date.now;
  const apps = new Map(config.apps.map((a) => [a.appId, a.vendors]));
  const adapters = new Map<string, VendorAdapter>();
  const shared = new Map<string, unknown>();
  const ctx: AdapterContext = {
    ca: config.ca,
    now,
    shared<T>(key: string, create: () => T): T {
      if (!shared.has(key)) shared.set(key, create());
      return shared.get(key) as T;
    },
  };
  const vendorConfig = (vendor: Vendor, appId: string): VendorCommon | undefined => apps.get(appId)?.[vendor];

  const registry: VendorRegistry = {
    adapter(vendor, appId) {
      const key = `${vendor}/${appId}`;
      let adapter = adapters.get(key);
      if (adapter) return adapter;
      const c = vendorConfig(vendor, appId);
      if (!c) return undefined;
      adapter = vendorModule(vendor).createAdapter(c, ctx);
      adapters.set(key, adapter);
      return adapter;
    },
    limits(vendor, appId) {
      const c = vendorConfig(vendor, appId);
      return c && { ratePerSecond: c.ratePerSecond, concurrency: c.concurrency };
    },
    receiptParser(vendor) {
      const app = config.apps.find((a) => a.vendors[vendor] !== undefined);
      return app && registry.adapter(vendor, app.appId);
    },
    async close() {
      const all = [...adapters.values()];
      adapters.clear();
      await Promise.all(all.map((a) => a.close()));
    },
  };
  return registry;
}
