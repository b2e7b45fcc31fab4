/**
 * Cutting notification text to a vendor's limit without breaking what the user reads: text is cut
 * between grapheme clusters (what a reader sees as one character: a ZWJ family emoji, a flag, a
 * letter with combining marks), never inside one, and a cut text ends with an ellipsis. Each vendor
 * measures differently (bytes of the JSON payload, UTF-16 units, "a Chinese character counts two"),
 * so the measure is a parameter; the vendors' rules and their sources are in docs/vendors.md.
 */

import { graphemes } from '../../common/graphemes.ts';

// Re-exported so callers of the text cutting find the segmentation it uses in one place.
export { firstGraphemes, graphemes } from '../../common/graphemes.ts';

/** How a vendor counts a text towards a limit. Every measure here grows with the text (a longer prefix never measures less). */
export type TextMeasure = (text: string) => number;

/** Appended to a cut text: one character, 3 bytes in UTF-8. */
export const ELLIPSIS = '…';

/** UTF-8 bytes. */
export const utf8Bytes: TextMeasure = (text) => Buffer.byteLength(text, 'utf8');

/** UTF-16 code units (JavaScript's and Java's `length`: an emoji outside the BMP counts 2). */
export const utf16Units: TextMeasure = (text) => text.length;

/** Bytes the text takes as a JSON string value as JSON.stringify writes it (escapes included, the two quotes not). */
export const jsonStringBytes: TextMeasure = (text) => Buffer.byteLength(JSON.stringify(text), 'utf8') - 2;

/**
 * Characters where a vendor documents "one Chinese or English character counts one" but not how it
 * counts anything else (emoji, combining marks): the stricter of UTF-16 units and UTF-8 bytes / 3
 * (rounded up). CJK and ASCII count one each, an emoji at least two.
 */
export const unitsOrThirdBytes: TextMeasure = (text) => Math.max(text.length, Math.ceil(Buffer.byteLength(text, 'utf8') / 3));

/**
 * "One Chinese character equals two English characters": each ASCII UTF-16 unit counts one, every
 * other unit two (so an emoji outside the BMP counts four). For any text this is at least the
 * UTF-16 units and at least UTF-8 bytes / 3 on the two-per-CJK scale.
 */
export const asciiOneOtherTwo: TextMeasure = (text) => {
  let n = 0;
  for (let i = 0; i < text.length; i++) n += text.charCodeAt(i) < 0x80 ? 1 : 2;
  return n;
};

/**
 * Cuts `text` to at most `max` by `measure`. A text within the limit is returned unchanged; a longer
 * one keeps the most whole grapheme clusters that fit together with the ellipsis, without trailing
 * whitespace, and ends with the ellipsis. When not even one cluster fits, the result is the
 * ellipsis alone (or '' if that does not fit either).
 */
export function cutText(text: string, max: number, measure: TextMeasure, ellipsis: string = ELLIPSIS): string {
  if (measure(text) <= max) return text;
  if (measure(ellipsis) > max) return '';
  const parts = graphemes(text);
  // Largest n with measure(first n clusters + ellipsis) <= max; n = 0 fits (checked above), n = all does not.
  let lo = 0;
  let hi = parts.length;
  while (hi - lo > 1) {
    const mid = (lo + hi) >>> 1;
    if (measure(parts.slice(0, mid).join('') + ellipsis) <= max) lo = mid;
    else hi = mid;
  }
  return parts.slice(0, lo).join('').trimEnd() + ellipsis;
}

/** A title and a body as they go out. */
export interface NotificationText {
  readonly title: string;
  readonly body: string;
}

/**
 * Fits a title and a body into a JSON payload of at most `maxBytes` UTF-8 bytes. `build` renders the
 * whole payload for a given title and body, each written once as a JSON string. A payload within
 * the limit is kept as it is; otherwise both are cut by grapheme clusters: the body (the message)
 * keeps what the title leaves, and a long title keeps at most a quarter of the room when the body
 * needs the rest. Returns undefined when even an empty title and body do not fit (the other fields
 * alone are too large).
 */
export function fitJsonPayload(
  text: NotificationText,
  maxBytes: number,
  build: (text: NotificationText) => string,
): { text: NotificationText; json: string } | undefined {
  const json = build(text);
  if (utf8Bytes(json) <= maxBytes) return { text, json };
  const overhead = utf8Bytes(build({ title: '', body: '' }));
  let room = maxBytes - overhead;
  if (room < 0) return undefined;
  // The title and body are each written once, so the payload is overhead + their JSON bytes; the
  // loop only guards a build that repeats them.
  for (let pass = 0; pass < 4 && room >= 0; pass++) {
    const titleCost = jsonStringBytes(text.title);
    const bodyCost = jsonStringBytes(text.body);
    const titleRoom = Math.min(titleCost, Math.max(room - bodyCost, Math.floor(room / 4)));
    const title = cutText(text.title, titleRoom, jsonStringBytes);
    const body = cutText(text.body, room - jsonStringBytes(title), jsonStringBytes);
    const fitted = build({ title, body });
    const excess = utf8Bytes(fitted) - maxBytes;
    if (excess <= 0) return { text: { title, body }, json: fitted };
    room -= excess;
  }
  return undefined;
}
