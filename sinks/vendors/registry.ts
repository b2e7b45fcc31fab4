import { ApnsAdapter } from './apns/adapter.ts';
import { ProviderToken } from './apns/provider-token.ts';
import type { AppsConfig, VendorCommon, VendorConfigs } from './apps-config.ts';
import { FcmAdapter } from './fcm/adapter.ts';
import { HmsAdapter } from './hms/adapter.ts';
import { OppoAdapter } from './oppo/adapter.ts';
import type { Vendor, VendorAdapter, VendorLimits } from '../../processors/fan-out/vendor-port.ts';
import { VivoAdapter } from './vivo/adapter.ts';
import { XiaomiAdapter } from './xiaomi/adapter.ts';

/** Options of the registry (tests inject a clock). */
export interface VendorRegistryOptions {
  /** Clock for credential lifetimes, epoch ms. Default Date.now. */
  readonly now?: () => number;
}

/**
 * Every adapter of every configured app, created on first use and injected into the fan-out
 * (no client globals, no `switch (vendor)` outside this table).
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

interface FactoryContext {
  readonly ca: string | undefined;
  readonly now: () => number;
  readonly providerToken: (teamId: string, keyId: string, privateKey: string, refreshAfterMs: number) => ProviderToken;
}

const FACTORIES: { [V in Vendor]: (config: NonNullable<VendorConfigs[V]>, ctx: FactoryContext) => VendorAdapter } = {
  apns: (c, ctx) =>
    new ApnsAdapter(c, {
      providerToken: ctx.providerToken(c.teamId, c.keyId, c.privateKey, c.tokenRefreshMinutes * 60_000),
      ca: ctx.ca,
      now: ctx.now,
    }),
  fcm: (c, ctx) => new FcmAdapter(c, { ca: ctx.ca, now: ctx.now }),
  hms: (c, ctx) => new HmsAdapter(c, { ca: ctx.ca, now: ctx.now }),
  xiaomi: (c, ctx) => new XiaomiAdapter(c, { ca: ctx.ca, now: ctx.now }),
  oppo: (c, ctx) => new OppoAdapter(c, { ca: ctx.ca, now: ctx.now }),
  vivo: (c, ctx) => new VivoAdapter(c, { ca: ctx.ca, now: ctx.now }),
};

/** Builds the registry for a validated apps configuration. */
export function createVendorRegistry(config: AppsConfig, options: VendorRegistryOptions = {}): VendorRegistry {
  const now = options.now ?? Date.now;
  const apps = new Map(config.apps.map((a) => [a.appId, a.vendors]));
  const adapters = new Map<string, VendorAdapter>();
  // One provider token per (team, key): every connection of every app using that key shares it.
  const tokens = new Map<string, ProviderToken>();
  const ctx: FactoryContext = {
    ca: config.ca,
    now,
    providerToken: (teamId, keyId, privateKey, refreshAfterMs) => {
      const key = `${teamId}/${keyId}`;
      let token = tokens.get(key);
      if (!token) tokens.set(key, (token = new ProviderToken({ teamId, keyId, privateKey, refreshAfterMs, now })));
      return token;
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
      adapter = (FACTORIES[vendor] as (config: VendorCommon, ctx: FactoryContext) => VendorAdapter)(c, ctx);
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
