import type { PushMessage } from '../../../processors/fan-out/vendor-port.ts';
import { cutText, unitsOrThirdBytes } from '../text.ts';

/**
 * OPPO PUSH limits (docs/vendors.md, "Payload limits"): `title` at most 50 characters; `content` at
 * most 50 for the standard style (1), 128 for long text (2), 50 for big picture (3);
 * `action_parameters` at most 4000. OPPO counts "Chinese and English characters and special symbols
 * (such as emoji) as one character" without saying in which unit, so the stricter of UTF-16 units
 * and UTF-8 bytes / 3.
 */
export const OPPO_PAYLOAD_LIMITS = { titleMax: 50, contentMaxByStyle: { 1: 50, 2: 128, 3: 50 }, actionParametersMax: 4000 } as const;

/** The notification style the adapter sends: standard. */
export const OPPO_STYLE = 1;

export const oppoCount = unitsOrThirdBytes;

/** Title and content cut by grapheme clusters to the limits of `OPPO_STYLE`. */
export function oppoText(m: Pick<PushMessage, 'title' | 'body'>): { title: string; content: string } {
  return {
    title: cutText(m.title, OPPO_PAYLOAD_LIMITS.titleMax, oppoCount),
    content: cutText(m.body, OPPO_PAYLOAD_LIMITS.contentMaxByStyle[OPPO_STYLE], oppoCount),
  };
}

/** `action_parameters`: the custom data as a JSON string. */
export const oppoActionParameters = (m: PushMessage): string => JSON.stringify(m.data);
