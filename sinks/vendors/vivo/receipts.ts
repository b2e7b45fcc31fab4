import type { ParsedReceipt } from '../../../processors/fan-out/vendor-port.ts';
import { recipientField } from '../../../processors/model/receipt-route.ts';
import { jsonOf } from '../http.ts';
import type { VendorReceipts } from '../module.ts';
import { SHARED_SECRET, type SharedSecret } from '../receipt-auth.ts';
import { VIVO_RECEIPT_ACK } from './codes.ts';

/** vivo receipt (this project's format): `{"<taskId>":{"param","targets":"r1,r2","ackTime","ackType"}}`. */
function parseVivoReceipt(body: Buffer, _contentType: string | undefined, now: () => number): ParsedReceipt[] {
  const parsed = jsonOf(body.toString('utf8')) as Record<string, { targets?: string; ackTime?: number; ackType?: number; param?: string }> | undefined;
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) return [];
  return Object.entries(parsed).flatMap(([taskId, r]) =>
    String(r?.targets ?? '')
      .split(',')
      .filter(Boolean)
      .map((token) => ({
        vendor: 'vivo' as const,
        vendorMessageId: taskId,
        token,
        status: VIVO_RECEIPT_ACK[String(r.ackType)] ?? 'failed',
        code: String(r.ackType ?? ''),
        at: Number(r.ackTime) || now(),
        ...recipientField(r.param),
      })),
  );
}

/** vivo posts receipts to the URL registered in its console under the app's `receiptId` (with its shared secret). */
export const VIVO_RECEIPTS: VendorReceipts<SharedSecret> = {
  ack: { contentType: 'application/json', body: '{"result":0,"desc":"success"}' },
  auth: SHARED_SECRET,
  parse: parseVivoReceipt,
};
