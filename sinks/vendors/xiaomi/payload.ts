import type { PushMessage } from '../../../processors/fan-out/vendor-port.ts';
import { cutText, unitsOrThirdBytes, utf8Bytes } from '../text.ts';

/**
 * MiPush limits (docs/vendors.md, "Payload limits"): `title` shorter than 50 and `description`
 * shorter than 128, "one Chinese or English character counts one"; how anything else counts is not
 * documented, so the stricter of UTF-16 units and UTF-8 bytes / 3. `payload` under 4 KB; 65009
 * "message content too long" has no documented number, so title + description + payload stay
 * within 4096 UTF-8 bytes.
 */
export const XIAOMI_PAYLOAD_LIMITS = { titleMax: 49, descriptionMax: 127, maxBytes: 4096 } as const;

export const xiaomiCount = unitsOrThirdBytes;

/** Title and description cut by grapheme clusters to the documented lengths. */
export function xiaomiTitles(m: Pick<PushMessage, 'title' | 'body'>): { title: string; description: string } {
  return {
    title: cutText(m.title, XIAOMI_PAYLOAD_LIMITS.titleMax, xiaomiCount),
    description: cutText(m.body, XIAOMI_PAYLOAD_LIMITS.descriptionMax, xiaomiCount),
  };
}

/** The notification fields of the form. */
export function xiaomiText(m: PushMessage): { title: string; description: string; payload: string } {
  return { ...xiaomiTitles(m), payload: JSON.stringify(m.data) };
}

/** Bytes counted towards the size limit. */
export function xiaomiPayloadBytes(m: PushMessage): number {
  const t = xiaomiText(m);
  return utf8Bytes(t.title) + utf8Bytes(t.description) + utf8Bytes(t.payload);
}
