import { VENDORS, type Vendor } from '../../processors/fan-out/vendor-port.ts';
import type { VendorChannels } from '../../processors/policy/channels.ts';
import { vendorModule, vendorModuleOf } from './modules.ts';

/**
 * What the policy needs to know about the vendors to choose a device's channels (docs/design.md,
 * "policy"), gathered from the vendors' modules (module.ts `ChannelFacts`): which vendor a device is
 * woken through, the fallback order, and each vendor's message classes. The policy's choice itself
 * is in processors/policy/channels.ts.
 */

/** `name` → the vendor claiming it; two vendors claiming one name is a mistake in their modules. */
function claims(names: (vendor: Vendor) => readonly string[]): ReadonlyMap<string, Vendor> {
  const byName = new Map<string, Vendor>();
  for (const vendor of VENDORS) {
    for (const name of names(vendor)) {
      const other = byName.get(name);
      if (other !== undefined)
        throw new Error(`both ${other} and ${vendor} claim devices of ${JSON.stringify(name)} (sinks/vendors/<vendor>/index.ts channels)`);
      byName.set(name, vendor);
    }
  }
  return byName;
}

const BY_PLATFORM = claims((v) => vendorModule(v).channels.platforms);
const BY_MAKER = claims((v) => vendorModule(v).channels.makers);
const isGeneric = (v: Vendor) => vendorModule(v).channels.generic === true;
const GENERIC = VENDORS.find(isGeneric) ?? '';

/** Fallback order after the preferred vendor: vendor-specific services before the generic one (FCM). */
const VENDOR_PRIORITY: readonly Vendor[] = [...VENDORS.filter((v) => !isGeneric(v)), ...VENDORS.filter(isGeneric)];

/** Platform first (iOS → APNs, HarmonyOS → HMS), then the maker (Huawei → HMS, Xiaomi/OPPO/vivo → their own), others → FCM. */
export const VENDOR_CHANNELS: VendorChannels = {
  priority: VENDOR_PRIORITY,
  preferredVendor(platform, manufacturer) {
    return BY_PLATFORM.get(platform.toLowerCase()) ?? BY_MAKER.get((manufacturer ?? '').toLowerCase()) ?? (manufacturer ? GENERIC : '');
  },
  imClassification(vendor) {
    return { ...(vendorModuleOf(vendor)?.channels.classes.IM ?? {}) };
  },
  businessClassification(vendor, category) {
    return { ...(vendorModuleOf(vendor)?.channels.classes[category] ?? {}) };
  },
};
