import type { VendorModule } from '../module.ts';
import type { SharedSecret } from '../receipt-auth.ts';
import type { VendorCommon } from '../vendor-config.ts';
import { XiaomiAdapter } from './adapter.ts';
import { xiaomiTitles } from './payload.ts';
import { XIAOMI_RECEIPTS } from './receipts.ts';

export interface XiaomiAppConfig extends VendorCommon {
  readonly appSecret: string;
  readonly packageName: string;
  /** extra.channel_id of the private (IM) channel. */
  readonly channelId: string;
  /** extra.channel_id of the public (marketing) channel, for campaigns; without it they go on `channelId`. */
  readonly marketingChannelId?: string;
  /** extra.callback: where Xiaomi posts receipts (may carry a shared secret in its query). */
  readonly receiptUrl?: string;
}

/** Xiaomi MiPush: Xiaomi, Redmi and POCO phones; receipts on a shared-secret URL. */
export const XIAOMI: VendorModule<'xiaomi', XiaomiAppConfig, SharedSecret> = {
  vendor: 'xiaomi',
  name: 'Xiaomi',
  parseConfig: (read, o, key) => ({
    ...read.common(o, key),
    appSecret: read.secret(o, 'appSecret', key),
    packageName: read.str(o, 'packageName', key),
    channelId: read.str(o, 'channelId', key),
    marketingChannelId: read.optStr(o, 'marketingChannelId', key),
    receiptUrl: read.url(o, 'receiptUrl', key),
  }),
  createAdapter: (c, ctx) => new XiaomiAdapter(c, ctx),
  // An AppSecret carries no expiry.
  credentialExpiries: () => [],
  channels: {
    platforms: [],
    makers: ['xiaomi', 'redmi', 'poco'],
    // The marketing channel is the apps file's `marketingChannelId` (channel-id.ts).
    classes: { IM: { channel: 'private' }, CAMPAIGN: { channel: 'marketing' }, NOTICE: { channel: 'private' }, REMINDER: { channel: 'private' } },
  },
  sentText: (text) => {
    const sent = xiaomiTitles(text);
    return { title: sent.title, body: sent.description };
  },
  receipts: XIAOMI_RECEIPTS,
};
