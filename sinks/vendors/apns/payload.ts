import type { PushMessage } from '../../../processors/fan-out/vendor-port.ts';
import { fitJsonPayload, type NotificationText } from '../text.ts';

/**
 * APNs payload limits (docs/vendors.md, "Payload limits"): the JSON body counts in UTF-8 bytes,
 * at most 4096 (413 PayloadTooLarge above), 5120 for VoIP pushes. Title and body have no limit of
 * their own; they share what the rest of the payload leaves.
 */
export const APNS_PAYLOAD_LIMITS = { maxBytes: 4096, maxVoipBytes: 5120 } as const;

export function apnsMaxPayloadBytes(pushType: string): number {
  return pushType === 'voip' ? APNS_PAYLOAD_LIMITS.maxVoipBytes : APNS_PAYLOAD_LIMITS.maxBytes;
}

function render(m: PushMessage, text: NotificationText): string {
  const aps: Record<string, unknown> = { alert: { title: text.title, body: text.body }, badge: m.badge, 'thread-id': m.collapseId };
  if (!m.silent) aps.sound = 'default';
  const custom = Object.fromEntries(Object.entries(m.data).filter(([k]) => k !== 'aps'));
  return JSON.stringify({ aps, ...custom });
}

/**
 * The JSON body for a message: title and body cut by grapheme clusters so the whole payload fits
 * `maxBytes`. When the other fields alone are too large, the uncut payload (over the limit: the
 * caller answers payload-too-large without a request).
 */
export function apnsPayload(m: PushMessage, maxBytes: number): string {
  return fitJsonPayload({ title: m.title, body: m.body }, maxBytes, (text) => render(m, text))?.json ?? render(m, m);
}
