import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Callback authentication. HMS signs callbacks with `X-HUAWEI-CALLBACK-ID:
 * timestamp=<ms>;nonce=<uuid>;value=<base64(HMAC-SHA256(callbackKey, timestamp+nonce+callbackUsername))>`
 * (docs/vendors.md). The signature does not cover the body, so a fresh timestamp and a nonce seen
 * once (per body, across every receiver: nonces.ts) are required as well. Vendors without signatures (Xiaomi, OPPO,
 * vivo) call a receipt URL that carries a per-app shared secret.
 */
export type VerifyFailure = 'missing_signature' | 'bad_signature' | 'stale_signature' | 'replayed_nonce' | 'missing_secret' | 'bad_secret';

export type VerifyResult = { readonly ok: true; readonly duplicate: boolean } | { readonly ok: false; readonly reason: VerifyFailure };

export interface HmsCallbackCredentials {
  readonly callbackUsername: string;
  readonly callbackKey: string;
}

export function hmsCallbackSignature(credentials: HmsCallbackCredentials, timestamp: string, nonce: string): string {
  return createHmac('sha256', credentials.callbackKey)
    .update(timestamp + nonce + credentials.callbackUsername)
    .digest('base64');
}

/** Builds the header value a genuine HMS callback carries (used by the HMS emulator and tests). */
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

export function constantTimeEqual(a: string, b: string): boolean {
  const left = createHash('sha256').update(a).digest();
  const right = createHash('sha256').update(b).digest();
  return timingSafeEqual(left, right) && a.length === b.length;
}

/** A genuine HMS signature header: its nonce still has to be checked against the body (nonces.ts). */
export type HmsSignatureResult = { readonly ok: true; readonly nonce: string } | { readonly ok: false; readonly reason: VerifyFailure };

/**
 * Checks the signature header alone (HMAC and freshness), before any of the body is read. The
 * nonce is checked once the body is in (`NonceStore.check`), since a replay is a known nonce with
 * another body.
 */
export function verifyHmsSignature(header: string | undefined, credentials: HmsCallbackCredentials, nowMs: number, maxSkewMs: number): HmsSignatureResult {
  if (!header) return { ok: false, reason: 'missing_signature' };
  const parsed = parseHmsCallbackHeader(header);
  if (!parsed) return { ok: false, reason: 'bad_signature' };
  const expected = hmsCallbackSignature(credentials, parsed.timestamp, parsed.nonce);
  if (!constantTimeEqual(parsed.value, expected)) return { ok: false, reason: 'bad_signature' };
  if (Math.abs(nowMs - Number(parsed.timestamp)) > maxSkewMs) return { ok: false, reason: 'stale_signature' };
  return { ok: true, nonce: parsed.nonce };
}

/** Shared-secret check for vendors that do not sign: the secret is in the receipt URL's query. */
export function verifySharedSecret(presented: string | undefined, expected: string): VerifyResult {
  if (!presented) return { ok: false, reason: 'missing_secret' };
  return constantTimeEqual(presented, expected) ? { ok: true, duplicate: false } : { ok: false, reason: 'bad_secret' };
}
