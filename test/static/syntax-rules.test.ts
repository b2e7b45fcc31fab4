import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ESLint } from 'eslint';
import tseslint from 'typescript-eslint';

/**
 * eslint.config.js's `no-restricted-syntax` rules per folder, shown to catch planted violations
 * (checks.test.ts lints the whole tree with them):
 * - processors/ keeps no module-level mutable state: a `let` or `var` at the top of a module is
 *   shared by every task of the process (as the decisions' last-verdict cache once was);
 * - topology/ tells its failures apart by class, never by comparing an error's code to a string.
 */
const CASES: ReadonlyArray<{ file: string; code: string; refused: boolean }> = [
  {
    file: 'processors/model/probe.ts',
    code: 'let last: unknown;\nexport function see(v: unknown): unknown {\n  const before = last;\n  last = v;\n  return before;\n}\n',
    refused: true,
  },
  { file: 'processors/policy/probe.ts', code: 'export let count = 0;\n', refused: true },
  { file: 'processors/merge/probe.ts', code: 'var seen = 0;\nexport const next = (): number => ++seen;\n', refused: true },
  { file: 'processors/model/probe.ts', code: "export const KINDS = new Set(['a', 'b']);\n", refused: false },
  {
    file: 'processors/model/probe.ts',
    code: 'export function sum(xs: number[]): number {\n  let total = 0;\n  for (const x of xs) total += x;\n  return total;\n}\n',
    refused: false,
  },
  { file: 'sinks/metrics/probe.ts', code: 'let registry: unknown;\nexport const get = (): unknown => registry;\n', refused: false },
  { file: 'topology/probe.ts', code: "export const fenced = (e: { code: string }): boolean => e.code === 'TASK_FENCED';\n", refused: true },
  { file: 'topology/probe.ts', code: "export const retry = (e: { code: string }): boolean => 'COMMIT_FAILED' !== e.code;\n", refused: true },
  {
    file: 'topology/probe.ts',
    code: "export function retry(e: { code: string }): boolean {\n  switch (e.code) {\n    case 'COMMIT_FAILED':\n      return true;\n  }\n  return false;\n}\n",
    refused: true,
  },
  { file: 'topology/probe.ts', code: 'class Failed extends Error {}\nexport const failed = (e: unknown): boolean => e instanceof Failed;\n', refused: false },
];

test('module-level let/var in processors/ and error-code comparisons in topology/ are lint errors; the allowed forms are not', async () => {
  const eslint = new ESLint({ overrideConfig: tseslint.configs.disableTypeChecked });
  const verdicts = await Promise.all(
    CASES.map(async (c) => {
      const [result] = await eslint.lintText(c.code, { filePath: c.file });
      const refused = (result?.messages ?? []).some((m) => m.ruleId === 'no-restricted-syntax');
      return `${c.file}: ${JSON.stringify(c.code.split('\n')[0])} ${refused ? 'refused' : 'allowed'}`;
    }),
  );
  assert.deepEqual(
    verdicts,
    CASES.map((c) => `${c.file}: ${JSON.stringify(c.code.split('\n')[0])} ${c.refused ? 'refused' : 'allowed'}`),
  );
});
