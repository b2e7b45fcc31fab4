import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { cutSummary } from '../../../processors/policy/policy.ts';
import {
  asciiOneOtherTwo,
  cutText,
  ELLIPSIS,
  firstGraphemes,
  fitJsonPayload,
  graphemes,
  jsonStringBytes,
  unitsOrThirdBytes,
  utf16Units,
  utf8Bytes,
  type TextMeasure,
} from '../../../sinks/vendors/text.ts';
import { assertWholeGraphemes, HARD_GRAPHEMES, textOf } from './texts.ts';

const MEASURES: Record<string, TextMeasure> = { utf8Bytes, utf16Units, jsonStringBytes, unitsOrThirdBytes, asciiOneOtherTwo };

describe('text cutting by grapheme clusters', () => {
  test('the segmenter sees each hard grapheme as one', () => {
    for (const g of HARD_GRAPHEMES) assert.deepEqual(graphemes(g), [g], JSON.stringify(g));
    assert.equal(graphemes(HARD_GRAPHEMES.join('')).length, HARD_GRAPHEMES.length);
  });

  test('printable ASCII, whose clusters are taken without the segmenter, splits as the segmenter splits it; CR LF stays one cluster', () => {
    const segmenter = new Intl.Segmenter(undefined, { granularity: 'grapheme' });
    const bySegmenter = (text: string) => Array.from(segmenter.segment(text), (x) => x.segment);
    const printable = Array.from({ length: 0x7f - 0x20 }, (_, i) => String.fromCharCode(0x20 + i)).join('');
    for (const text of ['', 'a', printable, `Group g12 ~ ${printable.split('').reverse().join('')}`, 'message 7 in c-u1-u2'])
      assert.deepEqual(graphemes(text), bySegmenter(text), JSON.stringify(text));
    assert.deepEqual(graphemes('a\r\nb'), ['a', '\r\n', 'b']);
    assert.deepEqual(graphemes('e\u0301x'), ['e\u0301', 'x']);
  });

  test('measures count the way the vendors document', () => {
    assert.equal(utf8Bytes('a中😀'), 1 + 3 + 4);
    assert.equal(utf16Units('a中😀'), 1 + 1 + 2);
    assert.equal(jsonStringBytes('a"\n中'), 1 + 2 + 2 + 3);
    assert.equal(jsonStringBytes('\u0001'), 6);
    // Chinese and English count one; an emoji the stricter of units (2) and bytes / 3 (2).
    assert.equal(unitsOrThirdBytes('Hello'), 5);
    assert.equal(unitsOrThirdBytes('你好世界'), 4);
    assert.equal(unitsOrThirdBytes('😀'), 2);
    assert.equal(unitsOrThirdBytes('👨‍👩‍👧‍👦'), 11);
    assert.equal(unitsOrThirdBytes('é'), 1);
    // vivo: a Chinese character counts two English ones; other non-ASCII units count as Chinese.
    assert.equal(asciiOneOtherTwo('ab'), 2);
    assert.equal(asciiOneOtherTwo('你好'), 4);
    assert.equal(asciiOneOtherTwo('😀'), 4);
    assert.equal(asciiOneOtherTwo('👨‍👩‍👧‍👦'), 22);
  });

  test('a text within the limit comes back unchanged', () => {
    for (const [name, measure] of Object.entries(MEASURES)) {
      for (const text of ['', 'Alice', '你好', '👨‍👩‍👧‍👦 🇨🇳', 'e\u0301']) {
        assert.equal(cutText(text, measure(text), measure), text, `${name} ${text}`);
      }
    }
  });

  test('a cut text never splits a grapheme, stays within the limit and keeps as much as fits', () => {
    const pool = [...HARD_GRAPHEMES, 'x', '你'];
    for (const [name, measure] of Object.entries(MEASURES)) {
      for (let seed = 1; seed <= 12; seed++) {
        const text = textOf(pool, 40 + seed * 7, seed);
        for (let max = 0; max <= measure(text) + 2; max += 1 + (seed % 3)) {
          const cut = cutText(text, max, measure);
          assert.ok(measure(cut) <= max, `${name}: ${measure(cut)} > ${max}`);
          assertWholeGraphemes(text, cut);
          if (cut !== text && cut !== '') {
            // One more grapheme would not have fitted (the pool has no whitespace, so nothing was trimmed).
            const kept = graphemes(cut.slice(0, -ELLIPSIS.length)).length;
            const longer =
              graphemes(text)
                .slice(0, kept + 1)
                .join('') + ELLIPSIS;
            assert.ok(measure(longer) > max, `${name} max ${max}: ${kept} graphemes kept, ${kept + 1} would fit`);
          }
        }
      }
    }
  });

  test('a grapheme larger than the room is dropped whole; the ellipsis alone, or nothing', () => {
    assert.equal(cutText('👨‍👩‍👧‍👦👨‍👩‍👧‍👦', 10, utf8Bytes), ELLIPSIS);
    assert.equal(cutText('👨‍👩‍👧‍👦', 2, utf8Bytes), '');
    assert.equal(cutText('🇨🇳🇺🇸🇯🇵', 8, utf16Units), '🇨🇳…', 'two flags and the ellipsis need 9 units: one flag is kept, never half of one');
    assert.equal(cutText('abc', 0, utf16Units), '');
  });

  test('whitespace before the ellipsis is dropped', () => {
    assert.equal(cutText('See you at seven tonight', 12, utf16Units), 'See you at…');
    assert.equal(cutText('你好 世界 朋友们', 7, utf16Units), '你好 世界…');
  });

  test('firstGraphemes counts what a reader sees', () => {
    assert.equal(firstGraphemes('👨‍👩‍👧‍👦🇨🇳abc', 2), '👨‍👩‍👧‍👦🇨🇳');
    assert.equal(firstGraphemes('short', 100), 'short');
    assert.equal(firstGraphemes('e\u0301e\u0301e\u0301', 2), 'e\u0301e\u0301');
  });

  test('the policy summary keeps a family emoji, a flag and an accent whole', () => {
    const summary = 'Hi'.padEnd(98, '.') + '👨‍👩‍👧‍👦🇨🇳e\u0301';
    assert.equal(cutSummary(summary, 99), 'Hi'.padEnd(98, '.') + '👨‍👩‍👧‍👦');
    assert.equal(cutSummary(summary, 100), 'Hi'.padEnd(98, '.') + '👨‍👩‍👧‍👦🇨🇳');
    assert.equal(cutSummary(summary, 101), summary);
  });
});

