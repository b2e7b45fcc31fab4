/**
 * Rewrites README.md's configuration tables from the declarations in common/config-keys.ts:
 * `npx tsx docs/config-table.ts`. test/static/config-table.test.ts fails when the README is stale.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { withConfigTable } from '../common/config-table.ts';

const readme = join(fileURLToPath(new URL('..', import.meta.url)), 'README.md');
const before = readFileSync(readme, 'utf8');
const after = withConfigTable(before);
if (after !== before) writeFileSync(readme, after);
console.log(after === before ? 'README.md configuration tables are up to date' : 'README.md configuration tables rewritten');
