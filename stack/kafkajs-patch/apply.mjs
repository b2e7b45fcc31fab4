// Installs the project's kafkajs fixes (docs/operations.md, "The kafkajs fixes"). Each fix is one
// unified diff beside this file, against kafkajs as published, with a text above it that says what
// it fixes and why; fixes.json lists them, each with the mark its code carries and the sha256 of
// every file it changes as published. Runs as npm's postinstall and from stack/bootstrap.mjs; the
// workers and the entry refuse to start unless every mark is installed (common/kafkajs-patch.ts).
// Plain JS: it runs before tsx exists. Only the exact kafkajs version with its files as published is
// patched; any other version or content stops the install, so an upgrade cannot silently drop or
// misapply a fix. To change a fix: edit the patched file in node_modules, bump the fix's mark (in
// the code and in fixes.json), and write the diff again with `diff -u --label a/<path> --label
// b/<path> <published> <fixed>` under the patch's text.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..', '..');

/** fixes.json (its shape: common/kafkajs-patch.ts, KafkajsFix). */
const KAFKAJS_FIXES = JSON.parse(readFileSync(join(here, 'fixes.json'), 'utf8'));

/**
 * Applies every fix not installed yet to node_modules/kafkajs. True when one was installed; false
 * when all were there already or kafkajs is not installed. An earlier version of a fix throws with
 * code EARLIER_FIX (stack/bootstrap.mjs then installs kafkajs afresh).
 */
export function applyKafkajsPatch(log = (line) => console.log(line), packageDir = join(root, 'node_modules', 'kafkajs')) {
  const pkg = join(packageDir, 'package.json');
  if (!existsSync(pkg)) return false;
  const version = JSON.parse(readFileSync(pkg, 'utf8')).version;
  if (version !== KAFKAJS_FIXES.version)
    throw new Error(
      `kafkajs ${version} is installed; stack/kafkajs-patch fixes ${KAFKAJS_FIXES.version} only: check whether ${version} still needs each fix and update the patches`,
    );
  let installed = false;
  for (const fix of KAFKAJS_FIXES.fixes) {
    const paths = Object.keys(fix.published);
    const current = new Map(paths.map((path) => [path, readFileSync(join(packageDir, path), 'utf8')]));
    if ([...current.values()].every((text) => text.includes(fix.mark))) continue;
    const earlier = fix.mark.slice(0, fix.mark.lastIndexOf(' v') + 2);
    for (const [path, text] of current) {
      if (text.includes(earlier) && !text.includes(fix.mark))
        throw Object.assign(new Error(`kafkajs ${path} holds an earlier version of the fix than ${fix.mark}; reinstall with npm ci`), { code: 'EARLIER_FIX' });
      if (sha256(text) !== fix.published[path])
        throw new Error(`kafkajs ${path} is not kafkajs ${version}'s file as published (sha256 ${sha256(text)}); reinstall with npm ci`);
    }
    const patched = applyUnifiedDiff(readFileSync(join(here, fix.patch), 'utf8'), current, fix.patch);
    for (const path of paths) {
      const text = patched.get(path);
      if (text === undefined || !text.includes(fix.mark)) throw new Error(`${fix.patch} does not put the mark "${fix.mark}" in ${path}`);
    }
    for (const [path, text] of patched) writeFileSync(join(packageDir, path), text);
    log(`[bootstrap] kafkajs: ${fix.mark} installed (stack/kafkajs-patch/${fix.patch})`);
    installed = true;
  }
  return installed;
}

/**
 * Applies a unified diff (`diff -u`) to the files in `files` (path in the package → text), exactly:
 * every context and removed line must be where the hunk says. `reverse` undoes it instead. Returns
 * the changed files; throws, naming the patch and the line, on anything that does not match.
 */
export function applyUnifiedDiff(patch, files, name = 'patch', { reverse = false } = {}) {
  const out = new Map();
  const lines = patch.split('\n');
  let i = lines.findIndex((line) => line.startsWith('--- '));
  if (i < 0) throw new Error(`${name}: no file in the diff`);
  while (i < lines.length && lines[i].startsWith('--- ')) {
    const path = lines[i + 1]?.startsWith('+++ b/') ? lines[i + 1].slice('+++ b/'.length) : undefined;
    if (path === undefined || !files.has(path)) throw new Error(`${name}: line ${i + 2} names no file this fix changes`);
    const source = files.get(path).split('\n');
    const result = [];
    let at = 0; // next line of `source` not yet copied
    i += 2;
    while (i < lines.length && lines[i].startsWith('@@ ')) {
      const header = /^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@/.exec(lines[i]);
      if (!header) throw new Error(`${name}: line ${i + 1} is not a hunk header`);
      const count = (n) => (n === undefined ? 1 : Number(n));
      const [oldStart, oldCount, newCount] = reverse ? [header[3], count(header[4]), count(header[2])] : [header[1], count(header[2]), count(header[4])];
      const start = Number(oldStart) - (oldCount === 0 ? 0 : 1);
      if (start < at) throw new Error(`${name}: hunk at line ${i + 1} overlaps the one before`);
      result.push(...source.slice(at, start));
      at = start;
      const added = reverse ? '-' : '+';
      // The hunk's lines: as many as its header counts, old (context and removed) and new (context and added).
      for (let olds = 0, news = 0, first = ++i; olds < oldCount || news < newCount; i++) {
        const kind = lines[i]?.[0];
        const text = lines[i]?.slice(1);
        if (kind === added) {
          result.push(text);
          news++;
        } else if (kind === ' ' || kind === (reverse ? '+' : '-')) {
          // A context line, or one the hunk removes: it must be the source's next line.
          if (source[at] !== text) throw new Error(`${name}: ${path} line ${at + 1} differs from the diff's line ${i + 1}`);
          if (kind === ' ') {
            result.push(text);
            news++;
          }
          olds++;
          at++;
        } else throw new Error(`${name}: the hunk at line ${first} ends early, at line ${i + 1}`);
      }
    }
    result.push(...source.slice(at));
    out.set(path, result.join('\n'));
  }
  if (lines.slice(i).some((line) => line !== '')) throw new Error(`${name}: line ${i + 1} is neither a file nor a hunk of the diff`);
  return out;
}

const sha256 = (data) => createHash('sha256').update(data).digest('hex');

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) applyKafkajsPatch();
