import type { VendorModule } from '../module.ts';
import { asGiven, NO_CLASSES } from '../module.ts';
import { HTTP2_CONNECTIONS, type VendorCommon } from '../vendor-config.ts';
import { ApnsAdapter } from './adapter.ts';
import { ProviderToken } from './provider-token.ts';

export interface ApnsAppConfig extends VendorCommon {
  readonly teamId: string;
  readonly keyId: string;
  /** PKCS#8 PEM of the .p8 key (from `privateKey` or `privateKeyFile`). */
  readonly privateKey: string;
  /** The app's bundle id, sent as apns-topic. */
  readonly topic: string;
  /** `production` (api.push.apple.com) or `sandbox` (api.sandbox.push.apple.com). Default production. */
  readonly environment: 'production' | 'sandbox';
  /** apns-push-type. Default `alert`. */
  readonly pushType: 'alert' | 'background' | 'voip';
  /** Regenerate the provider token after this many minutes (20–60). Default 50. */
  readonly tokenRefreshMinutes: number;
}

/** Apple Push Notification service: iOS, iPadOS and macOS devices; no receipts. */
export const APNS: VendorModule<'apns', ApnsAppConfig, null> = {
  vendor: 'apns',
  name: 'APNs',
  parseConfig: (read, o, key) => ({
    ...read.common(o, key, HTTP2_CONNECTIONS),
    teamId: read.str(o, 'teamId', key),
    keyId: read.str(o, 'keyId', key),
    privateKey: read.secret(o, 'privateKey', key),
    topic: read.str(o, 'topic', key),
    environment: read.oneOf(o, 'environment', key, 'production', ['production', 'sandbox'] as const),
    pushType: read.oneOf(o, 'pushType', key, 'alert', ['alert', 'background', 'voip'] as const),
    tokenRefreshMinutes: read.int(o, 'tokenRefreshMinutes', key, 50, 20, 60),
  }),
  createAdapter: (c, ctx) =>
    new ApnsAdapter(c, {
      // One provider token per (team, key): every connection of every app using that key shares it.
      providerToken: ctx.shared(
        `apns/${c.teamId}/${c.keyId}`,
        () => new ProviderToken({ teamId: c.teamId, keyId: c.keyId, privateKey: c.privateKey, refreshAfterMs: c.tokenRefreshMinutes * 60_000, now: ctx.now }),
      ),
      ca: ctx.ca,
      now: ctx.now,
    }),
  channels: { platforms: ['ios', 'ipados', 'macos'], makers: [], classes: NO_CLASSES },
  sentText: asGiven,
  receipts: null,
};
