import type { VendorJson } from '../../../emulators/common.ts';
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { VendorRegistry } from '../../../sinks/vendors/registry.ts';
import type { OutcomeKind } from '../../../processors/fan-out/vendor-port.ts';
import { VivoAdapter } from '../../../sinks/vendors/vivo/adapter.ts';
import type { StartedEmulators } from '../../../emulators/index.ts';
import { message, useVendorEmulators, type Receiver } from './support.ts';

/** vivo results (docs/vendors.md, Sources; several UNCONFIRMED) and their outcomes; 10000 is refreshed first. */
const EXPECTED: Record<string, OutcomeKind> = {
  '10000': 'auth-failed',
  '10070': 'quota-exhausted',
  '10071': 'quota-exhausted',
  '10073': 'rate-limited',
  '10096': 'payload-rejected',
  '10097': 'payload-rejected',
  '10302': 'dead-token',
  '10055': 'unknown-code',
  '10999': 'unknown-code',
};

describe('vivo adapter against the vivo push emulator', () => {
  let em: StartedEmulators;
  let registry: VendorRegistry;
  let receiver: Receiver;
  useVendorEmulators('vivo', (env) => ({ em, registry, receiver } = env));

  test('an accepted push is a system-class IM message with notifyId, requestId and receipt id', async () => {
    const m = message(em, 'vivo', 'frank');
    const [outcome] = await registry.adapter('vivo', 'app-1')!.submit([m]);
    assert.equal(outcome!.kind, 'accepted');
    const got = em.vivo.accepted()[0]!;
    const req = got.request as VendorJson;
    assert.equal(got.token, m.token);
    assert.equal(req.classification, 1);
    assert.equal(req.category, 'IM');
    assert.equal(req.requestId, m.taskId);
    assert.equal(req.extra.callback, 'receipt-1');
    assert.ok(Number.isInteger(req.notifyId));
    assert.deepEqual(got.data, m.data);
  });

  test('every vivo result maps onto its outcome', async () => {
    const adapter = registry.adapter('vivo', 'app-1')!;
    for (const [code, kind] of Object.entries(EXPECTED)) {
      const m = message(em, 'vivo', `code${code}`);
      em.vivo.script({ kind: 'code', code }, { token: m.token, times: 2 });
      assert.deepEqual(await adapter.submit([m]), [{ kind, code }], code);
    }
    const m = message(em, 'vivo', 'http500');
    em.vivo.script({ kind: 'server-error', retryAfterS: 3 }, { token: m.token, times: 1 });
    assert.deepEqual(await adapter.submit([m]), [{ kind: 'retryable', code: 'HTTP_500', retryAfterMs: 3000 }]);
  });

  test('identical messages go through saveListPayload + pushToList; invalidUsers are dead', async () => {
    const shared = { title: 'Group', body: 'New', badge: 1, collapseId: 'conv-g', data: { conv_id: 'g' } };
    const batch = ['v1', 'v2', 'v3'].map((s) => message(em, 'vivo', s, shared));
    em.vivo.deadTokens.add(batch[0]!.token);
    const outcomes = await registry.adapter('vivo', 'app-1')!.submit(batch);
    assert.deepEqual(outcomes, [{ kind: 'dead-token', code: 'invalidUser.2' }, outcomes[1], outcomes[1]]);
    assert.equal(outcomes[1]!.kind, 'accepted');
    assert.equal(em.vivo.accepted().length, 2);
    const single = message(em, 'vivo', 'single');
    em.vivo.deadTokens.add(single.token);
    assert.deepEqual(await registry.adapter('vivo', 'app-1')!.submit([single]), [{ kind: 'dead-token', code: 'invalidUser.2' }]);
  });

  test('the authToken is signed with md5, refreshed hourly and once on 10000', async () => {
    const adapter = registry.adapter('vivo', 'app-1')!;
    await adapter.submit([message(em, 'vivo', 'warm')]);
    const minted = em.vivo.tokensMinted;
    em.clock.advance(30 * 60_000);
    await adapter.submit([message(em, 'vivo', 'soon')]);
    assert.equal(em.vivo.tokensMinted, minted);
    em.clock.advance(31 * 60_000);
    await adapter.submit([message(em, 'vivo', 'hour')]);
    assert.equal(em.vivo.tokensMinted, minted + 1);
    const m = message(em, 'vivo', 'expired');
    em.vivo.script({ kind: 'expired-auth' }, { token: m.token, times: 1 });
    assert.equal((await adapter.submit([m]))[0]!.kind, 'accepted');
    assert.equal(em.vivo.tokensMinted, minted + 2);
    const c = em.appsConfig.apps[0]!.vendors.vivo!;
    const wrong = new VivoAdapter({ ...c, appSecret: 'wrong' }, { ca: em.ca, now: () => em.clock.now() });
    assert.deepEqual(await wrong.submit([message(em, 'vivo', 'w')]), [{ kind: 'auth-failed', code: '10000' }]);
    await wrong.close();
  });

  test('receipts parse into delivered / dead-token per regId', async () => {
    const ok = message(em, 'vivo', 'r-ok');
    const bad = message(em, 'vivo', 'r-bad');
    em.vivo.receipts.outcomeFor = (t) => (t === bad.token ? 'dead-token' : 'delivered');
    const outcomes = await registry.adapter('vivo', 'app-1')!.submit([ok, bad]);
    const mine = () => receiver.calls.filter((c) => c.body.includes(ok.token) || c.body.includes(bad.token));
    await receiver.until(() => [ok.token, bad.token].every((t) => mine().some((c) => c.body.includes(t))));
    em.vivo.receipts.outcomeFor = undefined;
    const parsed = mine().flatMap((c) => registry.receiptParser('vivo')!.parseReceipt(c.body, String(c.headers['content-type'])));
    const byToken = new Map(parsed.map((r) => [r.token, r]));
    assert.equal(byToken.get(ok.token)!.status, 'delivered');
    assert.equal(byToken.get(bad.token)!.status, 'dead-token');
    assert.equal(byToken.get(ok.token)!.vendorMessageId, (outcomes[0] as { vendorMessageId: string }).vendorMessageId);
  });
});
