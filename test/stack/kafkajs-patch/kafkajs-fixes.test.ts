/**
 * The kafkajs fixes as one mechanism (stack/kafkajs-patch: a diff per fix, fixes.json, apply.mjs;
 * docs/operations.md, "The kafkajs fixes"). What is installed is exactly the published package with
 * the diffs applied: each diff, undone on the installed files, gives back the published files
 * (their sha256 in fixes.json), and applying them to those gives the installed files again. The
 * installer takes only the published files, tells an earlier version of a fix apart (bootstrap
 * then installs kafkajs afresh), and the runtime check names every fix that is missing. The
 * coordinator cache, which the workers' runtime turns on, is checked here on its own.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { applyKafkajsPatch, applyUnifiedDiff } from '../../../stack/kafkajs-patch/apply.mjs';
import { assertKafkajsPatched, installedKafkajsFile, KAFKAJS_FIXES, missingKafkajsFixes } from '../../../common/kafkajs-patch.ts';

const PATCHES = new URL('../../../stack/kafkajs-patch/', import.meta.url);
const patchText = (name: string) => readFileSync(new URL(name, PATCHES), 'utf8');
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
const installed = (paths: readonly string[]) => new Map(paths.map((p) => [p, installedKafkajsFile(p)]));

/** The published files of every fix, got back by undoing each diff on the installed files. */
function publishedFiles(): Map<string, string> {
  const files = new Map<string, string>();
  for (const fix of KAFKAJS_FIXES.fixes)
    for (const [path, text] of applyUnifiedDiff(patchText(fix.patch), installed(Object.keys(fix.published)), fix.patch, { reverse: true }))
      files.set(path, text);
  return files;
}

/** A kafkajs package of `version` holding `files`, in a temporary directory. */
function packageDir(files: ReadonlyMap<string, string>, version = KAFKAJS_FIXES.version): string {
  const dir = mkdtempSync(join(tmpdir(), 'kafkajs-fixes-'));
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'kafkajs', version }));
  for (const [path, text] of files) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  return dir;
}

test('every fix is installed, and the runtime check passes', () => {
  assert.deepEqual(
    missingKafkajsFixes().map((f) => f.mark),
    [],
  );
  assert.doesNotThrow(assertKafkajsPatched);
  assert.equal(KAFKAJS_FIXES.fixes.length, 5, 'producer retry, request queue, encoder, fetch order, coordinator cache');
});

test('each diff, undone on the installed files, gives back kafkajs as published', () => {
  const published = publishedFiles();
  for (const fix of KAFKAJS_FIXES.fixes)
    for (const [path, sha] of Object.entries(fix.published)) assert.equal(sha256(published.get(path)!), sha, `${fix.patch}: ${path} as published`);
});

test('the installer turns the published package into the installed one, once, and refuses anything else', () => {
  const published = publishedFiles();
  const dir = packageDir(published);
  const logged: string[] = [];
  assert.equal(
    applyKafkajsPatch((line) => logged.push(line), dir),
    true,
  );
  assert.equal(logged.length, KAFKAJS_FIXES.fixes.length, 'one line per fix installed');
  for (const path of published.keys()) assert.equal(readFileSync(join(dir, path), 'utf8'), installedKafkajsFile(path), path);
  assert.equal(
    applyKafkajsPatch(() => undefined, dir),
    false,
    'a second run finds every fix there',
  );

  // A file that is not the published one (changed by hand, another build) is not patched.
  const [path, text] = [...published].find(([p]) => p.endsWith('encoder.js'))!;
  const changed = packageDir(new Map([...published, [path, text.replace('class Encoder', 'class  Encoder')]]));
  assert.throws(
    () => applyKafkajsPatch(() => undefined, changed),
    new RegExp(`kafkajs ${path.replaceAll('/', '\\/')} is not kafkajs ${KAFKAJS_FIXES.version}'s file as published`),
  );

  // An earlier version of a fix: bootstrap installs kafkajs afresh on EARLIER_FIX.
  const fix = KAFKAJS_FIXES.fixes.find((f) => f.patch === 'encoder.patch')!;
  const earlierMark = fix.mark.replace(/ v(\d+)$/, (_, n: string) => ` v${Number(n) - 1}`);
  const earlier = packageDir(new Map([...published, [path, `// ${earlierMark}\n${text}`]]));
  assert.throws(
    () => applyKafkajsPatch(() => undefined, earlier),
    (e: Error & { code?: string }) => e.code === 'EARLIER_FIX',
  );

  assert.throws(() => applyKafkajsPatch(() => undefined, packageDir(published, '2.2.3')), /kafkajs 2\.2\.3 is installed/);
});

test('a diff applies exactly: a context line that differs names the file and the line', () => {
  const fix = KAFKAJS_FIXES.fixes.find((f) => f.patch === 'request-queue.patch')!;
  const [path] = Object.keys(fix.published);
  const published = publishedFiles().get(path!)!;
  const lines = published.split('\n');
  const at = lines.findIndex((l) => l.includes('scheduleCheckPendingRequests() {'));
  lines[at - 1] = `${lines[at - 1]} `;
  assert.throws(
    () => applyUnifiedDiff(patchText(fix.patch), new Map([[path!, lines.join('\n')]]), fix.patch),
    /request-queue\.patch: src\/network\/requestQueue\/index\.js line \d+ differs/,
  );
});

test('the coordinator cache: off by default; on, an answer is kept for its lifetime, a failure is not, and forgetting drops them all', async () => {
  const Cluster = createRequire(import.meta.url)('kafkajs/src/cluster/index.js') as {
    prototype: object;
    cacheCoordinatorLookups(ttlMs: number): void;
    forgetCoordinators(): void;
  };
  // A cluster client whose own lookup (the published method) answers from a list and counts the calls.
  const answers: Array<Error | { coordinator: { nodeId: number } }> = [];
  let lookups = 0;
  const cluster = Object.assign(Object.create(Cluster.prototype) as { findGroupCoordinatorMetadata(q: object): Promise<unknown> }, {
    lookUpGroupCoordinatorMetadata: async () => {
      lookups++;
      const next = answers.shift() ?? { coordinator: { nodeId: 1 } };
      if (next instanceof Error) throw next;
      return next;
    },
  });
  const find = (groupId = 'g') => cluster.findGroupCoordinatorMetadata({ groupId, coordinatorType: 1 });

  await find();
  await find();
  assert.equal(lookups, 2, 'off: every call looks up');

  Cluster.cacheCoordinatorLookups(60_000);
  try {
    await find();
    await find();
    assert.equal(lookups, 3, 'on: the second call is answered from the cache');
    await find('other');
    assert.equal(lookups, 4, 'per group or transactional id');
    Cluster.forgetCoordinators();
    await find();
    assert.equal(lookups, 5, 'forgotten: looked up again');

    Cluster.forgetCoordinators();
    answers.push(new Error('NOT_COORDINATOR'));
    await assert.rejects(find(), /NOT_COORDINATOR/);
    await find();
    assert.equal(lookups, 7, 'a failed lookup is not kept');

    Cluster.cacheCoordinatorLookups(1);
    await new Promise((resolve) => setTimeout(resolve, 5));
    await find();
    assert.equal(lookups, 8, 'an answer older than the lifetime is looked up again');
  } finally {
    Cluster.cacheCoordinatorLookups(0);
  }
});
