/**
 * The kafkajs fixes (stack/kafkajs-patch: one diff per fix, listed with its mark in fixes.json;
 * docs/operations.md, "The kafkajs fixes"). The workers and the entry refuse to run unless every
 * one is installed: without them the producer can lose records when a partition's leader moves
 * during a send, a consumer cannot take its inputs in time order, and idle connections run timers
 * for nothing. npm's postinstall and stack/bootstrap.mjs install them; `npm install
 * --ignore-scripts` would not.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

export interface KafkajsFix {
  /** The diff, in stack/kafkajs-patch/. */
  readonly patch: string;
  /** Carried by the fixed code of every file the fix changes. */
  readonly mark: string;
  /** Each file the fix changes (its path in the package) → its sha256 as published. */
  readonly published: Readonly<Record<string, string>>;
}

/** stack/kafkajs-patch/fixes.json. */
export const KAFKAJS_FIXES: { readonly package: string; readonly version: string; readonly fixes: readonly KafkajsFix[] } = JSON.parse(
  readFileSync(new URL('../stack/kafkajs-patch/fixes.json', import.meta.url), 'utf8'),
);

/** The installed text of a kafkajs file (`path` in the package), as this process loads it. */
export function installedKafkajsFile(path: string): string {
  return readFileSync(createRequire(import.meta.url).resolve(`kafkajs/${path}`), 'utf8');
}

/** The fixes missing from the kafkajs this process loads: a file they change lacks their mark. */
export function missingKafkajsFixes(): KafkajsFix[] {
  return KAFKAJS_FIXES.fixes.filter((fix) => Object.keys(fix.published).some((path) => !installedKafkajsFile(path).includes(fix.mark)));
}

export function assertKafkajsPatched(): void {
  const missing = missingKafkajsFixes();
  if (missing.length > 0)
    throw new Error(
      `kafkajs lacks ${missing.map((f) => `${f.mark} (stack/kafkajs-patch/${f.patch})`).join(', ')}: run \`node stack/kafkajs-patch/apply.mjs\` or \`npm ci\``,
    );
}
