import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { ROOT } from '../../stack/paths.ts';

/**
 * Kafka and registry clients are made in one place each (common/kafka-client.ts,
 * common/registry-client.ts), so the security settings (docs/operations.md, "Connecting to a
 * secured cluster") reach every one of them: a client constructed anywhere else would connect in
 * plain text, without credentials, to a cluster that wants otherwise.
 */
const FACTORIES: ReadonlyArray<{ construction: RegExp; home: string }> = [
  { construction: /\bnew\s+Kafka\s*\(/, home: 'common/kafka-client.ts' },
  { construction: /\bnew\s+SchemaRegistry\s*\(/, home: 'common/registry-client.ts' },
];

const SKIPPED = new Set(['node_modules', '.stack', '.git', 'dist']);

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((entry) => {
    if (SKIPPED.has(entry)) return [];
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) return sources(path);
    return /\.(ts|mts|mjs|cjs|js)$/.test(entry) ? [relative(ROOT, path)] : [];
  });
}

test('every Kafka and schema registry client of the project comes from its factory', () => {
  const files = sources(ROOT);
  assert.ok(files.includes('common/kafka-client.ts') && files.length > 300, 'the walk sees the tree');
  for (const { construction, home } of FACTORIES) {
    const makers = files.filter((file) => construction.test(readFileSync(join(ROOT, file), 'utf8')));
    assert.deepEqual(makers, [home], `constructed outside ${home}`);
  }
});