describe('fitting title and body into a JSON payload', () => {
  const data = { conv_id: 'c-1', seq: '7' };
  const build = (t: { title: string; body: string }) => JSON.stringify({ aps: { alert: t }, ...data });

  test('a payload within the limit is kept whole', () => {
    const fitted = fitJsonPayload({ title: 'Alice', body: 'Hi 👋' }, 4096, build)!;
    assert.deepEqual(fitted.text, { title: 'Alice', body: 'Hi 👋' });
    assert.equal(fitted.json, build({ title: 'Alice', body: 'Hi 👋' }));
  });

  test('long titles and bodies in every script are cut to the byte limit, the body keeping most of the room', () => {
    for (const [i, pool] of [['a'], ['中'], HARD_GRAPHEMES, ['"', '\n', 'x']].entries()) {
      for (const [titleLen, bodyLen] of [
        [5000, 5000],
        [5000, 10],
        [10, 5000],
        [1, 1],
      ] as const) {
        const text = { title: textOf(pool, titleLen, i + 1), body: textOf(pool, bodyLen, i + 2) };
        const fitted = fitJsonPayload(text, 4096, build)!;
        assert.ok(utf8Bytes(fitted.json) <= 4096, `pool ${i}: ${utf8Bytes(fitted.json)} bytes`);
        assert.equal(fitted.json, build(fitted.text));
        assertWholeGraphemes(text.title, fitted.text.title);
        assertWholeGraphemes(text.body, fitted.text.body);
        if (titleLen === 5000 && bodyLen === 5000)
          assert.ok(jsonStringBytes(fitted.text.body) >= 3 * jsonStringBytes(fitted.text.title) - 64, 'the body keeps most of the room');
        if (bodyLen === 10) assert.equal(fitted.text.body, text.body, 'a short body is kept whole');
        // Nothing is cut that would have fitted: the payload is within a few graphemes of the limit.
        if (fitted.text.body !== text.body) assert.ok(utf8Bytes(fitted.json) > 4096 - 2 * 32, `pool ${i}: ${utf8Bytes(fitted.json)} bytes only`);
      }
    }
  });

  test('when the other fields alone are too large there is no fit', () => {
    assert.equal(
      fitJsonPayload({ title: 't', body: 'b' }, 4096, (t) => JSON.stringify({ ...t, blob: 'x'.repeat(4100) })),
      undefined,
    );
  });
});
