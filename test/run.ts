import { spawn } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { ROOT } from '../stack/paths.ts';
import { stackUp } from '../stack/index.ts';

/**
 * `npm test`: brings the local stack up (installing what is missing), then runs every
 * `test/**\/*.test.ts` with node's test runner. Arguments filter the files by substring:
 * `npm test -- topology merge`.
 */
function findTests(dir: string): string[] {
  return readdirSync(dir).flatMap((entry) => {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) return entry === 'node_modules' ? [] : findTests(path);
    return entry.endsWith('.test.ts') ? [path] : [];
  });
}

async function main(): Promise<number> {
  const filters = process.argv.slice(2);
  const files = findTests(join(ROOT, 'test'))
    .map((file) => relative(ROOT, file))
    .filter((file) => filters.length === 0 || filters.some((f) => file.includes(f)))
    .sort();
  if (files.length === 0) {
    console.error(`no test files match ${filters.join(' ')}`);
    return 1;
  }
  await stackUp();
  const concurrency = process.env.PUSH_TEST_CONCURRENCY || '1';
  console.log(`[test] running ${files.length} test files (concurrency ${concurrency})`);
  const child = spawn(process.execPath, ['--import', 'tsx', '--test', `--test-concurrency=${concurrency}`, '--test-reporter=spec', ...files], {
    cwd: ROOT,
    stdio: 'inherit',
    env: { ...process.env, PUSH_LOG_LEVEL: process.env.PUSH_LOG_LEVEL ?? 'warn' },
  });
  return new Promise((resolve) => child.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0))));
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
