import type { VendorChannels } from '../../processors/policy/channels.ts';

/**
 * What the policy needs to know about the vendors to choose a device's channels (docs/design.md
 * §2.3): which vendor a device is woken through, the fallback order, and each vendor's IM message
 * class. The policy's choice itself is in processors/policy/channels.ts; this is the vendor data.
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

/**
 * Per-vendor message classification for IM pushes: each vendor's private / communication class, so
 * IM traffic does not burn marketing quotas (docs/vendors.md, "IM classification sent"). The policy
 * puts these on the dispatch's channels and the adapters copy them onto their requests.
 */
const IM_CLASSIFICATION: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  apns: {},
  fcm: {},
  hms: { category: 'IM' },
  xiaomi: { channel: 'private' },
  oppo: { category: 'IM', notify_level: '2' },
  vivo: { classification: '1', category: 'IM' },
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
};
