import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/**
 * Layers (docs/design.md, "Layers"): each folder lists the project folders it must not import.
 * Lower layers never reach up: common ← topology ← processors ← sinks ← receipts ← pipeline ← cli,
 * with migrations and stack beside common, the HTTP entry (entry/) above pipeline, the vendor emulators (on processors' and sinks' types)
 * beside the pipeline, and demo ← bench ← chaos above both. Nothing but cli/ itself and the tests
 * (which drive the commands they test) imports cli/.
 */
const FORBIDDEN = {
  common: ['topology', 'processors', 'sinks', 'receipts', 'pipeline', 'migrations', 'stack', 'emulators', 'demo', 'bench', 'chaos', 'test', 'entry'],
  topology: ['processors', 'sinks', 'receipts', 'pipeline', 'migrations', 'stack', 'emulators', 'demo', 'bench', 'chaos', 'test', 'entry'],
  processors: ['sinks', 'receipts', 'pipeline', 'migrations', 'stack', 'emulators', 'demo', 'bench', 'chaos', 'test', 'entry'],
  sinks: ['receipts', 'pipeline', 'migrations', 'stack', 'emulators', 'demo', 'bench', 'chaos', 'test', 'entry'],
  receipts: ['pipeline', 'migrations', 'stack', 'emulators', 'demo', 'bench', 'chaos', 'test', 'entry'],
  migrations: ['topology', 'processors', 'sinks', 'receipts', 'pipeline', 'stack', 'emulators', 'demo', 'bench', 'chaos', 'test', 'entry'],
  stack: ['topology', 'processors', 'sinks', 'receipts', 'pipeline', 'migrations', 'emulators', 'demo', 'bench', 'chaos', 'test', 'entry'],
  pipeline: ['emulators', 'demo', 'bench', 'chaos', 'test', 'entry'],
  emulators: ['topology', 'receipts', 'pipeline', 'migrations', 'stack', 'demo', 'bench', 'chaos', 'test', 'entry'],
  // The HTTP entry (`pushctl entry`): beside cli/, above the pipeline whose topics and serdes it produces with.
  entry: ['emulators', 'demo', 'bench', 'chaos', 'test'],
  demo: ['bench', 'chaos'],
  bench: ['chaos'],
};

/** Packages a processor must not use: processors are pure logic on records and stores. */
const PROCESSOR_PACKAGES = { paths: ['kafkajs', '@kafkajs/confluent-schema-registry', 'mysql2', '@clickhouse/client'], patterns: ['kafkajs/*'] };

/**
 * What the layers above the runtime build on: its processor API, store interfaces, serdes, metrics
 * hooks, and the partitioner a producer of its inputs keys with. The rest of topology/ (the task
 * loop, in-memory stores, transactions) is the runtime's own; only pipeline/, which runs it,
 * reaches further.
 */
const TOPOLOGY_API = ['api', 'stores', 'serdes', 'registry-serde', 'metrics', 'partitioner'];
const topologyInternals = (layer) => ({
  regex: `^(\\.\\./)+topology/(?!(${TOPOLOGY_API.join('|')})\\.ts$)`,
  message: `${layer}/ imports from topology/ only its API: ${TOPOLOGY_API.map((f) => `${f}.ts`).join(', ')} (layers: docs/design.md)`,
});

/** A relative import specifier that climbs out of the file's folder into one of `folders`. */
const into = (folders, layer) => ({
  regex: `^(\\.\\./)+(${folders.join('|')})(/|$)`,
  message: `${layer}/ must not import ${folders.join(', ')}/ (layers: docs/design.md)`,
});

const layerRule = (layer, forbidden, packages = { paths: [], patterns: [] }) => [
  'error',
  {
    paths: packages.paths,
    patterns: [
      ...packages.patterns.map((group) => ({ group: [group] })),
      ...(forbidden.length > 0 ? [into(forbidden, layer)] : []),
      into(['cli'], layer),
      ...(['processors', 'sinks', 'receipts'].includes(layer) ? [topologyInternals(layer)] : []),
    ],
  },
];

