import type { VendorModule } from '../module.ts';
import type { SharedSecret } from '../receipt-auth.ts';
import type { VendorCommon } from '../vendor-config.ts';
import { VivoAdapter } from './adapter.ts';
import { vivoText } from './payload.ts';
import { VIVO_RECEIPTS } from './receipts.ts';

export interface VivoAppConfig extends VendorCommon {
  readonly appId: string;
  readonly appKey: string;
  readonly appSecret: string;
  /** Secondary category of the system class (classification 1). Default IM. */
  readonly category: string;
  /** The receipt id registered in the vivo console (sent as extra.callback). */
  readonly receiptId?: string;
}

/** vivo push: vivo and iQOO phones; receipts on a shared-secret URL. */
export const VIVO: VendorModule<'vivo', VivoAppConfig, SharedSecret> = {
  vendor: 'vivo',
  name: 'vivo',
  parseConfig: (read, o, key) => ({
    ...read.common(o, key),
    appId: read.str(o, 'appId', key),
    appKey: read.str(o, 'appKey', key),
    appSecret: read.secret(o, 'appSecret', key),
    category: read.str(o, 'category', key, 'IM'),
    receiptId: read.optStr(o, 'receiptId', key),
  }),
  createAdapter: (c, ctx) => new VivoAdapter(c, ctx),
  // AppKey and AppSecret carry no expiry.
  credentialExpiries: () => [],
  channels: {
    platforms: [],
    makers: ['vivo', 'iqoo'],
    // Campaigns in the operation class (0), the rest in the system class (1).
    classes: {
      IM: { classification: '1', category: 'IM' },
      CAMPAIGN: { classification: '0', category: 'MARKETING' },
      NOTICE: { classification: '1', category: 'ACCOUNT' },
      REMINDER: { classification: '1', category: 'TODO' },
    },
  },
  sentText: (text) => {
    const sent = vivoText(text);
    return { title: sent.title, body: sent.content };
  },
  receipts: VIVO_RECEIPTS,
};
