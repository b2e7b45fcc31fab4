import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

/**
 * The whole tree type-checks under the strict tsconfig, passes the linter (incl. "processors never
 * import kafkajs") and is formatted. Each tool runs to its end: how long it takes grows with the tree
 * and with what else the machine is doing, so no deadline is set here.
 */
const run = promisify(execFile);
const check = (command: string, args: string[]) =>
  run(command, args, { maxBuffer: 16 * 1024 * 1024 }).then(
    () => '',
    (e: { stdout?: string; stderr?: string; code?: number | string; signal?: string | null }) =>
      `${e.stdout ?? ''}${e.stderr ?? ''}`.trim() || `${command} ${args.join(' ')} failed (${e.signal ?? `exit code ${e.code}`})`,
  );

test('tsc --noEmit reports no type errors', async () => {
  assert.equal(await check('npx', ['tsc', '--noEmit', '-p', '.']), '');
});

test('eslint reports no problems', async () => {
  assert.equal(await check('npx', ['eslint', '.']), '');
});

test('every source file is formatted as prettier writes it (npm run format)', async () => {
  assert.equal(await check('npx', ['prettier', '--check', '--log-level', 'warn', '.']), '');
});
