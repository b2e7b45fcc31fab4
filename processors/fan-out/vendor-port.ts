/**
 * The vendor port: the contract every vendor adapter implements, owned by the fan-out that depends
 * on it. All vendor differences (endpoints, auth, payload shape, classification, error codes,
 * receipts) live inside the adapter's folder under sinks/vendors/, which imports this module; the
 * fan-out and the receipt join see only this interface and the outcome union below (docs/vendors.md).
 */
import type { Vendor } from '../model/vendors.ts';

/** The vendors (processors/model/vendors.ts), as the port's adapters are keyed. */
export { VENDORS, type Vendor } from '../model/vendors.ts';

/** One notification to one device token. Built by the fan-out from a dispatch record. */
export interface PushMessage {
  /** Deterministic id of (uid, conv_id, seq, device_id); used as the vendor's request/message id where allowed. */
  readonly taskId: string;
  readonly appId: string;
  readonly token: string;
  readonly title: string;
  /** Short summary or the generic text; never the message body. */
  readonly body: string;
  /** Latest unread count (APNs badge, vendor badge fields where they exist). */
  readonly badge: number;
  /** Derived from (uid, conv_id): the device replaces instead of stacking. At most 64 bytes. */
  readonly collapseId: string;
  /** A silent update (trailing merge update): no sound, no vibration. */
  readonly silent: boolean;
  /** Custom data for the client to pull (conv_id, seq, msg_id). */
  readonly data: Readonly<Record<string, string>>;
  /** Time to live at the vendor, in seconds. */
  readonly ttlSeconds: number;
  /**
   * Vendor message-class fields from the dispatch channel (hms {category}; oppo {category,
   * notify_level}; vivo {classification, category}; xiaomi {channel}); they override the app's
   * configured defaults. Optional; added by the vendor engineer, compatible with earlier callers.
   */
  readonly classification?: Readonly<Record<string, string>>;
  /**
   * The callback parameter naming the recipient (processors/model/receipt-route.ts
   * `recipientParam`), on pushes whose receipts are joined by uid: the receipt vendors send it as
   * their callback parameter, which every receipt echoes. Absent on a campaign's pushes.
   */
  readonly recipient?: string;
}

export type SubmitOutcome =
  | { readonly kind: 'accepted'; readonly vendorMessageId: string }
  | { readonly kind: 'dead-token'; readonly code: string }
  /** The credential still failed after one refresh and one resend (adapters refresh internally). */
  | { readonly kind: 'auth-failed'; readonly code: string }
  /**
   * `perToken`: the limit concerns this device token only (APNs TooManyRequests), so other tokens
   * of the app are not paused. Optional; added by the vendor engineer, compatible.
   */
  | { readonly kind: 'rate-limited'; readonly code: string; readonly retryAfterMs?: number; readonly perToken?: boolean }
  | { readonly kind: 'quota-exhausted'; readonly code: string }
  | { readonly kind: 'retryable'; readonly code: string; readonly retryAfterMs?: number }
  | { readonly kind: 'payload-too-large'; readonly code: string }
  /**
   * The vendor refused a field of the payload (a bad or missing value, sensitive content): a fault
   * of this message, never of the device token. Optional, so callers that do not give it stay valid.
   */
  | { readonly kind: 'payload-rejected'; readonly code: string }
  /** The request, the app's configuration or its permissions were refused for good. */
  | { readonly kind: 'permanent'; readonly code: string }
  /**
   * A code missing from the vendor's code table: reported with the vendor's code, not retried on
   * that channel, and never evidence against the token (nothing is known about it).
   */
  | { readonly kind: 'unknown-code'; readonly code: string };

export type OutcomeKind = SubmitOutcome['kind'];

/**
 * Codes of `retryable` outcomes without a vendor answer, by whether the vendor may have the push:
 * - `CONNECTION_LOST`: the request was never written (connection refused or failed, TLS refused,
 *   a stream above a GOAWAY's last stream id or refused, a reconnect backoff). The vendor does not
 *   have it; another channel may be tried.
 * - `ANSWER_LOST`: the request was written (or may have been) and no answer came before the
 *   deadline or the connection dropped. The vendor may have accepted it: the outcome is unknown,
 *   not a refusal. Retry on the same channel only (the collapse id makes a resend harmless);
 *   moving to another vendor could show the push twice.
 */
export const NO_ANSWER = { notSent: 'CONNECTION_LOST', unknown: 'ANSWER_LOST' } as const;

/** True when the vendor may have accepted the push although it did not say so (retry the same channel only). */
export function isUnknownOutcome(outcome: SubmitOutcome): boolean {
  return outcome.kind === 'retryable' && outcome.code === NO_ANSWER.unknown;
}

/** A vendor's report about one earlier submission, normalised. */
export interface ParsedReceipt {
  readonly vendor: Vendor;
  readonly vendorMessageId: string;
  /** The device token the receipt is about, where the vendor names it. */
  readonly token?: string;
  readonly status: 'delivered' | 'failed' | 'dead-token';
  /** The vendor's own status code, as a string. */
  readonly code: string;
  /** When the vendor says it happened, epoch ms. */
  readonly at: number;
  /** The uid the receipt's callback parameter names (processors/model/receipt-route.ts `recipientOfParam`), where it names one. */
  readonly recipient?: string;
}

export interface VendorAdapter {
  readonly vendor: Vendor;
  /** Largest payload the vendor accepts, in bytes, as the adapter encodes it. */
  readonly maxPayloadBytes: number;
  /** Most tokens one submit call may carry (1 for vendors without batch sends). */
  readonly maxBatchSize: number;
  /** Size in bytes of the vendor payload this message would produce. */
  payloadBytes(message: PushMessage): number;
  /**
   * Submits the messages (all of one app; more than one only for batch vendors) and returns one
   * outcome per message, in order. Network errors come back as `retryable`, never as a throw.
   * Credential expiry is handled inside: refresh once, resend once, else `auth-failed`.
   */
  submit(messages: readonly PushMessage[]): Promise<SubmitOutcome[]>;
  /** Parses one verified receipt callback body into normalised receipts. */
  parseReceipt(body: Buffer, contentType: string | undefined): ParsedReceipt[];
  close(): Promise<void>;
}

/** Per (vendor, app) limits the fan-out enforces, from the apps file. */
export interface VendorLimits {
  readonly ratePerSecond: number;
  readonly concurrency: number;
}
