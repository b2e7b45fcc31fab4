import { spawn } from 'node:child_process';
import { availableParallelism, constants as osConstants } from 'node:os';
import { ROOT } from '../stack/paths.ts';
import { startCpuHog } from './support/cpu-hog.ts';
import { classify, EXCLUSIVE_STACK_TESTS, misnamed, SLOW_UNIT_TESTS, STACK_TEST_SUFFIX, testFiles, unitEnv, type Placement } from './sets.ts';

/**
 * `npm test`: runs every `test/**\/*.test.ts` with node's test runner, the unit tests first, then,
 * after bringing the local stack up (installing what is missing), the tests that need it.
 * test/sets.ts decides which is which. Arguments filter the files by substring:
 * `npm test -- topology merge`.
 *
 * Unit tests run as many at a time as the machine has cores; tests on the stack two at a time
 * (they share one broker, MariaDB and ClickHouse, and each starts workers of its own), except
 * test/sets.ts's EXCLUSIVE_STACK_TESTS, which run one at a time after the others.
 * PUSH_TEST_CONCURRENCY sets both numbers (the exclusive tests stay one at a time).
 *
 * `--unit` (`npm run test:unit`): the unit tests only, without the slow ones of test/sets.ts unless
 * a filter names them; the stack is neither started nor reached.
 * `--list`: prints each file's set, and for a test that needs the stack the import chain to it.
 *
 * A test on the stack is named `*.stack.test.ts` and a unit test is not (test/sets.ts): while a
 * file's name disagrees with where the analysis puts it, `--list` names it and fails, and a run
 * refuses to start.
 *
 * `--loaded` (`npm run test:loaded`), or PUSH_TEST_CPU_HOG=1: the same run beside a busy loop on one
 * core (test/support/cpu-hog.mjs), so that a test that holds only on an idle machine fails here
 * rather than on a busy one; PUSH_TEST_CPU_HOG=stack loads the stack tests only (as .ci/run does).
 */

/** Longest a CPU hog spins (CI's limit for the whole run): it stops then even if nothing stops it. */
const HOG_MAX_MS = 90 * 60_000;

/** Which part of the run spins a core beside the tests: `--loaded` or PUSH_TEST_CPU_HOG. */
function hogMode(args: readonly string[]): 'all' | 'stack' | 'none' {
  if (args.includes('--loaded')) return 'all';
  const value = process.env.PUSH_TEST_CPU_HOG ?? '';
  if (value === '1' || value === 'all') return 'all';
  if (value === 'stack') return 'stack';
  if (value === '' || value === '0') return 'none';
  throw new Error(`PUSH_TEST_CPU_HOG=${value}: expected 1 (the whole run), stack (the stack tests only) or 0 (none)`);
}

/** Starts the busy loop, stopped when this process exits or is signalled (and by itself, see cpu-hog.mjs). */
function startHog(): void {
  const hog = startCpuHog(HOG_MAX_MS);
  console.log(`[test] CPU hog: pid ${hog.pid} spins one core until the tests end (at most ${HOG_MAX_MS / 60_000} min)`);
  process.once('exit', hog.stop);
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const)
    process.once(signal, () => {
      hog.stop();
      process.exit(128 + osConstants.signals[signal]);
    });
}

function runFiles(label: string, files: readonly string[], concurrency: string, env: NodeJS.ProcessEnv): Promise<number> {
  console.log(`[test] ${label}: ${files.length} test files (concurrency ${concurrency})`);
  const child = spawn(process.execPath, ['--import', 'tsx', '--test', `--test-concurrency=${concurrency}`, '--test-reporter=spec', ...files], {
    cwd: ROOT,
    stdio: 'inherit',
    env: { ...process.env, PUSH_LOG_LEVEL: process.env.PUSH_LOG_LEVEL ?? 'warn', ...env },
  });
  return new Promise((resolve) => child.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0))));
}

function list(placements: readonly Placement[]): void {
  for (const p of placements) {
    if (p.stackVia)
      console.log(
        `stack  ${p.file}  (${p.stackVia.slice(1).join(' → ')})${EXCLUSIVE_STACK_TESTS[p.file] ? `  (alone: ${EXCLUSIVE_STACK_TESTS[p.file]})` : ''}`,
      );
    else console.log(`unit   ${p.file}${SLOW_UNIT_TESTS[p.file] ? `  (slow, not in test:unit unless named: ${SLOW_UNIT_TESTS[p.file]})` : ''}`);
  }
  const unit = placements.filter((p) => !p.stackVia).length;
  console.log(`${unit} unit, ${placements.length - unit} on the stack`);
}

async function main(): Promise<number> {
  const args = process.argv.slice(2);
  const unitOnly = args.includes('--unit');
  const filters = args.filter((a) => a !== '--unit' && a !== '--list' && a !== '--loaded');
  const hog = hogMode(args);
  const files = testFiles().filter((file) => filters.length === 0 || filters.some((f) => file.includes(f)));
  if (files.length === 0) {
    console.error(`no test files match ${filters.join(' ')}`);
    return 1;
  }
  const placements = classify(files);
  const wrong = misnamed(placements);
  if (args.includes('--list')) {
    list(placements);
    for (const line of wrong) console.error(`misnamed: ${line}`);
    return wrong.length > 0 ? 1 : 0;
  }
  if (wrong.length > 0) {
    for (const line of wrong) console.error(`misnamed: ${line}`);
    console.error(`a test on the stack is named *${STACK_TEST_SUFFIX}, a unit test is not (test/sets.ts): rename the files above`);
    return 1;
  }
  const quick = unitOnly && filters.length === 0;
  const unit = placements.filter((p) => !p.stackVia && !(quick && SLOW_UNIT_TESTS[p.file])).map((p) => p.file);
  const stack = placements.filter((p) => p.stackVia).map((p) => p.file);
  if (unitOnly && unit.length === 0) {
    console.error(`no unit test files match ${filters.join(' ')}`);
    return 1;
  }
  const concurrency = (limit: number) => process.env.PUSH_TEST_CONCURRENCY || String(Math.min(limit, availableParallelism()));
  let status = 0;
  if (hog === 'all') startHog();
  if (unit.length > 0) status = await runFiles('unit tests, without the stack', unit, concurrency(Infinity), unitEnv());
  if (!unitOnly && stack.length > 0) {
    const { stackUp } = await import('../stack/index.ts'); // loaded only here: a unit run never touches the stack code
    await stackUp();
    if (hog === 'stack') startHog();
    const shared = stack.filter((file) => !EXCLUSIVE_STACK_TESTS[file]);
    const alone = stack.filter((file) => EXCLUSIVE_STACK_TESTS[file]);
    if (shared.length > 0) status = (await runFiles('tests on the local stack', shared, concurrency(2), {})) || status;
    if (alone.length > 0) status = (await runFiles('tests on the local stack, one at a time', alone, '1', {})) || status;
  }
  return status;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
