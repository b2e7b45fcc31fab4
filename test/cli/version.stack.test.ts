/** `pushctl --version` prints the version of package.json. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { pushctl } from './pushctl-process.ts';

test('pushctl --version prints the package version; --help mentions it', async () => {
  const { version } = JSON.parse(readFileSync('package.json', 'utf8')) as { version: string };
  const result = await pushctl(['--version']);
  assert.equal(result.code, 0, result.stderr);
  assert.equal(result.stdout, `pushctl ${version}\n`);
  assert.match((await pushctl(['--help'])).stdout, /pushctl --version/);
});
