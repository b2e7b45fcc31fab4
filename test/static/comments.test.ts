import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { ROOT } from '../../stack/paths.ts';

/**
 * Comments say what and why, never when or for which ticket (CONTRIBUTING.md): a line that names
 * the ticket it was written for, or dates itself against an earlier version of the code, tells the
 * next reader about a history that is not in the tree (git keeps it). Scans every source file of
 * the repository (not node_modules, the stack's data or bench results).
 */
const HISTORY = /\bissues?\s+#?\d+\b|\buntil\s+this\s+change\b|\b(this|the last|an earlier)\s+session\b/i;
const SOURCE = /\.(ts|mjs|cjs|js|sql|patch)$/;
const SKIP = new Set(['node_modules', '.stack', '.git', 'results']);

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    if (SKIP.has(entry.name)) return [];
    const path = join(dir, entry.name);
    return entry.isDirectory() ? sourceFiles(path) : SOURCE.test(entry.name) ? [path] : [];
  });
}

/** `file:line: text` of every line that names its history. */
function historyLines(file: string, text: string): string[] {
  return text.split('\n').flatMap((line, i) => (HISTORY.test(line) ? [`${file}:${i + 1}: ${line.trim()}`] : []));
}

/** A planted line: its words joined at run time, so this file does not hold the pattern it tests. */
const planted = (...words: string[]) => `${words.join(' ')}\n`;

test('the pattern finds a planted history and lets ordinary words be', () => {
  assert.equal(historyLines('x.ts', planted('// Added for', 'issue', '13: the cap.')).length, 1);
  assert.equal(historyLines('x.ts', planted(' * Kept', 'until', 'this', 'change.')).length, 1);
  assert.equal(historyLines('x.ts', planted('/**', 'Issues', '#7 and 8 */')).length, 1);
  assert.deepEqual(historyLines('x.ts', '// a session of HTTP/2; the issued token; 13 issues at most\n'), []);
});

/** The titles a citation may name: docs/design.md's headings and the bold titles of its invariants. */
function designTitles(): string[] {
  const design = readFileSync(join(ROOT, 'docs/design.md'), 'utf8');
  const headings = [...design.matchAll(/^#{2,4} (.+)$/gm)].map((m) => m[1]!);
  const invariants = [...design.matchAll(/^\*\*([^*]+)\*\*/gm)].map((m) => m[1]!);
  return [...headings, ...invariants].map((t) => t.replaceAll('`', '').toLowerCase());
}

/** The titles a file cites docs/design.md by (`docs/design.md, ` and a title in quotes), comment markers and line breaks folded. */
function citations(text: string): string[] {
  const folded = text.replace(/\s*\n\s*(?:\*(?!\/)|\/\/|#)?\s*/g, ' ');
  return [...folded.matchAll(/docs\/design\.md,? "([^"]+)"/g)].map((m) => m[1]!);
}

test('citations of docs/design.md name a section that exists, by its title, never by a number', () => {
  const titles = designTitles();
  const files = sourceFiles(ROOT);
  const markdown = readdirSync(ROOT)
    .filter((f) => f.endsWith('.md'))
    .map((f) => join(ROOT, f));
  const docs = readdirSync(join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => join(ROOT, 'docs', f));
  const broken: string[] = [];
  for (const file of [...files, ...markdown, ...docs, join(ROOT, 'bench/README.md')]) {
    const name = relative(ROOT, file);
    // An applied migration never changes (migrations/migrate.ts checks each file's checksum): its
    // comments keep the citations they were written with.
    if (/^migrations\/.*\.sql$/.test(name)) continue;
    const text = readFileSync(file, 'utf8');
    if (/design\.md,? ?§/.test(text)) broken.push(`${name}: cites docs/design.md by a section number`);
    for (const cited of citations(text)) {
      const c = cited.replaceAll('`', '').toLowerCase();
      if (!titles.some((t) => t === c || t.startsWith(c))) broken.push(`${name}: no section "${cited}"`);
    }
  }
  assert.deepEqual(broken, []);
});

test('no source file names the ticket it was written for or dates itself against earlier code', () => {
  const found = sourceFiles(ROOT).flatMap((file) => historyLines(relative(ROOT, file), readFileSync(file, 'utf8')));
  assert.deepEqual(found, []);
});
