import { VENDORS, type Vendor } from '../../processors/fan-out/vendor-port.ts';
import { APNS } from './apns/index.ts';
import { FCM } from './fcm/index.ts';
import { HMS } from './hms/index.ts';
import type { VendorModule, VendorReceipts } from './module.ts';
import { OPPO } from './oppo/index.ts';
import type { ReceiptSecrets } from './receipt-auth.ts';
import { VIVO } from './vivo/index.ts';
import { XIAOMI } from './xiaomi/index.ts';

/**
 * Every vendor's module (module.ts), one per name in VENDORS: a vendor named there without a module
 * here, or a module missing a part, fails the typecheck.
 */
export const VENDOR_MODULES = { apns: APNS, fcm: FCM, hms: HMS, xiaomi: XIAOMI, oppo: OPPO, vivo: VIVO } as const satisfies {
  readonly [V in Vendor]: VendorModule<V>;
};

/** The module of `vendor`. */
export const vendorModule = (vendor: Vendor): VendorModule<Vendor> => VENDOR_MODULES[vendor];

/** The module of a vendor name read from a record, a row or a URL; undefined for a name that is no vendor. */
export const vendorModuleOf = (name: string): VendorModule<Vendor> | undefined =>
  (VENDORS as readonly string[]).includes(name) ? vendorModule(name as Vendor) : undefined;

type Modules = typeof VENDOR_MODULES;

/** A vendor's entry of the apps file, as its module parses it. */
export type VendorConfigOf<V extends Vendor> = ReturnType<Modules[V]['parseConfig']>;

/** The vendors that send delivery receipts (their module's `receipts` is not null). */
export type ReceiptVendor = { [V in Vendor]: Modules[V]['receipts'] extends null ? never : V }[Vendor];

/** One app's receipt credentials for `V` (PUSH_RECEIPTS_CONFIG). */
export type ReceiptSecretsOf<V extends ReceiptVendor> = Modules[V]['receipts'] extends VendorReceipts<infer S> ? S : never;

/**
 * The vendors that send delivery receipts, in VENDORS order. For the others (APNs, FCM) a vendor
 * acceptance is the last word: the receipt join keeps no state for them and token health counts the
 * acceptance as the success signal.
 */
export const RECEIPT_VENDORS: readonly ReceiptVendor[] = VENDORS.filter((v): v is ReceiptVendor => vendorModule(v).receipts !== null);

/** The receipt part of a receipt vendor's module. */
export const vendorReceipts = (vendor: ReceiptVendor): VendorReceipts<ReceiptSecrets> => VENDOR_MODULES[vendor].receipts;

/** Whether a name read from a URL is a receipt vendor's. */
export const isReceiptVendor = (name: string): name is ReceiptVendor => (RECEIPT_VENDORS as readonly string[]).includes(name);