/**
 * Processors keep state in their instances and stores: a module-level `let` or `var` would be shared
 * by every task of the process. (Module-level constants, and caches of pure functions such as the
 * time-zone formatters, stay allowed: no answer depends on which task asked.)
 */
const PROCESSOR_STATE = [
  'error',
  {
    selector: ":matches(Program, Program > ExportNamedDeclaration) > VariableDeclaration[kind!='const']",
    message: 'processors/ keeps no module-level mutable state: every task of the process would share it (keep it in the processor or a store)',
  },
];

/**
 * The runtime tells its failures apart by class (`instanceof TaskFailedError`, `CommitFailedError`,
 * `TaskFencedError`), never by comparing an error's `code` to a string: a renamed code would
 * silently change what is retried.
 */
/** `<side>` of an expression is `something.code`. */
const codeOf = (side) => `[${side}.type='MemberExpression'][${side}.property.name='code']`;
const RUNTIME_FAILURES = [
  'error',
  {
    selector: `BinaryExpression[operator=/^[!=]==?$/]:matches(${codeOf('left')}[right.type='Literal'], ${codeOf('right')}[left.type='Literal'])`,
    message: "topology/ tells failures apart by class (instanceof), not by comparing an error's code to a string",
  },
  {
    selector: `SwitchStatement${codeOf('discriminant')}`,
    message: "topology/ tells failures apart by class (instanceof), not by switching on an error's code",
  },
];

const SYNTAX_RULES = { processors: PROCESSOR_STATE, topology: RUNTIME_FAILURES };

const layerConfigs = Object.entries(FORBIDDEN).map(([layer, forbidden]) => ({
  files: [`${layer}/**/*.ts`],
  rules: {
    'no-restricted-imports': layerRule(layer, forbidden, layer === 'processors' ? PROCESSOR_PACKAGES : undefined),
    ...(SYNTAX_RULES[layer] ? { 'no-restricted-syntax': SYNTAX_RULES[layer] } : {}),
  },
}));

export default tseslint.config(
  { ignores: ['node_modules/', '.stack/', 'dist/', 'bench/results/'] },
  { files: ['**/*.mjs'], languageOptions: { globals: { console: 'readonly', process: 'readonly' } } },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-console': 'off',
    },
  },
  {
    // Type-aware rules: every .ts file is linted with the types of the project in tsconfig.json,
    // so a folder of .ts files must be listed in its "include" (a file outside it fails to parse here).
    files: ['**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      // A promise nobody awaits loses its rejection (an unhandled rejection ends the process): await it,
      // .catch it, or mark a deliberate fire-and-forget with `void` (its errors handled inside).
      // node:test's test()/describe() return promises the runner itself awaits (top-level calls need not be
      // awaited). The exemption goes by name, so it covers a subtest's t.test() too: await subtests anyway,
      // since a parent that finishes first cancels them.
      '@typescript-eslint/no-floating-promises': [
        'error',
        { ignoreVoid: true, allowForKnownSafeCalls: [{ from: 'package', package: 'node:test', name: ['test', 'it', 'describe', 'suite'] }] },
      ],
      // An async function where a void callback is expected (an EventEmitter listener, setTimeout,
      // forEach) loses its rejection the same way. Async callbacks passed as JSX-style attributes do
      // not occur here, so checksVoidReturn stays on for arguments and off only for attributes.
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: { attributes: false } }],
    },
  },
  ...layerConfigs,
  // The kafkajs fix is a CommonJS file installed into kafkajs itself (stack/kafkajs-patch/apply.mjs).
  {
    files: ['stack/kafkajs-patch/*.cjs'],
    languageOptions: { sourceType: 'commonjs', globals: { require: 'readonly', module: 'writable' } },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
);
