import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { createVendorRegistry, type VendorRegistry } from '../../sinks/vendors/registry.ts';
import { message, startReceiver } from '../sinks/vendors/support.ts';
import { startEmulators, type StartedEmulators } from '../../emulators/index.ts';
import type { PushMessage } from '../../processors/fan-out/vendor-port.ts';
import { recipientParam } from '../../processors/model/receipt-route.ts';

/** The emulators' receipt simulation: loss, duplication, and an uninstall reported asynchronously. */
describe('emulator receipt callbacks', () => {
  let em: StartedEmulators;
  let registry: VendorRegistry;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

  before(async () => {
    receiver = await startReceiver();
    const url = (v: string) => `${receiver.url}/receipts/${v}`;
    em = await startEmulators({ receiptUrls: { hms: url('hms'), xiaomi: url('xiaomi'), oppo: url('oppo'), vivo: url('vivo') } });
    registry = createVendorRegistry(em.appsConfig, { now: () => em.clock.now() });
  });
  after(async () => {
    await registry.close();
    await em.close();
    await receiver.close();
  });
  beforeEach(() => {
    em.reset();
    for (const e of em.all()) Object.assign(e.receipts, { delayMs: 20, lossRate: 0, duplicateRate: 0 });
  });

  const callsAbout = (token: string) => receiver.calls.filter((c) => c.body.includes(token) || c.body.includes(encodeURIComponent(token)));

  test('duplication posts the same receipt twice; loss posts none', async () => {
    const dup = message(em, 'oppo', 'dup');
    em.oppo.receipts.duplicateRate = 1;
    await registry.adapter('oppo', 'app-1')!.submit([dup]);
    await receiver.until(() => callsAbout(dup.token).length >= 2);
    const parser = registry.receiptParser('oppo')!;
    const [a, b] = callsAbout(dup.token).map((c) => parser.parseReceipt(c.body, 'application/json').map(({ at: _at, ...r }) => r));
    assert.deepEqual(a, b);
    assert.equal(a![0]!.status, 'delivered');
    const lost = message(em, 'oppo', 'lost');
    em.oppo.receipts.duplicateRate = 0;
    em.oppo.receipts.lossRate = 1;
    await registry.adapter('oppo', 'app-1')!.submit([lost]);
    await sleep(300);
    assert.equal(callsAbout(lost.token).length, 0);
  });

  for (const vendor of ['hms', 'xiaomi', 'oppo', 'vivo'] as const) {
    test(`${vendor}: an uninstall is reported later as a dead-token receipt and later pushes see a dead token`, async () => {
      const m = message(em, vendor, `uninstall-${vendor}`);
      await registry.adapter(vendor, 'app-1')!.submit([m]);
      await receiver.until(() => callsAbout(m.token).length >= 1);
      assert.equal(em[vendor].uninstall(m.token), true);
      await receiver.until(() => callsAbout(m.token).length >= 2);
      const parser = registry.receiptParser(vendor)!;
      const parsed = callsAbout(m.token).map((c) => parser.parseReceipt(c.body, String(c.headers['content-type'])).find((r) => r.token === m.token)!);
      assert.deepEqual(
        parsed.map((r) => r.status),
        ['delivered', 'dead-token'],
      );
      assert.equal(parsed[0]!.vendorMessageId, parsed[1]!.vendorMessageId);
    });

    test(`${vendor}: a push naming its recipient gets receipts naming the uid; one naming no one, receipts naming no one`, async () => {
      const named = message(em, vendor, `named-${vendor}`, { recipient: recipientParam('u-42')! });
      const plain = message(em, vendor, `plain-${vendor}`);
      const adapter = registry.adapter(vendor, 'app-1')!;
      assert.deepEqual(
        (await adapter.submit([named])).concat(await adapter.submit([plain])).map((o) => o.kind),
        ['accepted', 'accepted'],
      );
      await receiver.until(() => callsAbout(named.token).length >= 1 && callsAbout(plain.token).length >= 1);
      const parser = registry.receiptParser(vendor)!;
      const parsedFor = (m: PushMessage) =>
        callsAbout(m.token).flatMap((c) => parser.parseReceipt(c.body, String(c.headers['content-type'])).filter((r) => r.token === m.token));
      assert.deepEqual(
        parsedFor(named).map((r) => [r.status, r.recipient]),
        [['delivered', 'u-42']],
      );
      assert.deepEqual(
        parsedFor(plain).map((r) => [r.status, r.recipient]),
        [['delivered', undefined]],
      );
    });
  }
});
