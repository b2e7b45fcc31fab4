import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ESLint } from 'eslint';

/**
 * eslint.config.js lints with types: a promise nobody awaits or catches, and an async
 * function handed where a void callback is expected, are lint errors, so a rejection cannot go
 * unhandled unnoticed. A promise marked `void` (a deliberate fire-and-forget) and node:test's
 * test() and describe() (the runner awaits them) are allowed. checks.test.ts runs the linter over
 * the whole tree; this proves the rules it runs would catch a floating promise.
 */
const CASES: ReadonlyArray<{ name: string; code: string; rules: string[] }> = [
  {
    name: 'a call whose promise floats',
    code: 'async function write(): Promise<void> {}\nexport function run(): void {\n  write();\n}\n',
    rules: ['@typescript-eslint/no-floating-promises'],
  },
  {
    name: 'a promise chain without a rejection handler',
    code: 'export function run(p: Promise<number>): void {\n  p.then((n) => n + 1);\n}\n',
    rules: ['@typescript-eslint/no-floating-promises'],
  },
  {
    name: 'an async listener where a void one is expected',
    code: "import { EventEmitter } from 'node:events';\nexport function listen(e: EventEmitter): void {\n  e.on('x', async () => {});\n}\n",
    rules: ['@typescript-eslint/no-misused-promises'],
  },
  {
    name: 'an awaited call',
    code: 'async function write(): Promise<void> {}\nexport async function run(): Promise<void> {\n  await write();\n}\n',
    rules: [],
  },
  {
    name: 'a caught call',
    code: 'async function write(): Promise<void> {}\nexport function run(): void {\n  write().catch((error: unknown) => console.error(error));\n}\n',
    rules: [],
  },
  {
    name: 'a fire-and-forget marked void',
    code: 'async function write(): Promise<void> {}\nexport function run(): void {\n  void write();\n}\n',
    rules: [],
  },
];

/**
 * The probes are not files on disk, so tsconfig.json's project cannot hold them: they are linted
 * under lint-probe/ (outside its include) in the parser's default project, with the same rules.
 */
const PROBE_DIR = 'lint-probe';
const linter = () =>
  new ESLint({
    overrideConfig: {
      files: [`${PROBE_DIR}/**/*.ts`],
      languageOptions: { parserOptions: { projectService: { allowDefaultProject: [`${PROBE_DIR}/*.ts`], defaultProject: 'tsconfig.json' } } },
    },
  });

test('floating and misused promises are lint errors; awaited, caught and void-marked ones are not', async () => {
  const eslint = linter();
  const found = await Promise.all(
    CASES.map(async (c) => {
      const [result] = await eslint.lintText(c.code, { filePath: `${PROBE_DIR}/probe.ts` });
      return { name: c.name, rules: (result?.messages ?? []).map((m) => m.ruleId ?? m.message) };
    }),
  );
  assert.deepEqual(
    found,
    CASES.map((c) => ({ name: c.name, rules: c.rules })),
  );
});

test("node:test's top-level test() and describe() need not be awaited", async () => {
  const code = "import { describe, test } from 'node:test';\ntest('one', () => {});\ndescribe('two', () => {\n  test('three', () => {});\n});\n";
  const [result] = await linter().lintText(code, { filePath: `${PROBE_DIR}/probe.test.ts` });
  assert.deepEqual(result?.messages ?? [], []);
});
