// Installs stack/kafkajs-patch/sendMessages.cjs over kafkajs' own src/producer/sendMessages.js
// (docs/operations.md, "The kafkajs producer fix"). Runs as npm's postinstall and from
// stack/bootstrap.mjs; the workers refuse to start without it (common/kafkajs-patch.ts). Plain JS:
// it runs before tsx exists. Only kafkajs 2.2.4 with the file as published is patched; any other
// version or content stops the install, so an upgrade cannot silently drop or misapply the fix.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..', '..');
const KAFKAJS_VERSION = '2.2.4';
const ORIGINAL_SHA256 = '8a120e6993955e040a13014cccebd79b8d41e7355d6eda1065fa83fea2fbbcdb';

export function applyKafkajsPatch(log = (line) => console.log(line)) {
  const pkg = join(root, 'node_modules', 'kafkajs', 'package.json');
  if (!existsSync(pkg)) return false;
  const version = JSON.parse(readFileSync(pkg, 'utf8')).version;
  if (version !== KAFKAJS_VERSION)
    throw new Error(
      `kafkajs ${version} is installed; stack/kafkajs-patch fixes ${KAFKAJS_VERSION} only: check whether ${version} still needs it and update the patch`,
    );
  const target = join(root, 'node_modules', 'kafkajs', 'src', 'producer', 'sendMessages.js');
  const fixed = readFileSync(join(here, 'sendMessages.cjs'));
  const current = readFileSync(target);
  if (current.equals(fixed)) return false;
  const sha = createHash('sha256').update(current).digest('hex');
  // An earlier version of this fix is replaced as well; anything else is not ours to overwrite.
  if (sha !== ORIGINAL_SHA256 && !current.includes("'offline-push sendMessages "))
    throw new Error(`${target} is neither kafkajs ${KAFKAJS_VERSION}'s file nor the patched one (sha256 ${sha}); reinstall with npm ci`);
  writeFileSync(target, fixed);
  log('[bootstrap] kafkajs: producer retry fix installed (stack/kafkajs-patch)');
  return true;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) applyKafkajsPatch();
