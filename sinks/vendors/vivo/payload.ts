import type { PushMessage } from '../../../processors/fan-out/vendor-port.ts';
import { asciiOneOtherTwo, cutText, utf8Bytes } from '../text.ts';

/**
 * vivo push limits (docs/vendors.md, "Payload limits"): `title` at most 20 Chinese characters, "one
 * Chinese character equals two English characters, i.e. at most 40 English characters"; `content`
 * at most 50 Chinese / 100 English characters. Only Chinese and English are documented, so every
 * non-ASCII UTF-16 unit counts as a Chinese character (two), which is never less than the UTF-16
 * units or UTF-8 bytes / 3 on that scale. `clientCustomMap` at most 1024 characters, counted here
 * as the UTF-8 bytes of its JSON (stricter).
 */
export const VIVO_PAYLOAD_LIMITS = { titleMax: 40, contentMax: 100, clientCustomMapMax: 1024 } as const;

export const vivoCount = asciiOneOtherTwo;

/** Title and content cut by grapheme clusters to the documented lengths. */
export function vivoText(m: Pick<PushMessage, 'title' | 'body'>): { title: string; content: string } {
  return {
    title: cutText(m.title, VIVO_PAYLOAD_LIMITS.titleMax, vivoCount),
    content: cutText(m.body, VIVO_PAYLOAD_LIMITS.contentMax, vivoCount),
  };
}

/** Size of `clientCustomMap` as counted towards its limit. */
export const vivoCustomMapBytes = (m: PushMessage): number => utf8Bytes(JSON.stringify(m.data));
