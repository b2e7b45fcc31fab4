/**
 * `npx pushctl` works from a checkout: cli/pushctl.ts is committed executable with a shebang that
 * loads tsx (package.json's bin points at it), and running it leaves the tree as it was.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';

const exec = promisify(execFile);

test('cli/pushctl.ts is committed executable with a shebang, and npx pushctl runs it leaving the tree clean', async () => {
  const { stdout: staged } = await exec('git', ['ls-files', '-s', 'cli/pushctl.ts']);
  assert.match(staged, /^100755 /, 'the index has it executable');
  assert.equal(readFileSync('cli/pushctl.ts', 'utf8').split('\n')[0], '#!/usr/bin/env -S node --import tsx');

  const status = async () => (await exec('git', ['status', '--porcelain', '--', 'cli', 'package.json', 'package-lock.json'])).stdout;
  const before = await status();
  const { version } = JSON.parse(readFileSync('package.json', 'utf8')) as { version: string };
  const { stdout } = await exec('npx', ['--no-install', 'pushctl', '--version'], { timeout: 60_000 });
  assert.equal(stdout, `pushctl ${version}\n`);
  assert.equal(await status(), before, 'npx pushctl changed nothing in the tree');
});
