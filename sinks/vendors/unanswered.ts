/**
 * A vendor call that got no answer: NetworkError for the HTTPS vendors (sinks/vendors/http.ts),
 * LostStreamError for APNs (sinks/vendors/apns/connection-pool.ts). `written` says whether the
 * request may have reached the vendor; only a call that was not written is known not to have been
 * taken. `retryAfterMs`, while reconnects back off: how long until the next connection may be opened.
 */
export class UnansweredError extends Error {
  readonly retryAfterMs: number | undefined;
  constructor(
    message: string,
    readonly written: boolean,
    options?: ErrorOptions & { retryAfterMs?: number },
  ) {
    super(message, options);
    this.retryAfterMs = options?.retryAfterMs;
  }
}
