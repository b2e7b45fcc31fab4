import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import ts from 'typescript';
import { ROOT } from '../stack/paths.ts';

/**
 * Which test files need the local stack (Kafka, registry, MariaDB, ClickHouse) and which are unit
 * tests (TopologyTestDriver, pure logic, emulators, static checks), decided from the code rather
 * than a list, so a new file lands in the right set by itself.
 *
 * A file needs the stack when a module it runs reaches one of the stack gateways below: its
 * imports (not `import type`, which is erased), theirs, and the scripts it starts — a `.ts` path in
 * a string, such as `'cli/pushctl.ts'` or `new URL('../../bench/run.ts', import.meta.url)`, counts
 * as an import of that script. Every other file is a unit test.
 *
 * A file's name says which set the analysis puts it in, so a reader knows without running it: a
 * test on the stack is named `*.stack.test.ts`, a unit test any other `*.test.ts`. `misnamed` lists
 * the files whose name and analysis disagree; test/run.ts refuses to run (and `--list` fails) while
 * any does, and test/static/test-sets.test.ts fails the same way. A test whose imports start or stop
 * reaching the stack is renamed with them.
 *
 * test/run.ts runs the unit tests under test/support/no-stack.mjs: in every node process of that
 * run (the test files and whatever they spawn) loading a gateway throws, and the endpoints point at
 * a closed port. An integration test that this analysis misses therefore fails in `npm run test:unit`
 * (and in `npm test`, which runs the unit set the same way) instead of passing unnoticed; a file
 * counts as needing the stack only if it reaches a gateway, with the import chain shown by
 * `npx tsx test/run.ts --list`.
 */
export const STACK_GATEWAYS: readonly string[] = [
  // The endpoints integration tests connect to (and the names they create there).
  'test/support/stack.ts',
  // stackUp / stackDown: starting and stopping the local stack (used by the demo's environment, pushctl stack).
  'stack/index.ts',
];

/** A closed port (tcpmux, never listened on here): every endpoint of a unit run points at it. */
const NOWHERE = '127.0.0.1:1';

/**
 * The environment of a unit-test run (test/run.ts): every node process started in it preloads
 * test/support/no-stack.mjs, which refuses to load a stack gateway, and no endpoint answers.
 */
export function unitEnv(): Record<string, string> {
  const hook = pathToFileURL(join(ROOT, 'test', 'support', 'no-stack.mjs')).href;
  return {
    NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --import=${hook}`.trim(),
    PUSH_TEST_NO_STACK: JSON.stringify(STACK_GATEWAYS.map((g) => pathToFileURL(join(ROOT, g)).href)),
    PUSH_KAFKA_BROKERS: NOWHERE,
    PUSH_SCHEMA_REGISTRY_URL: `http://${NOWHERE}/apis/ccompat/v7`,
    PUSH_MYSQL_URL: `mysql://root@${NOWHERE}/offline_push`,
    PUSH_CLICKHOUSE_URL: `http://${NOWHERE}`,
  };
}

/**
 * Unit tests that `npm run test:unit` leaves out unless a filter names them, so that it stays
 * under a minute; `npm test` runs them with the other unit tests (still without the stack).
 */
export const SLOW_UNIT_TESTS: Readonly<Record<string, string>> = {
  'test/static/checks.test.ts': 'tsc, eslint and prettier over the whole tree (npm run typecheck, lint, format:check)',
  'test/sinks/vendors/connection-faults.test.ts': 'connection-fault storms of 1500 pushes per vendor, about a minute on its own',
};

/**
 * Tests on the stack that `npm test` runs one at a time, after the others (which run two at a time):
 * each starts infrastructure of its own or loads every core for minutes.
 */
export const EXCLUSIVE_STACK_TESTS: Readonly<Record<string, string>> = {
  'test/topology/broker-restart.stack.test.ts': 'starts a broker of its own (a second JVM) and restarts it under three workers',
  'test/stack/secured-stack.stack.test.ts': 'starts a secured stack of its own (a broker, a registry, a MariaDB and a ClickHouse) and runs the pipeline on it',
  'test/chaos/chaos.stack.test.ts': 'kills workers and cuts MySQL and ClickHouse off on a timetable, with vendor storms',
  'test/bench/run.stack.test.ts': 'the quick benchmark: ceilings, load steps and latency phases that load both cores',
};

/** Every `*.test.ts` under test/, relative to the repository root, sorted. */
export function testFiles(dir = join(ROOT, 'test')): string[] {
  const walk = (d: string): string[] =>
    readdirSync(d).flatMap((entry) => {
      const path = join(d, entry);
      if (statSync(path).isDirectory()) return entry === 'node_modules' ? [] : walk(path);
      return entry.endsWith('.test.ts') ? [path] : [];
    });
  return walk(dir)
    .map((file) => relative(ROOT, file))
    .sort();
}

