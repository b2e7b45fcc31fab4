import { createPrivateKey, sign, type KeyObject } from 'node:crypto';

const b64url = (data: Buffer | string) => Buffer.from(data).toString('base64url');

export interface ProviderTokenOptions {
  readonly teamId: string;
  readonly keyId: string;
  /** PKCS#8 PEM of the .p8 key (EC P-256). */
  readonly privateKey: string | KeyObject;
  /** Regenerate once the token is this old, ms. Default 50 min (Apple: 20–60 min). */
  readonly refreshAfterMs?: number;
  readonly now?: () => number;
}

/** Apple forbids regenerating more often than this (429 TooManyProviderTokenUpdates). */
export const MIN_TOKEN_AGE_MS = 20 * 60_000;

/**
 * The APNs provider token of one (team, key): an ES256 JWT `{alg, kid}.{iss, iat}` signed in the
 * JOSE raw r||s form, shared by every connection and app that uses this key. It is reused until
 * `refreshAfterMs` and never regenerated within 20 minutes of the previous one, even on request.
 */
export class ProviderToken {
  private readonly key: KeyObject;
  private readonly refreshAfterMs: number;
  private readonly now: () => number;
  private jwt: string | undefined;
  private issuedAtMs = 0;

  constructor(private readonly options: ProviderTokenOptions) {
    this.key = typeof options.privateKey === 'string' ? createPrivateKey(options.privateKey) : options.privateKey;
    this.refreshAfterMs = options.refreshAfterMs ?? 50 * 60_000;
    this.now = options.now ?? Date.now;
  }

  /** The current token, regenerated if it has reached its refresh age. */
  current(): string {
    if (this.jwt === undefined || this.now() - this.issuedAtMs >= this.refreshAfterMs) this.regenerate();
    return this.jwt!;
  }

  /**
   * APNs said `ExpiredProviderToken` for `rejected`: regenerate unless that is no longer current
   * or the current one is younger than 20 minutes. Returns whether a new token is in place.
   */
  renew(rejected: string): boolean {
    if (rejected !== this.jwt) return true;
    if (this.now() - this.issuedAtMs < MIN_TOKEN_AGE_MS) return false;
    this.regenerate();
    return true;
  }

  private regenerate(): void {
    const nowMs = this.now();
    const header = b64url(JSON.stringify({ alg: 'ES256', kid: this.options.keyId }));
    const claims = b64url(JSON.stringify({ iss: this.options.teamId, iat: Math.floor(nowMs / 1000) }));
    const signature = sign('sha256', Buffer.from(`${header}.${claims}`), { key: this.key, dsaEncoding: 'ieee-p1363' });
    this.jwt = `${header}.${claims}.${b64url(signature)}`;
    this.issuedAtMs = nowMs;
  }
}
