import assert from 'node:assert/strict';
import { ELLIPSIS, graphemes } from '../../../sinks/vendors/text.ts';

/** Texts for the payload-limit tests: scripts, hard graphemes, and the check that a cut never splits one. */

/** What a reader sees as one character, each several code points (or several bytes). */
export const HARD_GRAPHEMES = [
  '👨‍👩‍👧‍👦', // family: 7 code points joined by ZWJ, 11 UTF-16 units, 25 bytes
  '🏳️‍🌈', // rainbow flag: ZWJ sequence with a variation selector
  '🇨🇳',
  '🇺🇸', // flags: regional-indicator pairs
  'e\u0301',
  'n\u0303',
  'a\u0308\u0323', // combining marks
  '👍🏽', // skin-tone modifier
  '1️⃣', // keycap
  'क्षि', // Devanagari conjunct
  '😀',
  '中',
  'A',
];

/** A deterministic pseudo-random text of `n` graphemes from `pool`. */
export function textOf(pool: readonly string[], n: number, seed: number): string {
  let x = seed;
  let out = '';
  for (let i = 0; i < n; i++) {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    out += pool[(x >>> 16) % pool.length];
  }
  return out;
}

/** Asserts `cut` is `text` itself, whole leading graphemes of it plus the ellipsis, or '' (not even the ellipsis fits). */
export function assertWholeGraphemes(text: string, cut: string): void {
  if (cut === text || cut === '') return;
  assert.ok(cut.endsWith(ELLIPSIS), `cut text ends with the ellipsis: ${JSON.stringify(cut)}`);
  const kept = graphemes(cut.slice(0, -ELLIPSIS.length));
  assert.deepEqual(kept, graphemes(text).slice(0, kept.length), 'the kept part is whole leading graphemes');
}
