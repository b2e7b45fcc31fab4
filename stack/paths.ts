import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The checkout's root. */
export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

/**
 * Project-local, git-ignored state of the local stack: downloaded jars and archives, data folders,
 * PID files and logs. PUSH_STACK_DIR moves it.
 */
export const STACK_DIR = process.env.PUSH_STACK_DIR || join(ROOT, '.stack');
export const LOG_DIR = join(STACK_DIR, 'logs');

export function stackPath(...parts: string[]): string {
  return join(STACK_DIR, ...parts);
}

export function ensureDir(path: string): string {
  mkdirSync(path, { recursive: true });
  return path;
}
