import type { VendorChannels } from '../../processors/policy/channels.ts';
import type { PushCategory } from '../../processors/model/records.ts';
import type { PushMessage } from '../../processors/fan-out/vendor-port.ts';

/**
 * What the policy needs to know about the vendors to choose a device's channels (docs/design.md,
 * "policy"): which vendor a device is woken through, the fallback order, and each vendor's IM
 * message class. The policy's choice itself is in processors/policy/channels.ts; this is the vendor
 * data.
 */

/** Fallback order after the preferred vendor: vendor-specific services before FCM. */
const VENDOR_PRIORITY = ['apns', 'hms', 'xiaomi', 'oppo', 'vivo', 'fcm'] as const;

/** Makers whose phones carry a vendor push service, by the vendor they use. */
const MAKERS: Readonly<Record<string, string>> = {
  huawei: 'hms',
  honor: 'hms',
  xiaomi: 'xiaomi',
  redmi: 'xiaomi',
  poco: 'xiaomi',
  oppo: 'oppo',
  oneplus: 'oppo',
  realme: 'oppo',
  vivo: 'vivo',
  iqoo: 'vivo',
};

/** The fields of a message class, by vendor (the adapters copy them onto their requests). */
type VendorClasses = Readonly<Record<string, Readonly<Record<string, string>>>>;

/**
 * Per-vendor message classification for IM pushes: each vendor's private / communication class, so
 * IM traffic does not burn marketing quotas (docs/vendors.md, "IM classification sent"). The policy
 * puts these on the dispatch's channels and the adapters copy them onto their requests.
 */
const IM_CLASSIFICATION: VendorClasses = {
  apns: {},
  fcm: {},
  hms: { category: 'IM' },
  xiaomi: { channel: 'private' },
  oppo: { category: 'IM', notify_level: '2' },
  vivo: { classification: '1', category: 'IM' },
};

/**
 * Per-vendor message class of business pushes (docs/entry.md, "Vendor classes"). A campaign is
 * marketing: HMS `MARKETING`, OPPO `MARKETING` at notification level 1, vivo operation class (0),
 * and Xiaomi's and OPPO's marketing channel (`channel: marketing`, the apps file's
 * `marketingChannelId`). Notices and reminders are service messages (account updates, to-dos) in
 * each vendor's service class, which needs the same entitlement as IM's. Sending a campaign in the
 * IM class breaks the vendors' classification rules; in its own class it counts against the
 * marketing caps (2–5 a device a day) instead of IM's unlimited class.
 */
const MARKETING: VendorClasses = {
  hms: { category: 'MARKETING' },
  xiaomi: { channel: 'marketing' },
  oppo: { category: 'MARKETING', notify_level: '1', channel: 'marketing' },
  vivo: { classification: '0', category: 'MARKETING' },
};
const SERVICE = (hmsCategory: string, oppoVivoCategory: string): VendorClasses => ({
  hms: { category: hmsCategory },
  xiaomi: { channel: 'private' },
  oppo: { category: oppoVivoCategory, notify_level: '2' },
  vivo: { classification: '1', category: oppoVivoCategory },
});
const BUSINESS_CLASSIFICATION: Readonly<Record<PushCategory, VendorClasses>> = {
  CAMPAIGN: MARKETING,
  NOTICE: SERVICE('ACCOUNT', 'ACCOUNT'),
  REMINDER: SERVICE('ACCOUNT', 'TODO'),
};

/** iOS → APNs; Huawei → HMS; Xiaomi/OPPO/vivo → their own; others → FCM. */
export const VENDOR_CHANNELS: VendorChannels = {
  priority: VENDOR_PRIORITY,
  preferredVendor(platform, manufacturer) {
    const p = platform.toLowerCase();
    if (p === 'ios' || p === 'ipados' || p === 'macos') return 'apns';
    if (p === 'harmony' || p === 'harmonyos') return 'hms';
    return MAKERS[(manufacturer ?? '').toLowerCase()] ?? (manufacturer ? 'fcm' : '');
  },
  imClassification(vendor) {
    return { ...(IM_CLASSIFICATION[vendor] ?? {}) };
  },
  businessClassification(vendor, category) {
    return { ...(BUSINESS_CLASSIFICATION[category][vendor] ?? {}) };
  },
};

/**
 * The notification channel (Xiaomi `extra.channel_id`, OPPO `channel_id`) of a message: the app's
 * marketing channel for a push classed `channel: marketing` when the apps file names one, else its
 * IM / communication channel.
 */
export function channelOf(m: Pick<PushMessage, 'classification'>, config: { readonly channelId: string; readonly marketingChannelId?: string }): string {
  return m.classification?.channel === 'marketing' ? (config.marketingChannelId ?? config.channelId) : config.channelId;
}
