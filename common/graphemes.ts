/**
 * Grapheme clusters: what a reader sees as one character (a ZWJ family emoji, a flag, a letter with
 * combining marks). Text is counted and cut by these, never inside one. Used by the policy (the
 * summary's length, processors/policy/policy.ts) and by the vendor text cutting (sinks/vendors/text.ts).
 */

const segmenter = new Intl.Segmenter(undefined, { granularity: 'grapheme' });

/** The grapheme clusters of a text, in order (extended grapheme clusters, Unicode UAX #29). */
export function graphemes(text: string): string[] {
  return Array.from(segmenter.segment(text), (s) => s.segment);
}

/** The first `max` grapheme clusters of a text (no ellipsis): a count of what a reader sees as characters. */
export function firstGraphemes(text: string, max: number): string {
  if (text.length <= max) return text;
  const parts = graphemes(text);
  return parts.length <= max ? text : parts.slice(0, max).join('');
}
