/**
 * The workers and the entry refuse to run on an unpatched kafkajs: its producer loses records when a
 * partition's leader moves during a send (stack/kafkajs-patch/sendMessages.cjs says how, and
 * docs/operations.md "The kafkajs producer fix"). npm's postinstall and stack/bootstrap.mjs install
 * the fix; `npm install --ignore-scripts` would not.
 */
import { createRequire } from 'node:module';

const FIX_MARK = 'offline-push sendMessages v1';

export function assertKafkajsPatched(): void {
  const require = createRequire(import.meta.url);
  const mark = (require('kafkajs/src/producer/sendMessages.js') as { offlinePushFix?: string }).offlinePushFix;
  if (mark !== FIX_MARK)
    throw new Error('kafkajs is not patched (its producer can lose records when a leader moves): run `node stack/kafkajs-patch/apply.mjs` or `npm ci`');
}
