import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { VendorRegistry } from '../../sinks/vendors/registry.ts';
import { message, useEmulators } from '../sinks/vendors/support.ts';
import type { StartedEmulators } from '../../emulators/index.ts';

/**
 * The emulators cap the vendors' limited classes per device and day (HMS marketing 2, OPPO content
 * & marketing 2, vivo operation 5): the adapters' IM classification is what keeps pushes flowing.
 */
describe('vendor message classes in the emulators', () => {
  let em: StartedEmulators;
  let registry: VendorRegistry;

  useEmulators((env) => ({ em, registry } = env));

  const cases = [
    { vendor: 'hms', marketing: { category: 'MARKETING' }, cap: 2 },
    { vendor: 'oppo', marketing: { category: 'MARKETING' }, cap: 2 },
    { vendor: 'vivo', marketing: { classification: '0', category: 'MARKETING' }, cap: 5 },
  ] as const;

  for (const { vendor, marketing, cap } of cases) {
    test(`${vendor}: IM pushes are never capped; marketing-class pushes beyond ${cap} a day per device are not shown`, async () => {
      const adapter = registry.adapter(vendor, 'app-1')!;
      for (let i = 0; i < cap + 3; i++) await adapter.submit([message(em, vendor, 'same-device', { taskId: `im-${i}`, body: `im ${i}` })]);
      assert.equal(em[vendor].accepted().length, cap + 3);
      em.reset();
      for (let i = 0; i < cap + 3; i++)
        await adapter.submit([message(em, vendor, 'same-device', { taskId: `mk-${i}`, body: `promo ${i}`, classification: marketing })]);
      assert.deepEqual(
        em[vendor].received.map((r) => r.answer),
        [...Array(cap).fill('accepted'), 'class-capped', 'class-capped', 'class-capped'],
      );
      em.clock.advance(24 * 3600_000);
      await adapter.submit([message(em, vendor, 'same-device', { taskId: 'next-day', classification: marketing })]);
      assert.equal(em[vendor].received.at(-1)!.answer, 'accepted', 'the cap resets the next day');
    });
  }
});
