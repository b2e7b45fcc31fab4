import type { PushMessage } from '../../../processors/fan-out/vendor-port.ts';
import { fitJsonPayload, type NotificationText } from '../text.ts';

/**
 * FCM payload limits (docs/vendors.md, "Payload limits"): "maximum payload for both message types
 * is 4096 bytes", counted here as the UTF-8 bytes of the JSON of `notification` and `data` (what
 * the emulator counts). The builder stays within 4000 bytes, clear of the older "4000 bytes" text.
 */
export const FCM_PAYLOAD_LIMITS = { documentedBytes: 4096, maxBytes: 4000 } as const;

/** The part of the message FCM counts towards the limit. */
export function fcmCountedPayload(m: PushMessage, text: NotificationText): string {
  return JSON.stringify({ notification: { title: text.title, body: text.body }, data: m.data });
}

/**
 * Title and body for a message, cut by grapheme clusters so the counted payload fits
 * `FCM_PAYLOAD_LIMITS.maxBytes`; uncut when the data alone is too large (the caller answers
 * payload-too-large without a request).
 */
export function fcmNotification(m: PushMessage): NotificationText {
  return fitJsonPayload({ title: m.title, body: m.body }, FCM_PAYLOAD_LIMITS.maxBytes, (text) => fcmCountedPayload(m, text))?.text ?? m;
}
