/**
 * A cached vendor credential (OAuth access token, OPPO auth_token, vivo authToken): minted on
 * first use, reused until `refreshBeforeMs` before it expires, minted at most once at a time
 * (concurrent callers share one in-flight mint), and dropped on demand when the vendor rejects it.
 */
export interface MintedCredential {
  readonly value: string;
  /** Epoch ms after which the vendor no longer accepts it. */
  readonly expiresAtMs: number;
}

export class CachedCredential {
  private current: MintedCredential | undefined;
  private minting: Promise<MintedCredential> | undefined;

  constructor(
    private readonly mint: () => Promise<MintedCredential>,
    /** Refresh this long before expiry, in ms. */
    private readonly refreshBeforeMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  async get(): Promise<string> {
    const c = this.current;
    if (c && this.now() < c.expiresAtMs - this.refreshBeforeMs) return c.value;
    this.minting ??= this.mint().finally(() => {
      this.minting = undefined;
    });
    this.current = await this.minting;
    return this.current.value;
  }

  /** Forgets `value` if it is still the cached one, so the next `get` mints a fresh credential. */
  invalidate(value: string): void {
    if (this.current?.value === value) this.current = undefined;
  }
}
