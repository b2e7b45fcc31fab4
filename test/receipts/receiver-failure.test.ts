import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { compileReceiverConfig } from '../../receipts/config.ts';
import { MemoryNonceStore } from '../../receipts/nonces.ts';
import { ReceiptReceiver } from '../../receipts/server.ts';
import type { Logger } from '../../common/log.ts';
import { rawRequest } from './raw-http.ts';
import { receiptApps } from './support.ts';

/**
 * A request whose handling throws (here a metrics hook with a bug) is answered 500 and logged by
 * code only, and the receiver goes on serving: the rejection does not escape as an unhandled one,
 * which would end the worker that hosts the receiver.
 */
const logged: Array<{ message: string; fields?: object }> = [];
const logger: Logger = {
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: (message, fields) => void logged.push({ message, ...(fields ? { fields } : {}) }),
  child: () => logger,
};
let hookThrows = true;
const receiver = new ReceiptReceiver({
  config: compileReceiverConfig({ port: 0, apps: receiptApps() }),
  publisher: { publish: () => Promise.resolve(), close: () => Promise.resolve() },
  parse: () => [],
  nonces: new MemoryNonceStore(600_000),
  metrics: {
    rejected: () => {
      if (hookThrows) throw Object.assign(new Error('hook bug at /receipts/xiaomi/x?key=secret-in-url'), { code: 'HOOK_BUG' });
    },
  },
  logger,
});

after(() => receiver.close());

test('a request whose handling throws gets a 500, the error is logged by its code only, and the receiver serves on', async () => {
  const port = await receiver.listen();
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => void unhandled.push(reason);
  process.on('unhandledRejection', onUnhandled);
  try {
    const failed = await rawRequest({ port, head: 'GET /no-such-route?key=secret-in-url HTTP/1.1\r\nhost: x\r\nconnection: close' });
    assert.equal(failed.status, 500);
    assert.deepEqual(logged, [{ message: 'receipt callback failed; answering 500', fields: { code: 'HOOK_BUG' } }]);
    assert.ok(!JSON.stringify(logged).includes('secret-in-url'), 'the URL (and the key in it) is not logged');
    hookThrows = false;
    const next = await rawRequest({ port, head: 'GET /no-such-route HTTP/1.1\r\nhost: x\r\nconnection: close' });
    assert.equal(next.status, 404);
    assert.deepEqual(unhandled, []);
  } finally {
    process.off('unhandledRejection', onUnhandled);
  }
});
