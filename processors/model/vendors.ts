/**
 * The push vendors: the one list. Each has an adapter folder under sinks/vendors/ behind the vendor
 * port (processors/fan-out/vendor-port.ts); records name them by these strings.
 */
export const VENDORS = ['apns', 'fcm', 'hms', 'xiaomi', 'oppo', 'vivo'] as const;

export type Vendor = (typeof VENDORS)[number];
