import type { VendorModule } from '../module.ts';
import type { SharedSecret } from '../receipt-auth.ts';
import type { VendorCommon } from '../vendor-config.ts';
import { OppoAdapter } from './adapter.ts';
import { oppoText } from './payload.ts';
import { OPPO_RECEIPTS } from './receipts.ts';

export interface OppoAppConfig extends VendorCommon {
  readonly appKey: string;
  readonly masterSecret: string;
  /** channel_id of the communication channel (Android 9+). */
  readonly channelId: string;
  /** channel_id of the content & marketing channel, for campaigns; without it they go on `channelId`. */
  readonly marketingChannelId?: string;
  /** category of the communication class. Default IM. */
  readonly category: string;
  /** call_back_url for receipts (may carry a shared secret in its query). */
  readonly receiptUrl?: string;
}

/** OPPO PUSH: OPPO, OnePlus and realme phones; receipts on a shared-secret URL. */
export const OPPO: VendorModule<'oppo', OppoAppConfig, SharedSecret> = {
  vendor: 'oppo',
  name: 'OPPO',
  parseConfig: (read, o, key) => ({
    ...read.common(o, key),
    appKey: read.str(o, 'appKey', key),
    masterSecret: read.secret(o, 'masterSecret', key),
    channelId: read.str(o, 'channelId', key),
    marketingChannelId: read.optStr(o, 'marketingChannelId', key),
    category: read.str(o, 'category', key, 'IM'),
    receiptUrl: read.url(o, 'receiptUrl', key),
  }),
  createAdapter: (c, ctx) => new OppoAdapter(c, ctx),
  // AppKey and MasterSecret carry no expiry.
  credentialExpiries: () => [],
  channels: {
    platforms: [],
    makers: ['oppo', 'oneplus', 'realme'],
    // Campaigns in the content & marketing class at notification level 1, on the marketing channel (channel-id.ts).
    classes: {
      IM: { category: 'IM', notify_level: '2' },
      CAMPAIGN: { category: 'MARKETING', notify_level: '1', channel: 'marketing' },
      NOTICE: { category: 'ACCOUNT', notify_level: '2' },
      REMINDER: { category: 'TODO', notify_level: '2' },
    },
  },
  sentText: (text) => {
    const sent = oppoText(text);
    return { title: sent.title, body: sent.content };
  },
  receipts: OPPO_RECEIPTS,
};
