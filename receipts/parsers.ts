import type { VendorRegistry } from '../sinks/vendors/registry.ts';
import type { Vendor } from '../processors/fan-out/vendor-port.ts';
import type { ReceiptParsers } from '../processors/receipt-join/records.ts';
import type { ReceiptParser } from './server.ts';

/**
 * Receipt parsing comes from the vendor adapters (`VendorAdapter.parseReceipt`), reached through
 * the vendor registry: receipt formats are per vendor, so any configured app's adapter parses.
 */
export function receiptParserFromRegistry(registry: VendorRegistry): ReceiptParser {
  return (vendor, body, contentType) => {
    const adapter = registry.receiptParser(vendor);
    if (!adapter) throw new Error(`no ${vendor} adapter configured to parse receipts`);
    return adapter.parseReceipt(body, contentType);
  };
}

/** The same, in the shape the receipt-join's `receipt-parse` processor takes. */
export function receiptParsersFromRegistry(registry: VendorRegistry): ReceiptParsers {
  return (vendor: Vendor) => {
    const adapter = registry.receiptParser(vendor);
    return adapter && ((body, contentType) => adapter.parseReceipt(body, contentType));
  };
}
