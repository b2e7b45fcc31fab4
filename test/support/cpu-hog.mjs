/**
 * A busy loop on one core, for `npm run test:loaded` (test/run.ts): the tests then run on a machine
 * that is also doing other work, as a developer's machine or a shared CI runner is. Started by
 * test/run.ts, which stops it when the run ends; it also stops by itself when that parent is gone
 * (its parent pid changes, as after a SIGKILL of the run) or after `maxMs`, whichever comes first,
 * so it is never left spinning.
 *
 * Usage: node test/support/cpu-hog.mjs <parent pid> <maxMs>
 */
import { getPriority, setPriority } from 'node:os';

const parent = Number(process.argv[2]);
const maxMs = Number(process.argv[3]);
if (!Number.isInteger(parent) || parent <= 1 || !(maxMs > 0)) {
  console.error('usage: node test/support/cpu-hog.mjs <parent pid> <maxMs>');
  process.exit(2);
}

// Nice 0 where the user may set it (an unprivileged process can only raise its niceness), so the
// loop competes with the tests rather than taking only what they leave.
try {
  setPriority(0);
} catch {
  console.error(`[cpu-hog] spinning at nice ${getPriority()} (cannot lower it to 0 without privilege)`);
}

const stopAt = Date.now() + maxMs;
let hash = 0;
for (;;) {
  for (let i = 0; i < 5_000_000; i++) hash = (hash * 31 + i) | 0; // a few ms of pure CPU
  // process.ppid is read from the OS on each access: it changes when the parent dies.
  if (process.ppid !== parent || Date.now() >= stopAt) break;
}
process.exit(hash === 0.5 ? 1 : 0); // `hash` is read so the loop is not optimised away
