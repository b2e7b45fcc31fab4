/**
 * Grapheme clusters: what a reader sees as one character (a ZWJ family emoji, a flag, a letter with
 * combining marks). Text is counted and cut by these, never inside one. Used by the policy (the
 * summary's length, processors/policy/policy.ts) and by the vendor text cutting (sinks/vendors/text.ts).
 */

const segmenter = new Intl.Segmenter(undefined, { granularity: 'grapheme' });

/** Printable ASCII only: every character is a cluster of its own (no CR LF pair, no combining mark). */
const PRINTABLE_ASCII = /^[\x20-\x7e]*$/;

/**
 * The grapheme clusters of a text, in order (extended grapheme clusters, Unicode UAX #29). Printable
 * ASCII skips the segmenter: there each character is one cluster, and the vendors' cutting of such
 * text was 2 % of a worker's busy CPU at 750 msgs/s (`npm run bench`, `--cpu-prof`).
 */
export function graphemes(text: string): string[] {
  if (PRINTABLE_ASCII.test(text)) return text.split('');
  return Array.from(segmenter.segment(text), (s) => s.segment);
}

/** The first `max` grapheme clusters of a text (no ellipsis): a count of what a reader sees as characters. */
export function firstGraphemes(text: string, max: number): string {
  if (text.length <= max) return text;
  const parts = graphemes(text);
  return parts.length <= max ? text : parts.slice(0, max).join('');
}
