import type { ParsedReceipt } from '../../../processors/fan-out/vendor-port.ts';
import { recipientField } from '../../../processors/model/receipt-route.ts';
import { jsonOf } from '../http.ts';
import type { VendorReceipts } from '../module.ts';
import { SHARED_SECRET, type SharedSecret } from '../receipt-auth.ts';
import { XIAOMI_RECEIPT_BITS } from './codes.ts';

/**
 * Xiaomi receipt: form field `data` holding `{"<msgId>":{"param","type","targets":"r1,r2","jobkey","barStatus","timestamp"}}`.
 * Clicks (type 2 alone) are not arrival and are skipped.
 */
function parseXiaomiReceipt(body: Buffer, contentType: string | undefined, now: () => number): ParsedReceipt[] {
  const text = body.toString('utf8');
  const json = /json/i.test(contentType ?? '') ? text : (new URLSearchParams(text).get('data') ?? '');
  const parsed = jsonOf(json) as Record<string, { type?: number; targets?: string; timestamp?: number; param?: string }> | undefined;
  if (!parsed || typeof parsed !== 'object') return [];
  const out: ParsedReceipt[] = [];
  for (const [msgId, r] of Object.entries(parsed)) {
    const type = Number(r?.type ?? 0);
    const status =
      type & XIAOMI_RECEIPT_BITS.invalidDevice
        ? 'dead-token'
        : type & XIAOMI_RECEIPT_BITS.failed
          ? 'failed'
          : type & XIAOMI_RECEIPT_BITS.delivered
            ? 'delivered'
            : undefined;
    if (status === undefined) continue;
    const recipient = recipientField(r.param);
    for (const token of String(r.targets ?? '')
      .split(',')
      .filter(Boolean)) {
      out.push({ vendor: 'xiaomi', vendorMessageId: msgId, token, status, code: String(type), at: Number(r.timestamp) || now(), ...recipient });
    }
  }
  return out;
}

/** MiPush posts receipts to the message's `extra.callback` URL (the app's `receiptUrl`, with its shared secret). */
export const XIAOMI_RECEIPTS: VendorReceipts<SharedSecret> = {
  ack: { contentType: 'text/plain', body: 'ok' },
  auth: SHARED_SECRET,
  parse: parseXiaomiReceipt,
};
