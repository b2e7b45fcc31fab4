/**
 * The workers and the entry refuse to run on an unpatched kafkajs (stack/kafkajs-patch/apply.mjs;
 * docs/operations.md, "The kafkajs fixes"): its producer loses records when a partition's leader
 * moves during a send (stack/kafkajs-patch/sendMessages.cjs says how), and every connection that
 * got an answer runs a 1 ms timer for good (and a 100 ms one, in flight or not). npm's postinstall and stack/bootstrap.mjs install the
 * fixes; `npm install --ignore-scripts` would not.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const FIX_MARK = 'offline-push sendMessages v1';
/** The mark stack/kafkajs-patch/apply.mjs writes into kafkajs' request queue (REQUEST_QUEUE_MARK). */
const REQUEST_QUEUE_MARK = 'offline-push requestQueue v2';
/**
 * The mark of the fetch-order fix (apply.mjs's FETCH_ORDER_MARK): without it a task cannot tell
 * which fetch a record came from nor that a partition had nothing new, so it would take its inputs
 * in time order only among what happens to be buffered (topology/task-input.ts).
 */
export const FETCH_ORDER_MARK = 'offline-push fetchOrder v1';
/**
 * The mark of the varint encoder fix (apply.mjs's ENCODER_MARK): a CPU and garbage saving, not a
 * correctness fix, so nothing refuses to run without it; test/stack/kafkajs-encoder.test.ts checks it is installed.
 */
export const ENCODER_MARK = 'offline-push encoder v1';

export function assertKafkajsPatched(): void {
  const require = createRequire(import.meta.url);
  const mark = (require('kafkajs/src/producer/sendMessages.js') as { offlinePushFix?: string }).offlinePushFix;
  const requestQueue = readFileSync(require.resolve('kafkajs/src/network/requestQueue/index.js'), 'utf8');
  const runner = readFileSync(require.resolve('kafkajs/src/consumer/runner.js'), 'utf8');
  if (mark !== FIX_MARK || !requestQueue.includes(REQUEST_QUEUE_MARK) || !runner.includes(FETCH_ORDER_MARK))
    throw new Error(
      'kafkajs is not patched (its producer can lose records when a leader moves, its consumer cannot take inputs in time order): run `node stack/kafkajs-patch/apply.mjs` or `npm ci`',
    );
}