const CODE = /\.(ts|mts|mjs|js|cjs)$/;

/**
 * Modules that name test and stack files in strings without running them (this classifier and its
 * test): their strings are not followed. Their imports still are.
 */
const NAMES_ONLY: readonly string[] = ['test/sets.ts', 'test/static/test-sets.test.ts'];

/** The repository files a module runs: its runtime imports and the scripts named in its strings (paths relative to ROOT). */
function edges(root: string, file: string): string[] {
  const abs = join(root, file);
  const source = ts.createSourceFile(abs, readFileSync(abs, 'utf8'), ts.ScriptTarget.ES2022, true);
  const out = new Set<string>();
  const imported = (specifier: string) => {
    if (!specifier.startsWith('.')) return; // a package: it does not import this repository
    const target = resolve(dirname(abs), specifier);
    if (!existsSync(target)) throw new Error(`${file}: cannot resolve import '${specifier}'`);
    out.add(relative(root, target));
  };
  const started = (text: string) => {
    if (!CODE.test(text) || text.includes('\n') || NAMES_ONLY.includes(file)) return;
    for (const base of [dirname(abs), root]) {
      const target = resolve(base, text);
      if (target.startsWith(root) && existsSync(target) && statSync(target).isFile()) {
        out.add(relative(root, target));
        return;
      }
    }
  };
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node)) {
      if (!node.importClause?.isTypeOnly && ts.isStringLiteral(node.moduleSpecifier)) imported(node.moduleSpecifier.text);
      return;
    }
    if (ts.isExportDeclaration(node)) {
      if (!node.isTypeOnly && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) imported(node.moduleSpecifier.text);
      return;
    }
    if (ts.isImportTypeNode(node)) return; // `import('x').T` in a type: erased
    if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      const [arg] = node.arguments;
      if (arg && ts.isStringLiteralLike(arg)) imported(arg.text);
    } else if (ts.isStringLiteralLike(node)) {
      started(node.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  out.delete(file);
  return [...out];
}

export interface Placement {
  readonly file: string;
  /** Null for a unit test; else the chain of modules from the file to the gateway it reaches. */
  readonly stackVia: readonly string[] | null;
}

/** How the name of a test on the stack ends; a unit test's name ends in `.test.ts` without it. */
export const STACK_TEST_SUFFIX = '.stack.test.ts';

/** Whether `file`'s name says it is a test on the stack. */
export function namedForStack(file: string): boolean {
  return file.endsWith(STACK_TEST_SUFFIX);
}

/**
 * The placements whose file name disagrees with the import analysis, each as a line saying which
 * way and what to rename it to: a file that reaches the stack but is not named `*.stack.test.ts`
 * (with the chain that reaches it), and a `*.stack.test.ts` that reaches no gateway.
 */
export function misnamed(placements: readonly Placement[]): string[] {
  return placements.flatMap((p) => {
    const named = namedForStack(p.file);
    if (p.stackVia && !named) {
      const rename = p.file.replace(/\.test\.ts$/, STACK_TEST_SUFFIX);
      return [`${p.file} needs the stack (${p.stackVia.slice(1).join(' → ')}) but is not named *${STACK_TEST_SUFFIX}: rename it ${rename}`];
    }
    if (!p.stackVia && named)
      return [`${p.file} reaches no stack gateway but is named *${STACK_TEST_SUFFIX}: rename it ${p.file.slice(0, -STACK_TEST_SUFFIX.length)}.test.ts`];
    return [];
  });
}

/** Where each test file (relative to `root`) belongs; breadth-first, so the chain shown is a shortest one. */
export function classify(files: readonly string[], { root = ROOT, gateways = STACK_GATEWAYS } = {}): Placement[] {
  const cache = new Map<string, string[]>();
  const edgesOf = (file: string) => {
    let e = cache.get(file);
    if (!e) cache.set(file, (e = CODE.test(file) ? edges(root, file) : []));
    return e;
  };
  return files.map((file) => {
    const parent = new Map<string, string | null>([[file, null]]);
    const queue = [file];
    for (let i = 0; i < queue.length; i++) {
      const current = queue[i]!;
      if (gateways.includes(current)) {
        const chain: string[] = [];
        for (let at: string | null | undefined = current; at; at = parent.get(at)) chain.unshift(at);
        return { file, stackVia: chain };
      }
      for (const next of edgesOf(current)) {
        if (!parent.has(next)) {
          parent.set(next, current);
          queue.push(next);
        }
      }
    }
    return { file, stackVia: null };
  });
}
