import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Callback authentication. HMS signs callbacks with `X-HUAWEI-CALLBACK-ID:
 * timestamp=<ms>;nonce=<uuid>;value=<base64(HMAC-SHA256(callbackKey, timestamp+nonce+callbackUsername))>`
 * (research/vendor-protocols.md §3.6). The signature does not cover the body, so a fresh timestamp
 * and a nonce seen once (per body) are required as well. Vendors without signatures (Xiaomi, OPPO,
 * vivo) call a receipt URL that carries a per-app shared secret.
 */
export type VerifyFailure = 'missing_signature' | 'bad_signature' | 'stale_signature' | 'replayed_nonce' | 'missing_secret' | 'bad_secret';

export type VerifyResult = { readonly ok: true; readonly duplicate: boolean } | { readonly ok: false; readonly reason: VerifyFailure };

export interface HmsCallbackCredentials {
  readonly callbackUsername: string;
  readonly callbackKey: string;
}

export function hmsCallbackSignature(credentials: HmsCallbackCredentials, timestamp: string, nonce: string): string {
  return createHmac('sha256', credentials.callbackKey).update(timestamp + nonce + credentials.callbackUsername).digest('base64');
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
  if (!timestamp || !nonce || !value || !/^\d{1,16}$/.test(timestamp)) return undefined;
  return { timestamp, nonce, value };
}

export function constantTimeEqual(a: string, b: string): boolean {
  const left = createHash('sha256').update(a).digest();
  const right = createHash('sha256').update(b).digest();
  return timingSafeEqual(left, right) && a.length === b.length;
}

/**
 * Remembers HMS nonces for the signature's validity window. The same nonce with the same body is
 * a vendor retry (accepted, flagged duplicate); the same nonce with another body is a replayed
 * header on a forged body (rejected).
 */
export class NonceCache {
  private readonly seen = new Map<string, { bodyHash: string; expiresAt: number }>();

  constructor(private readonly ttlMs: number, private readonly maxEntries = 100_000) {}

  check(nonce: string, body: Buffer, nowMs: number): 'new' | 'duplicate' | 'replayed' {
    this.evict(nowMs);
    const bodyHash = createHash('sha256').update(body).digest('hex');
    const earlier = this.seen.get(nonce);
    if (earlier) return earlier.bodyHash === bodyHash ? 'duplicate' : 'replayed';
    if (this.seen.size >= this.maxEntries) {
      const oldest = this.seen.keys().next().value;
      if (oldest !== undefined) this.seen.delete(oldest);
    }
    this.seen.set(nonce, { bodyHash, expiresAt: nowMs + this.ttlMs });
    return 'new';
  }

  private evict(nowMs: number): void {
    // Insertion order is expiry order (fixed ttl), so stop at the first live entry.
    for (const [nonce, entry] of this.seen) {
      if (entry.expiresAt > nowMs) break;
      this.seen.delete(nonce);
    }
  }
}

export function verifyHmsCallback(
  header: string | undefined,
  credentials: HmsCallbackCredentials,
  body: Buffer,
  nowMs: number,
  maxSkewMs: number,
  nonces: NonceCache,
): VerifyResult {
  if (!header) return { ok: false, reason: 'missing_signature' };
  const parsed = parseHmsCallbackHeader(header);
  if (!parsed) return { ok: false, reason: 'bad_signature' };
  const expected = hmsCallbackSignature(credentials, parsed.timestamp, parsed.nonce);
  if (!constantTimeEqual(parsed.value, expected)) return { ok: false, reason: 'bad_signature' };
  if (Math.abs(nowMs - Number(parsed.timestamp)) > maxSkewMs) return { ok: false, reason: 'stale_signature' };
  const seen = nonces.check(parsed.nonce, body, nowMs);
  if (seen === 'replayed') return { ok: false, reason: 'replayed_nonce' };
  return { ok: true, duplicate: seen === 'duplicate' };
}

/** Shared-secret check for vendors that do not sign: the secret is in the receipt URL's query. */
export function verifySharedSecret(presented: string | undefined, expected: string): VerifyResult {
  if (!presented) return { ok: false, reason: 'missing_secret' };
  return constantTimeEqual(presented, expected) ? { ok: true, duplicate: false } : { ok: false, reason: 'bad_secret' };
}
