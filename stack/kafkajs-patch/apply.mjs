// Installs the project's two kafkajs fixes (docs/operations.md, "The kafkajs fixes"):
// stack/kafkajs-patch/sendMessages.cjs over kafkajs' own src/producer/sendMessages.js, and one
// method of src/network/requestQueue/index.js replaced by REQUEST_QUEUE_SCHEDULE below. Runs as
// npm's postinstall and from stack/bootstrap.mjs; the workers refuse to start without them
// (common/kafkajs-patch.ts). Plain JS: it runs before tsx exists. Only kafkajs 2.2.4 with the files
// as published is patched; any other version or content stops the install, so an upgrade cannot
// silently drop or misapply a fix.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..', '..');
const KAFKAJS_VERSION = '2.2.4';
const ORIGINAL_SHA256 = '8a120e6993955e040a13014cccebd79b8d41e7355d6eda1065fa83fea2fbbcdb';
const REQUEST_QUEUE_SHA256 = 'b55986089c14f8f7bfc377922e2e65b3e4c1e7c7af2752d3b10a75dfe9e9260c';
/** The published method's first line and the line that closes it (two-space indented `}`). */
const SCHEDULE_START = '  scheduleCheckPendingRequests() {\n';
const SCHEDULE_END = '\n  }\n';
export const REQUEST_QUEUE_MARK = 'offline-push requestQueue v1';
/**
 * The published method re-arms a timer of (throttledUntil - now) whenever it runs, pending
 * requests or not. That delay is negative once no throttle is in force, so every connection that
 * ever got an answer ran a 1 ms timer for as long as it stayed open: most of an idle worker's CPU.
 * Only pending requests need a later check (an answer or a new request checks the queue too).
 */
const REQUEST_QUEUE_SCHEDULE = `  scheduleCheckPendingRequests() {
    // ${REQUEST_QUEUE_MARK} (stack/kafkajs-patch/apply.mjs): a timer only while requests are pending.
    if (this.pending.length === 0 || this.throttleCheckTimeoutId) return
    const throttledFor = this.throttledUntil - Date.now()
    this.throttleCheckTimeoutId = setTimeout(() => {
      this.throttleCheckTimeoutId = null
      this.checkPendingRequests()
    }, throttledFor > 0 ? throttledFor : CHECK_PENDING_REQUESTS_INTERVAL)
  }
`;

export function applyKafkajsPatch(log = (line) => console.log(line)) {
  const pkg = join(root, 'node_modules', 'kafkajs', 'package.json');
  if (!existsSync(pkg)) return false;
  const version = JSON.parse(readFileSync(pkg, 'utf8')).version;
  if (version !== KAFKAJS_VERSION)
    throw new Error(
      `kafkajs ${version} is installed; stack/kafkajs-patch fixes ${KAFKAJS_VERSION} only: check whether ${version} still needs it and update the patch`,
    );
  const producer = patchSendMessages(log);
  const requestQueue = patchRequestQueue(log);
  return producer || requestQueue;
}

function patchSendMessages(log) {
  const target = join(root, 'node_modules', 'kafkajs', 'src', 'producer', 'sendMessages.js');
  const fixed = readFileSync(join(here, 'sendMessages.cjs'));
  const current = readFileSync(target);
  if (current.equals(fixed)) return false;
  const sha = sha256(current);
  // An earlier version of this fix is replaced as well; anything else is not ours to overwrite.
  if (sha !== ORIGINAL_SHA256 && !current.includes("'offline-push sendMessages "))
    throw new Error(`${target} is neither kafkajs ${KAFKAJS_VERSION}'s file nor the patched one (sha256 ${sha}); reinstall with npm ci`);
  writeFileSync(target, fixed);
  log('[bootstrap] kafkajs: producer retry fix installed (stack/kafkajs-patch)');
  return true;
}

function patchRequestQueue(log) {
  const target = join(root, 'node_modules', 'kafkajs', 'src', 'network', 'requestQueue', 'index.js');
  const current = readFileSync(target, 'utf8');
  if (current.includes(REQUEST_QUEUE_MARK)) return false;
  const sha = sha256(current);
  if (sha !== REQUEST_QUEUE_SHA256) throw new Error(`${target} is not kafkajs ${KAFKAJS_VERSION}'s file (sha256 ${sha}); reinstall with npm ci`);
  const start = current.indexOf(SCHEDULE_START);
  const end = current.indexOf(SCHEDULE_END, start) + SCHEDULE_END.length;
  writeFileSync(target, current.slice(0, start) + REQUEST_QUEUE_SCHEDULE + current.slice(end));
  log('[bootstrap] kafkajs: request queue timer fix installed (stack/kafkajs-patch)');
  return true;
}

const sha256 = (data) => createHash('sha256').update(data).digest('hex');

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) applyKafkajsPatch();
