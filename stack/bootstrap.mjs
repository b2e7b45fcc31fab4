// Runs before `npm start`, `npm test` and `npm run bench` (npm's pre-scripts): installs the Node
// dependencies when node_modules is missing or older than the lockfile. Plain JS on purpose: it
// runs before tsx exists.
import { existsSync, statSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const marker = join(root, 'node_modules', '.package-lock.json');
const lock = join(root, 'package-lock.json');
const stale = !existsSync(marker) || (existsSync(lock) && statSync(lock).mtimeMs > statSync(marker).mtimeMs + 1000);
if (stale) {
  console.log('[bootstrap] installing Node dependencies (npm ci) ...');
  execFileSync('npm', existsSync(lock) ? ['ci', '--no-audit', '--no-fund'] : ['install', '--no-audit', '--no-fund'], { cwd: root, stdio: 'inherit' });
}
// The kafkajs fixes (stack/kafkajs-patch): installed here as well as by npm's postinstall, so a
// checkout that gained a fix since its last npm ci gets it.
const { applyKafkajsPatch } = await import('./kafkajs-patch/apply.mjs');
try {
  applyKafkajsPatch();
} catch (error) {
  // A checkout updated past a fix's new version: kafkajs is installed afresh (postinstall applies it).
  if (error.code !== 'EARLIER_FIX') throw error;
  console.log(`[bootstrap] ${error.message} ...`);
  execFileSync('npm', ['ci', '--no-audit', '--no-fund'], { cwd: root, stdio: 'inherit' });
}
