/**
 * Numbered migration files: `NNN_name.sql` in a folder, applied in version order. A file may hold
 * several statements, each ended by `;` at the end of a line; `--` comment lines are ignored.
 */
import { createHash } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import { basename } from 'node:path';
import { ContractError } from '../common/errors.ts';

export interface MigrationFile {
  readonly version: number;
  readonly name: string;
  readonly path: string;
  /** SHA-256 of the file: a changed file after it was applied is an error, not a silent skip. */
  readonly checksum: string;
  /** Checksums of earlier texts of this file that differ from it in comments only (see FORMER_CHECKSUMS). */
  readonly formerChecksums: readonly string[];
  readonly statements: readonly string[];
  /**
   * The oldest server version the file runs on, from a `-- requires ClickHouse >= X.Y` line: an
   * older server leaves it pending (migrations/migrate.ts) until it is upgraded. Absent: any.
   */
  readonly requiresServer?: string;
}

const REQUIRES = /^--\s*requires ClickHouse >= (\d+(?:\.\d+)*)\s*$/m;

/** Whether a server version (`SELECT version()`, e.g. 18.16.1 or 26.7.3.1) is at least `min` (e.g. 20.3). */
export function serverAtLeast(server: string, min: string): boolean {
  const have = server.split('.').map(Number);
  const need = min.split('.').map(Number);
  for (let i = 0; i < need.length; i++) {
    const h = have[i] ?? 0;
    if (h !== need[i]) return h > need[i]!;
  }
  return true;
}

const FILE = /^(\d{3,})_([a-z0-9_]+)\.sql$/;

/**
 * Files whose comments were edited after release, by folder and name: a database that recorded one
 * of the former checksums applied the same statements, so it counts as applied, not changed. Only
 * comment edits may be listed here; a changed statement is a new numbered file.
 */
const FORMER_CHECKSUMS: Readonly<Record<string, readonly string[]>> = {
  // Comments cited a design document outside the repository; they cite docs/design.md now.
  'mysql/001_im_push_task.sql': ['fc6c2f25b2cfcc92e350ac371ec03c6b021dda654d6e61153ddd9060ee967e24'],
  'mysql/002_im_push_task_archive.sql': ['884c8a47004692471240d738a5bafb2b0b2964dacec2ed7e3fdb5edd4cf3632b'],
  'mysql/003_im_push_token.sql': ['9a4805aff823b489177261b441563a065f901c5ce9d16001476c2974a4fe4673'],
  'clickhouse/002_arrival_views.sql': ['94362c9163c089c6fd7816fdc8c644dade1d839dc24e3faa51f0e1873c2f6b8e'],
  // A comment named processors/shared/, renamed processors/model/.
  'clickhouse/004_trace_columns.sql': ['be432a215a07473e683fe4c0fccaf670a36f1f131429e57e181b9b4a365fa44c'],
  // A comment cited an issue number; it cites docs/entry.md alone now.
  'clickhouse/006_business.sql': ['0b67b8cce399c0da3d1b071f6b8b0a424ea8395248a304c913937b585183d0f1'],
};

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
      formerChecksums: FORMER_CHECKSUMS[`${basename(dir)}/${entry}`] ?? [],
      statements: splitStatements(text),
      ...(REQUIRES.test(text) ? { requiresServer: REQUIRES.exec(text)![1]! } : {}),
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
