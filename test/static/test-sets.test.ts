import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ROOT } from '../../stack/paths.ts';
import { classify, EXCLUSIVE_STACK_TESTS, misnamed, SLOW_UNIT_TESTS, STACK_GATEWAYS, testFiles, unitEnv, type Placement } from '../sets.ts';

/**
 * test/sets.ts places every test file with the unit tests (`npm run test:unit`, no stack) or with
 * the tests on the local stack; a unit run refuses the stack at run time (test/support/no-stack.mjs).
 * A file's name says its set (`*.stack.test.ts` on the stack), and agrees with the analysis.
 */

test('a file needs the stack when what it imports, re-exports, imports dynamically or starts reaches a gateway', () => {
  const root = mkdtempSync(join(tmpdir(), 'test-sets-'));
  const files: Record<string, string> = {
    'gate.ts': 'export const endpoint = 1;\nexport type T = number;\n',
    'pure.ts': 'export const two = 2;\n',
    'helper.ts': "export { endpoint } from './gate.ts';\n",
    'cli.ts': "import { endpoint } from './gate.ts';\nconsole.log(endpoint);\n",
    'sub/worker.ts': "import '../gate.ts';\n",
    'sub/imports.test.ts': "import { endpoint } from '../helper.ts';\n",
    'sub/types-only.test.ts': "import type { T } from '../gate.ts';\nlet x: import('../gate.ts').T = 1;\nimport { two } from '../pure.ts';\n",
    'sub/dynamic.test.ts': "await import('../gate.ts');\n",
    'sub/spawns-cli.test.ts': "spawn(process.execPath, ['--import', 'tsx', 'cli.ts']);\n",
    'sub/spawns-worker.test.ts': "const script = new URL('./worker.ts', import.meta.url);\n",
    'sub/pure.test.ts': "import { two } from '../pure.ts';\nconst name = 'not-a-file.ts';\n",
  };
  try {
    mkdirSync(join(root, 'sub'));
    for (const [name, text] of Object.entries(files)) writeFileSync(join(root, name), text);
    const tests = Object.keys(files).filter((f) => f.endsWith('.test.ts'));
    const placed = Object.fromEntries(classify(tests, { root, gateways: ['gate.ts'] }).map((p) => [p.file, p.stackVia?.join(' → ') ?? 'unit']));
    assert.deepEqual(placed, {
      'sub/imports.test.ts': 'sub/imports.test.ts → helper.ts → gate.ts',
      'sub/types-only.test.ts': 'unit',
      'sub/dynamic.test.ts': 'sub/dynamic.test.ts → gate.ts',
      'sub/spawns-cli.test.ts': 'sub/spawns-cli.test.ts → cli.ts → gate.ts',
      'sub/spawns-worker.test.ts': 'sub/spawns-worker.test.ts → sub/worker.ts → gate.ts',
      'sub/pure.test.ts': 'unit',
    });
    writeFileSync(join(root, 'sub/broken.test.ts'), "import '../missing.ts';\n");
    assert.throws(() => classify(['sub/broken.test.ts'], { root, gateways: ['gate.ts'] }), /cannot resolve import '\.\.\/missing\.ts'/);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('a name that disagrees with the analysis is reported: a test on the stack not named *.stack.test.ts, a *.stack.test.ts that reaches no gateway', () => {
  const gate = 'test/support/stack.ts';
  const planted: Placement[] = [
    { file: 'test/topology/builder.test.ts', stackVia: null },
    { file: 'test/topology/eos.stack.test.ts', stackVia: ['test/topology/eos.stack.test.ts', 'test/topology/kafka-helpers.ts', gate] },
    { file: 'test/receipts/join.test.ts', stackVia: ['test/receipts/join.test.ts', 'test/support/test-mysql.ts', gate] },
    { file: 'test/processors/merge/merge.stack.test.ts', stackVia: null },
  ];
  assert.deepEqual(misnamed(planted), [
    'test/receipts/join.test.ts needs the stack (test/support/test-mysql.ts → test/support/stack.ts) but is not named *.stack.test.ts: rename it test/receipts/join.stack.test.ts',
    'test/processors/merge/merge.stack.test.ts reaches no stack gateway but is named *.stack.test.ts: rename it test/processors/merge/merge.test.ts',
  ]);
  assert.deepEqual(misnamed(planted.slice(0, 2)), [], 'names that agree are not reported');

  // The same through the analysis, on files planted in a tree of their own.
  const root = mkdtempSync(join(tmpdir(), 'test-names-'));
  const files: Record<string, string> = {
    'gate.ts': 'export const endpoint = 1;\n',
    'pure.ts': 'export const two = 2;\n',
    'sub/on-stack.stack.test.ts': "import '../gate.ts';\n",
    'sub/unit.test.ts': "import '../pure.ts';\n",
    'sub/hidden.test.ts': "import '../gate.ts';\n",
    'sub/idle.stack.test.ts': "import '../pure.ts';\n",
  };
  try {
    mkdirSync(join(root, 'sub'));
    for (const [name, text] of Object.entries(files)) writeFileSync(join(root, name), text);
    const tests = Object.keys(files).filter((f) => f.endsWith('.test.ts'));
    assert.deepEqual(misnamed(classify(tests, { root, gateways: ['gate.ts'] })), [
      'sub/hidden.test.ts needs the stack (gate.ts) but is not named *.stack.test.ts: rename it sub/hidden.stack.test.ts',
      'sub/idle.stack.test.ts reaches no stack gateway but is named *.stack.test.ts: rename it sub/idle.test.ts',
    ]);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test("the repository's tests: TopologyTestDriver and pure tests are unit tests, the rest reach the stack", () => {
  const all = testFiles();
  const placements = classify(all);
  const placed = new Map(placements.map((p) => [p.file, p.stackVia]));
  assert.equal(placed.size, all.length);
  // Every file is named for its set: `*.stack.test.ts` exactly when it reaches the stack.
  assert.deepEqual(misnamed(placements), []);
  for (const unit of [
    'test/topology/test-driver.test.ts',
    'test/processors/merge/merge.test.ts',
    'test/sinks/vendors/apns.test.ts',
    'test/static/test-sets.test.ts',
  ]) {
    assert.equal(placed.get(unit), null, `${unit} is a unit test`);
  }
  for (const stack of [
    'test/topology/eos.stack.test.ts',
    'test/e2e/receipt-loop.stack.test.ts',
    'test/bench/run.stack.test.ts',
    'test/e2e/end-to-end.stack.test.ts',
  ]) {
    assert.ok(placed.get(stack), `${stack} needs the stack`);
  }
  // test/bench/run.stack.test.ts imports only types from bench/; it needs the stack because it starts bench/run.ts.
  assert.equal(placed.get('test/bench/run.stack.test.ts')?.[1], 'bench/run.ts');
  // The slow unit tests that test:unit leaves out exist and are unit tests (the list hides no integration test).
  for (const slow of Object.keys(SLOW_UNIT_TESTS)) assert.equal(placed.get(slow), null, `${slow} is a unit test`);
  // The tests run one at a time exist and need the stack (a renamed file would otherwise run two at a time unnoticed).
  for (const alone of Object.keys(EXCLUSIVE_STACK_TESTS)) assert.ok(placed.get(alone), `${alone} is a test on the stack`);
});

test('in a unit run, loading a stack gateway fails in every node process; the rest loads', () => {
  const load = (file: string) =>
    spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', `await import(${JSON.stringify(pathToFileURL(join(ROOT, file)).href)});`], {
      cwd: ROOT,
      env: { ...process.env, ...unitEnv() },
      encoding: 'utf8',
      timeout: 60_000,
    });
  for (const gateway of STACK_GATEWAYS) {
    const r = load(gateway);
    assert.notEqual(r.status, 0, `${gateway} loaded in a unit run`);
    assert.match(r.stderr, /a unit test loaded .*a module of the local stack/);
  }
  const r = load(join('stack', 'paths.ts'));
  assert.equal(r.status, 0, r.stderr);
  assert.equal(unitEnv().PUSH_KAFKA_BROKERS, '127.0.0.1:1');
});
