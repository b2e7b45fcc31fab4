import type { VendorModule } from '../module.ts';
import { asGiven } from '../module.ts';
import type { VendorCommon } from '../vendor-config.ts';
import { HmsAdapter } from './adapter.ts';
import { HMS_RECEIPTS, type HmsCallbackSecrets } from './receipts.ts';

export interface HmsAppConfig extends VendorCommon {
  readonly clientId: string;
  readonly clientSecret: string;
  /** OAuth endpoint. Default https://oauth-login.cloud.huawei.com/oauth2/v3/token. */
  readonly authUrl?: string;
  /** android.category; IM needs Huawei's self-classification entitlement. Default IM. */
  readonly category: string;
  /** android.receipt_id selecting a receipt URL configured in AppGallery Connect. */
  readonly receiptId?: string;
  /** Launcher activity for badge.class. */
  readonly badgeClass?: string;
}

/** Huawei Push Kit: HarmonyOS devices and Huawei and Honor phones; signed receipts. */
export const HMS: VendorModule<'hms', HmsAppConfig, HmsCallbackSecrets> = {
  vendor: 'hms',
  name: 'Huawei (HMS)',
  parseConfig: (read, o, key) => ({
    ...read.common(o, key),
    clientId: read.str(o, 'clientId', key),
    clientSecret: read.secret(o, 'clientSecret', key),
    authUrl: read.url(o, 'authUrl', key),
    category: read.str(o, 'category', key, 'IM'),
    receiptId: read.optStr(o, 'receiptId', key),
    badgeClass: read.optStr(o, 'badgeClass', key),
  }),
  createAdapter: (c, ctx) => new HmsAdapter(c, ctx),
  // A client secret carries no expiry of its own.
  credentialExpiries: () => [],
  channels: {
    platforms: ['harmony', 'harmonyos'],
    makers: ['huawei', 'honor'],
    classes: { IM: { category: 'IM' }, CAMPAIGN: { category: 'MARKETING' }, NOTICE: { category: 'ACCOUNT' }, REMINDER: { category: 'ACCOUNT' } },
  },
  sentText: asGiven,
  receipts: HMS_RECEIPTS,
};
