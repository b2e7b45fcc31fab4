import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ESLint } from 'eslint';
import tseslint from 'typescript-eslint';

/**
 * eslint.config.js refuses module-level mutable state in processors/: a `let` or `var` at the top of
 * a module is shared by every task of the process (as the decisions' last-verdict cache once was).
 * checks.test.ts lints the whole tree; this proves the rule would catch a planted one and lets
 * constants, function-local state and other folders be.
 */
const CASES: ReadonlyArray<{ file: string; code: string; refused: boolean }> = [
  { file: 'processors/model/probe.ts', code: 'let last: unknown;\nexport function see(v: unknown): unknown {\n  const before = last;\n  last = v;\n  return before;\n}\n', refused: true },
  { file: 'processors/policy/probe.ts', code: 'export let count = 0;\n', refused: true },
  { file: 'processors/merge/probe.ts', code: 'var seen = 0;\nexport const next = (): number => ++seen;\n', refused: true },
  { file: 'processors/model/probe.ts', code: "export const KINDS = new Set(['a', 'b']);\n", refused: false },
  { file: 'processors/model/probe.ts', code: 'export function sum(xs: number[]): number {\n  let total = 0;\n  for (const x of xs) total += x;\n  return total;\n}\n', refused: false },
  { file: 'sinks/metrics/probe.ts', code: 'let registry: unknown;\nexport const get = (): unknown => registry;\n', refused: false },
];

test('module-level let or var in processors/ is a lint error; constants and local state are not', async () => {
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
