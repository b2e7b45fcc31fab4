import { createHmac } from 'node:crypto';
import type { ParsedReceipt } from '../../../processors/fan-out/vendor-port.ts';
import { recipientField } from '../../../processors/model/receipt-route.ts';
import { jsonOf } from '../http.ts';
import type { VendorReceipts } from '../module.ts';
import { constantTimeEqual, secretString, type CallbackVerdict, type ReceiptAuthScheme, type ReceiptSecrets } from '../receipt-auth.ts';
import { HMS_RECEIPT_STATUS } from './codes.ts';

/**
 * HMS receipts (docs/vendors.md, "Receipts"): callbacks to the URL configured in AppGallery Connect,
 * signed with `X-HUAWEI-CALLBACK-ID: timestamp=<ms>;nonce=<uuid>;value=<base64(HMAC-SHA256(callbackKey,
 * timestamp+nonce+callbackUsername))>`. The signature does not cover the body, so a fresh timestamp and
 * a nonce seen once (per body, across every receiver: receipts/nonces.ts) are required as well.
 */

export interface HmsCallbackCredentials {
  readonly callbackUsername: string;
  readonly callbackKey: string;
}

export interface HmsCallbackSecrets extends ReceiptSecrets {
  readonly kind: 'hms-hmac';
  readonly credentials: HmsCallbackCredentials;
}

export function hmsCallbackSignature(credentials: HmsCallbackCredentials, timestamp: string, nonce: string): string {
  return createHmac('sha256', credentials.callbackKey)
    .update(timestamp + nonce + credentials.callbackUsername)
    .digest('base64');
}

/** Builds the header value a genuine HMS callback carries (used by tests). */
export function hmsCallbackHeader(credentials: HmsCallbackCredentials, timestampMs: number, nonce: string): string {
  const timestamp = String(timestampMs);
  return `timestamp=${timestamp};nonce=${nonce};value=${hmsCallbackSignature(credentials, timestamp, nonce)}`;
}

export function parseHmsCallbackHeader(header: string): { timestamp: string; nonce: string; value: string } | undefined {
  const fields = new Map<string, string>();
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq <= 0) continue;
    fields.set(part.slice(0, eq).trim().toLowerCase(), part.slice(eq + 1).trim());
  }
  const timestamp = fields.get('timestamp');
  const nonce = fields.get('nonce');
  const value = fields.get('value');
  if (!timestamp || !nonce || nonce.length > 256 || !value || !/^\d{1,16}$/.test(timestamp)) return undefined;
  return { timestamp, nonce, value };
}

/**
 * Checks the signature header alone (HMAC and freshness), before any of the body is read. The
 * nonce is checked once the body is in (`NonceStore.check`), since a replay is a known nonce with
 * another body.
 */
export function verifyHmsSignature(header: string | undefined, credentials: HmsCallbackCredentials, nowMs: number, maxSkewMs: number): CallbackVerdict {
  if (!header) return { ok: false, reason: 'missing_signature' };
  const parsed = parseHmsCallbackHeader(header);
  if (!parsed) return { ok: false, reason: 'bad_signature' };
  const expected = hmsCallbackSignature(credentials, parsed.timestamp, parsed.nonce);
  if (!constantTimeEqual(parsed.value, expected)) return { ok: false, reason: 'bad_signature' };
  if (Math.abs(nowMs - Number(parsed.timestamp)) > maxSkewMs) return { ok: false, reason: 'stale_signature' };
  return { ok: true, nonce: parsed.nonce };
}

const HMS_CALLBACK_AUTH: ReceiptAuthScheme<HmsCallbackSecrets> = {
  parseSecrets: (entry, key) => ({
    kind: 'hms-hmac',
    credentials: {
      callbackUsername: secretString(entry.callbackUsername, `${key}.callbackUsername`),
      callbackKey: secretString(entry.callbackKey, `${key}.callbackKey`),
    },
  }),
  verify: (request, secrets, check) => verifyHmsSignature(request.header('x-huawei-callback-id'), secrets.credentials, check.now, check.maxSkewMs),
};

/** Huawei receipt: `{"statuses":[{biTag, appid, token, status, timestamp, requestId}]}`. */
function parseHmsReceipt(body: Buffer, _contentType: string | undefined, now: () => number): ParsedReceipt[] {
  const parsed = jsonOf(body.toString('utf8')) as { statuses?: Array<Record<string, unknown>> } | undefined;
  return (parsed?.statuses ?? []).map((s) => ({
    vendor: 'hms' as const,
    vendorMessageId: String(s.requestId ?? ''),
    ...(typeof s.token === 'string' ? { token: s.token } : {}),
    status: HMS_RECEIPT_STATUS[String(s.status)] ?? 'failed',
    code: String(s.status),
    at: Number(s.timestamp) || now(),
    ...recipientField(s.biTag),
  }));
}

export const HMS_RECEIPTS: VendorReceipts<HmsCallbackSecrets> = {
  ack: { contentType: 'application/json', body: '{"errno":"0","errmsg":"success"}' },
  auth: HMS_CALLBACK_AUTH,
  parse: parseHmsReceipt,
};
