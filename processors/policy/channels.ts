/**
 * Channel choice per device (docs/design.md, "policy"). A device may hold several valid tokens (one
 * per vendor); the preferred vendor comes first and the rest follow in a fixed priority, so the
 * fan-out can fall back in order. What is vendor-specific (which maker uses which vendor, the
 * priority, each vendor's IM class) comes through this port from the adapters
 * (sinks/vendors/channels.ts).
 */

import type { PushCategory } from '../model/records.ts';

/** The vendor facts the policy needs, supplied by the wiring. */
export interface VendorChannels {
  /** Vendors in fallback order after the preferred one. */
  readonly priority: readonly string[];
  /** The vendor a device should be woken through, from what its client reported ('' when nothing says). */
  preferredVendor(platform: string, manufacturer: string | null): string;
  /** The fields that put an IM push in the vendor's private / communication class (a fresh object). */
  imClassification(vendor: string): Record<string, string>;
  /**
   * The fields of a business push's class at the vendor (a fresh object): campaigns in the
   * marketing class, notices and reminders in the service class (docs/entry.md, "Vendor classes").
   */
  businessClassification(vendor: string, category: PushCategory): Record<string, string>;
}

/**
 * Orders a device's vendors: the preferred one first, then `priority` (a vendor-specific token
 * implies that maker's phone, so without a maker it ranks before FCM); unknown vendors last.
 */
export function orderVendors(vendors: readonly string[], preferred: string, priority: readonly string[]): string[] {
  const rank = (v: string) => (v === preferred ? -1 : priority.indexOf(v) === -1 ? 99 : priority.indexOf(v));
  return [...vendors].sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
}
