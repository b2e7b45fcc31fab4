import type { ParsedReceipt } from '../../../processors/fan-out/vendor-port.ts';
import { recipientField } from '../../../processors/model/receipt-route.ts';
import { jsonOf } from '../http.ts';
import type { VendorReceipts } from '../module.ts';
import { SHARED_SECRET, type SharedSecret } from '../receipt-auth.ts';
import { OPPO_RECEIPT_EVENTS } from './codes.ts';

/** OPPO receipt: JSON array of `{messageId, appId, taskId, registrationIds:"r1,r2", eventTime, eventType, param}`. */
function parseOppoReceipt(body: Buffer, _contentType: string | undefined, now: () => number): ParsedReceipt[] {
  const parsed = jsonOf(body.toString('utf8'));
  const events = (Array.isArray(parsed) ? parsed : []) as Array<Record<string, unknown>>;
  return events.flatMap((e) =>
    String(e.registrationIds ?? '')
      .split(',')
      .filter(Boolean)
      .map((token) => ({
        vendor: 'oppo' as const,
        vendorMessageId: String(e.messageId ?? ''),
        token,
        status: OPPO_RECEIPT_EVENTS[String(e.eventType)] ?? 'failed',
        code: String(e.eventType ?? ''),
        at: Number(e.eventTime) || now(),
        ...recipientField(e.param),
      })),
  );
}

/** OPPO posts receipts to the message's `call_back_url` (the app's `receiptUrl`, with its shared secret). */
export const OPPO_RECEIPTS: VendorReceipts<SharedSecret> = {
  ack: { contentType: 'application/json', body: '{"code":0,"message":"success"}' },
  auth: SHARED_SECRET,
  parse: parseOppoReceipt,
};
