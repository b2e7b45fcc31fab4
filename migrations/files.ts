/**
 * Numbered migration files: `NNN_name.sql` in a folder, applied in version order. A file may hold
 * several statements, each ended by `;` at the end of a line; `--` comment lines are ignored.
 */
import { createHash } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import { ContractError } from '../common/errors.ts';

export interface MigrationFile {
  readonly version: number;
  readonly name: string;
  readonly path: string;
  /** SHA-256 of the file: a changed file after it was applied is an error, not a silent skip. */
  readonly checksum: string;
  readonly statements: readonly string[];
}

const FILE = /^(\d{3,})_([a-z0-9_]+)\.sql$/;

export function readMigrations(dir: string): MigrationFile[] {
  const files: MigrationFile[] = [];
  for (const entry of readdirSync(dir).sort()) {
    const m = FILE.exec(entry);
    if (!m) continue;
    const text = readFileSync(`${dir}/${entry}`, 'utf8');
    files.push({
      version: Number(m[1]),
      name: m[2]!,
      path: `${dir}/${entry}`,
      checksum: createHash('sha256').update(text).digest('hex'),
      statements: splitStatements(text),
    });
  }
  const seen = new Set<number>();
  for (const f of files) {
    if (seen.has(f.version)) throw new ContractError('MIGRATION_DUPLICATE_VERSION', `${dir}: two files have version ${f.version}`);
    seen.add(f.version);
  }
  return files.sort((a, b) => a.version - b.version);
}

/** Splits SQL text into statements: drops `--` comment lines, splits on `;` at the end of a line. */
export function splitStatements(text: string): string[] {
  const body = text
    .split('\n')
    .filter((line) => !/^\s*--/.test(line))
    .join('\n');
  return body
    .split(/;\s*$/m)
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}
