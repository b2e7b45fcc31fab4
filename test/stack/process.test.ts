import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type AddressInfo } from 'node:net';
import { execFileSync } from 'node:child_process';
import { portOpen } from '../../stack/process.ts';

test('portOpen sees a listening port even when a synchronous install step blocked the event loop past its timeout', async () => {
  const server = createServer().listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const { port } = server.address() as AddressInfo;
  try {
    const open = portOpen(port, '127.0.0.1', 200);
    execFileSync('sleep', ['1']); // what `stack up` does while Maven resolves jars
    assert.equal(await open, true, 'a running service must not be taken for a stopped one (and started twice)');
  } finally {
    server.close();
  }
  assert.equal(await portOpen(port, '127.0.0.1', 200), false, 'a closed port reads closed');
});
