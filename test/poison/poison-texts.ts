/**
 * Texts for the poison suite's payload case: as long as ingest lets through (docs/design.md,
 * "Ingest validation": title 1,024 and summary 8,192 UTF-16 units), or exactly at a Chinese
 * vendor's documented limit (docs/vendors.md), made of hard graphemes (test/sinks/vendors/texts.ts).
 */
import assert from 'node:assert/strict';
import { ELLIPSIS, graphemes } from '../../sinks/vendors/text.ts';
import { HARD_GRAPHEMES } from '../sinks/vendors/texts.ts';

export const POOLS = {
  cjk: [...'你好世界消息中文字测试漢字한국어日本語'],
  zwj: ['👨‍👩‍👧‍👦', '🏳️‍🌈', '👍🏽', '🇨🇳'],
  mixed: [...HARD_GRAPHEMES, ...'ab 你好'],
} as const;

/** Graphemes of `pool` in turn, as many as fit in `maxUnits` UTF-16 units. */
export function fill(pool: readonly string[], maxUnits: number): string {
  let out = '';
  for (let i = 0; ; i++) {
    const next = pool[i % pool.length]!;
    if (out.length + next.length > maxUnits) return out;
    out += next;
  }
}

/**
 * Asserts that `sent` is whole leading graphemes of `text`, optionally followed by the ellipsis a
 * vendor builder adds when it cuts (the policy cuts summaries to PUSH_SUMMARY_MAX_CHARS graphemes
 * without one), and not empty.
 */
export function assertLeadingGraphemes(text: string, sent: string | undefined, label: string): void {
  assert.ok(sent, `${label}: nothing arrived`);
  const kept = sent.endsWith(ELLIPSIS) && !text.startsWith(sent) ? sent.slice(0, -ELLIPSIS.length) : sent;
  const parts = graphemes(kept);
  assert.ok(parts.length > 0, `${label}: only an ellipsis arrived`);
  assert.deepEqual(parts, graphemes(text).slice(0, parts.length), `${label}: ${JSON.stringify(sent)} is not whole leading graphemes of what was sent`);
}
