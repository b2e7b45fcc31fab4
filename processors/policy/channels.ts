/**
 * Channel choice per device (docs/design.md §2.3): iOS → APNs; Huawei → HMS; Xiaomi/OPPO/vivo → their own;
 * others → FCM. A device may hold several valid tokens (one per vendor); the preferred vendor comes
 * first and the rest follow in a fixed priority, so the fan-out can fall back in order.
 */
export const VENDOR_PRIORITY = ['apns', 'hms', 'xiaomi', 'oppo', 'vivo', 'fcm'] as const;

/** Makers whose phones carry a vendor push service, by the vendor they use. */
const MAKERS: Record<string, string> = {
  huawei: 'hms', honor: 'hms',
  xiaomi: 'xiaomi', redmi: 'xiaomi', poco: 'xiaomi',
  oppo: 'oppo', oneplus: 'oppo', realme: 'oppo',
  vivo: 'vivo', iqoo: 'vivo',
};

/** The vendor a device should be woken through, from what its client reported. */
export function preferredVendor(platform: string, manufacturer: string | null): string {
  const p = platform.toLowerCase();
  if (p === 'ios' || p === 'ipados' || p === 'macos') return 'apns';
  if (p === 'harmony' || p === 'harmonyos') return 'hms';
  return MAKERS[(manufacturer ?? '').toLowerCase()] ?? (manufacturer ? 'fcm' : '');
}

/**
 * Orders a device's vendors: the preferred one first, then VENDOR_PRIORITY (a vendor-specific token
 * implies that maker's phone, so without a maker it ranks before FCM); unknown vendors last.
 */
export function orderVendors(vendors: readonly string[], preferred: string): string[] {
  const rank = (v: string) => (v === preferred ? -1 : (VENDOR_PRIORITY as readonly string[]).indexOf(v) === -1 ? 99 : (VENDOR_PRIORITY as readonly string[]).indexOf(v));
  return [...vendors].sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
}

/**
 * Per-vendor message classification for IM pushes: each vendor's private / communication class, so
 * IM traffic does not burn marketing quotas (research/vendor-protocols.md, classification table).
 * The adapters copy these onto their requests.
 */
export const IM_CLASSIFICATION: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  apns: {},
  fcm: {},
  hms: { category: 'IM' },
  xiaomi: { channel: 'private' },
  oppo: { category: 'IM', notify_level: '2' },
  vivo: { classification: '1', category: 'IM' },
};

export function classificationFor(vendor: string): Record<string, string> {
  return { ...(IM_CLASSIFICATION[vendor] ?? {}) };
}
