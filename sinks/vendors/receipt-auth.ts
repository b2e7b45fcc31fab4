import { createHash, timingSafeEqual } from 'node:crypto';
import { ConfigError } from '../../common/errors.ts';

/**
 * How a receipt callback proves it comes from the vendor (docs/vendors.md, "Receipts"). A vendor
 * that signs its callbacks has a scheme of its own (HMS: hms/receipts.ts); a vendor that documents
 * no signature is called on a receipt URL that carries a per-app shared secret (`SHARED_SECRET`).
 * The receiver (receipts/server.ts) checks a callback with its vendor's scheme before reading any
 * of its body.
 */

/** One app's receipt credentials for one vendor, from PUSH_RECEIPTS_CONFIG; `kind` names the scheme. */
export interface ReceiptSecrets {
  readonly kind: string;
}

/** Why a callback's credentials were refused (each a receiver reject reason, receipts/metrics.ts). */
export type CallbackRefusal = 'missing_signature' | 'bad_signature' | 'stale_signature' | 'missing_secret' | 'bad_secret';

/**
 * A callback whose credentials hold, with the nonce its signature carries, if any: the receiver
 * checks that nonce against the shared nonce memory once the body is in (receipts/nonces.ts).
 */
export type CallbackVerdict = { readonly ok: true; readonly nonce?: string } | { readonly ok: false; readonly reason: CallbackRefusal };

/** What of a callback request a scheme may look at: nothing of its body. */
export interface CallbackRequest {
  header(name: string): string | undefined;
  /** A query parameter of the callback URL ('' when given empty). */
  query(name: string): string | undefined;
}

export interface CallbackCheck {
  /** Now, epoch ms. */
  readonly now: number;
  /** How far a signed callback's time stamp may be from now, ms (PUSH_RECEIPTS_HMS_MAX_SKEW_MS). */
  readonly maxSkewMs: number;
}

export interface ReceiptAuthScheme<S extends ReceiptSecrets> {
  /** Reads one app's entry for the vendor in PUSH_RECEIPTS_CONFIG (an object); errors name `key` and the field. */
  parseSecrets(entry: Record<string, unknown>, key: string): S;
  /** Checks a callback's credentials against the app's secrets. */
  verify(request: CallbackRequest, secrets: S, check: CallbackCheck): CallbackVerdict;
}

/** Compares in time independent of where the strings differ (and, through the hashes, of their lengths). */
export function constantTimeEqual(a: string, b: string): boolean {
  const left = createHash('sha256').update(a).digest();
  const right = createHash('sha256').update(b).digest();
  return timingSafeEqual(left, right) && a.length === b.length;
}

/** A non-empty string from a receipt secrets entry. */
export function secretString(value: unknown, key: string): string {
  if (typeof value !== 'string' || value === '') throw new ConfigError(key, 'expected a non-empty string');
  return value;
}

/** The receipt URL registered with the vendor ends in `?key=<sharedSecret>`. */
export interface SharedSecret extends ReceiptSecrets {
  readonly kind: 'shared-secret';
  readonly sharedSecret: string;
}

/** The key a callback presents: the receipt URL's `key` parameter, else the `x-push-receipt-key` header. */
export const presentedKey = (request: CallbackRequest): string | undefined => request.query('key') ?? request.header('x-push-receipt-key');

/** Checks a presented key against the expected one in constant time. */
export function verifySharedSecret(presented: string | undefined, expected: string): CallbackVerdict {
  if (!presented) return { ok: false, reason: 'missing_secret' };
  return constantTimeEqual(presented, expected) ? { ok: true } : { ok: false, reason: 'bad_secret' };
}

/** Vendors that document no callback signature (Xiaomi, OPPO, vivo): a shared secret of at least 16 characters in the URL. */
export const SHARED_SECRET: ReceiptAuthScheme<SharedSecret> = {
  parseSecrets(entry, key) {
    const sharedSecret = secretString(entry.sharedSecret, `${key}.sharedSecret`);
    if (sharedSecret.length < 16) throw new ConfigError(`${key}.sharedSecret`, 'must be at least 16 characters');
    return { kind: 'shared-secret', sharedSecret };
  },
  verify: (request, secrets) => verifySharedSecret(presentedKey(request), secrets.sharedSecret),
};
