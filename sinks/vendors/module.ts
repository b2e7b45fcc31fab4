/**
 * A vendor is one folder under sinks/vendors/ whose index.ts exports one `VendorModule`: everything
 * the rest of the system needs of that vendor. The registry (modules.ts) holds one module per name
 * in VENDORS, so a vendor missing a part fails the typecheck instead of being skipped at run time;
 * the apps file, the adapters, the policy's channel choice, the stored task text, `pushctl trace`
 * and the receipt receiver all read the vendors from it.
 */
import type { PushCategory } from '../../processors/model/records.ts';
import type { ParsedReceipt, Vendor, VendorAdapter } from '../../processors/fan-out/vendor-port.ts';
import type { ReceiptAuthScheme, ReceiptSecrets } from './receipt-auth.ts';
import type { NotificationText } from './text.ts';
import type { ConfigReader, RawConfig, VendorCommon } from './vendor-config.ts';

/** What an adapter factory gets from the registry besides its app's configuration. */
export interface AdapterContext {
  /** PEM of extra CAs trusted for TLS to the vendor (the apps file's `ca`). */
  readonly ca: string | undefined;
  /** Clock for credential lifetimes, epoch ms. */
  readonly now: () => number;
  /**
   * The one object of `key` in this registry, made by `create` on first use: a credential several
   * apps share (an APNs provider token per team key) is made once and used by all of them.
   */
  shared<T>(key: string, create: () => T): T;
}

/** A credential of an app that stops working at a known time (push_credential_expiry_seconds, credential-expiry.ts). */
export interface CredentialExpiry {
  /** What it is (`certificate`), the metric's `credential` label; never the secret. */
  readonly credential: string;
  readonly expiresAtMs: number;
}

/** The fields of a message class at a vendor: the policy puts them on the dispatch's channel, the adapter copies them onto its request. */
export type ClassFields = Readonly<Record<string, string>>;

/**
 * Which devices a vendor wakes, and its message classes (docs/design.md, "policy"; the choice itself
 * is processors/policy/channels.ts, fed by channels.ts). A device's preferred vendor is the one
 * claiming its platform, else its maker, else the generic vendor (for a device that reported a maker).
 * A platform or maker claimed by two vendors fails at start.
 */
export interface ChannelFacts {
  /** Platforms (lower case) woken through this vendor whatever their maker. */
  readonly platforms: readonly string[];
  /** Makers (lower case) whose phones carry this vendor's push service. */
  readonly makers: readonly string[];
  /**
   * The generic service (FCM): it wakes a device of any maker no other vendor claims, and comes after
   * every vendor-specific service in the fallback order (a vendor-specific token implies that maker's
   * phone). Vendors are otherwise ordered as VENDORS lists them.
   */
  readonly generic?: true;
  /**
   * The class of each kind of push (`{}`: the vendor's default). `IM`: the private / communication
   * class, so IM traffic does not burn marketing quotas (docs/vendors.md, "IM classification sent").
   * The business categories as docs/entry.md, "Vendor classes" says: a campaign is marketing, notices
   * and reminders are service messages (account updates, to-dos) in the service class, which needs
   * the same entitlement as IM's. Sending a campaign in the IM class breaks the vendors'
   * classification rules; in its own class it counts against the marketing caps (2–5 a device a day)
   * instead of IM's unlimited class.
   */
  readonly classes: { readonly IM: ClassFields } & { readonly [C in PushCategory]: ClassFields };
}

/** What every vendor without its own message classes sends (APNs, FCM). */
export const NO_CLASSES: ChannelFacts['classes'] = { IM: {}, CAMPAIGN: {}, NOTICE: {}, REMINDER: {} };

/**
 * The delivery receipts of a vendor that sends them (docs/vendors.md, "Receipts"). The receiver
 * serves `POST /receipts/<vendor>/<appId>` for it, takes the app's credentials from
 * PUSH_RECEIPTS_CONFIG's `<vendor>` entry, checks each callback with `auth`, parses it with the
 * adapter's `parseReceipt` (which is `parse` with the adapter's clock) and answers `ack`. A push names
 * its recipient in the vendor's callback parameter (`PushMessage.recipient`, which must fit in it:
 * processors/model/receipt-route.ts), and `parse` reads it back with `recipientField`.
 */
export interface VendorReceipts<S extends ReceiptSecrets> {
  /** What the vendor expects back from an accepted callback (the body is informational; the status is what counts). */
  readonly ack: { readonly contentType: string; readonly body: string };
  /** The app's callback credentials and how a callback is checked against them. */
  readonly auth: ReceiptAuthScheme<S>;
  /** One verified callback body as receipts, `now` for a receipt without a time; a malformed body throws or gives none. */
  parse(body: Buffer, contentType: string | undefined, now: () => number): ParsedReceipt[];
}

/**
 * A vendor: `V` its name in VENDORS, `C` its entry of the apps file, `S` its receipt credentials
 * (null for a vendor that sends no receipts).
 */
export interface VendorModule<V extends Vendor, C extends VendorCommon = VendorCommon, S extends ReceiptSecrets | null = ReceiptSecrets | null> {
  readonly vendor: V;
  /** How support and `pushctl trace` call it. */
  readonly name: string;
  /**
   * Its entry of the apps file (`apps[i].vendors.<vendor>`, docs/vendors.md), checked: the common
   * fields (`read.common`, with the vendor's default connection count) and its own credentials and
   * options. Errors name `key` and the field. Fields left undefined are dropped.
   */
  parseConfig(read: ConfigReader, entry: RawConfig, key: string): C;
  /** The adapter behind the vendor port for one app (processors/fan-out/vendor-port.ts). */
  createAdapter(config: C, ctx: AdapterContext): VendorAdapter;
  /**
   * The app's credentials that carry an expiry in the apps file (an APNs provider certificate's
   * notAfter), watched by credential-expiry.ts; [] for a vendor whose credentials carry none.
   */
  credentialExpiries(config: C): readonly CredentialExpiry[];
  readonly channels: ChannelFacts;
  /**
   * The title and summary as the adapter sends them, stored in im_push_task.payload (docs/vendors.md,
   * "Payload limits"): a vendor that cuts each field to lengths of its own cuts them here the same
   * way; one that only fits a whole payload to a size returns them as given (`asGiven`), since a
   * dispatch's summary leaves that size to a title of kilobytes alone.
   */
  sentText(text: NotificationText): NotificationText;
  /** Its delivery receipts, or null when it sends none (its acceptance is the last word: APNs, FCM). */
  readonly receipts: S extends ReceiptSecrets ? VendorReceipts<S> : null;
}

/** `sentText` of a vendor that sends the title and summary as given. */
export const asGiven = (text: NotificationText): NotificationText => ({ title: text.title, body: text.body });
