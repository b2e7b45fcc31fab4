import type { VendorJson } from '../../../emulators/common.ts';
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { VendorRegistry } from '../../../sinks/vendors/registry.ts';
import type { OutcomeKind } from '../../../processors/fan-out/vendor-port.ts';
import { hmsCallbackId } from '../../../emulators/hms.ts';
import type { StartedEmulators } from '../../../emulators/index.ts';
import { message, useVendorEmulators, type Receiver } from './support.ts';

/** Huawei business codes (docs/vendors.md, Sources) and their outcomes; auth codes are refreshed first. */
const EXPECTED: Record<string, OutcomeKind> = {
  '80100001': 'payload-rejected',
  '80100003': 'payload-rejected',
  '80100004': 'payload-rejected',
  '80100013': 'payload-rejected',
  '80100016': 'payload-rejected',
  '80100017': 'rate-limited',
  '80100018': 'permanent',
  '80200001': 'auth-failed',
  '80200003': 'auth-failed',
  '80200005': 'auth-failed',
  '80300002': 'permanent',
  '80300007': 'dead-token',
  '80300008': 'payload-too-large',
  '80300010': 'permanent',
  '80300011': 'permanent',
  '80300013': 'permanent',
  '80600003': 'permanent',
  '81000001': 'retryable',
};

describe('HMS adapter against the Huawei OAuth + Push Kit emulator', () => {
  let em: StartedEmulators;
  let registry: VendorRegistry;
  let receiver: Receiver;
  useVendorEmulators('hms', (env) => ({ em, registry, receiver } = env));

  test('an accepted push is classified IM with tag, notify id, badge and click action', async () => {
    const m = message(em, 'hms', 'carol');
    const [outcome] = await registry.adapter('hms', 'app-1')!.submit([m]);
    assert.equal(outcome!.kind, 'accepted');
    const got = em.hms.accepted()[0]!;
    const android = (got.request as { android: VendorJson }).android;
    assert.equal(got.token, m.token);
    assert.equal(android.category, 'IM');
    assert.equal(android.notification.tag, 'conv-carol');
    assert.equal(android.notification.badge.set_num, 4);
    assert.ok(Number.isInteger(android.notification.notify_id));
    assert.deepEqual(got.data, m.data);
  });

  test('every Huawei business code maps onto its outcome', async () => {
    const adapter = registry.adapter('hms', 'app-1')!;
    for (const [code, kind] of Object.entries(EXPECTED)) {
      const m = message(em, 'hms', `code${code}`);
      em.hms.script({ kind: 'code', code }, { token: m.token, times: 2 });
      const [outcome] = await adapter.submit([m]);
      assert.equal(outcome!.kind, kind, code);
      assert.equal((outcome as { code: string }).code, code);
    }
  });

  test('HTTP 503 flow control is rate-limited', async () => {
    const m = message(em, 'hms', 'flow');
    em.hms.script({ kind: 'rate-limit' }, { token: m.token, times: 1 });
    assert.equal((await registry.adapter('hms', 'app-1')!.submit([m]))[0]!.kind, 'rate-limited');
  });

  test('identical messages share one request; illegal_tokens of a partial success are dead, the rest accepted', async () => {
    const shared = { title: 'Group', body: 'New message', badge: 1, collapseId: 'conv-g', data: { conv_id: 'g' }, taskId: 't' };
    const batch = ['d1', 'd2', 'd3'].map((s) => message(em, 'hms', s, shared));
    em.hms.deadTokens.add(batch[1]!.token);
    const outcomes = await registry.adapter('hms', 'app-1')!.submit(batch);
    assert.deepEqual(
      outcomes.map((o) => o.kind),
      ['accepted', 'dead-token', 'accepted'],
    );
    assert.equal(new Set(em.hms.received.map((r) => r.request)).size, 1, 'one request for the three tokens');
    em.hms.deadTokens.add(batch[0]!.token).add(batch[2]!.token);
    assert.deepEqual(
      (await registry.adapter('hms', 'app-1')!.submit(batch)).map((o) => o),
      batch.map(() => ({ kind: 'dead-token', code: '80300007' })),
    );
  });

  test('an expired access token is refreshed once and the push resent', async () => {
    const adapter = registry.adapter('hms', 'app-1')!;
    await adapter.submit([message(em, 'hms', 'warm')]);
    const minted = em.hms.tokensMinted;
    em.clock.advance(61 * 60_000);
    // Past expiry, the adapter refreshes on its own before sending (5 minutes early).
    assert.equal((await adapter.submit([message(em, 'hms', 'later')]))[0]!.kind, 'accepted');
    assert.equal(em.hms.tokensMinted, minted + 1);
    const m = message(em, 'hms', 'expired');
    em.hms.script({ kind: 'expired-auth' }, { token: m.token, times: 1 });
    assert.equal((await adapter.submit([m]))[0]!.kind, 'accepted');
    assert.equal(em.hms.tokensMinted, minted + 2);
  });

  test('payloads over 4096 bytes (tokens excluded) are refused before sending', async () => {
    const big = message(em, 'hms', 'big', { data: { blob: 'x'.repeat(4100) } });
    assert.deepEqual(await registry.adapter('hms', 'app-1')!.submit([big]), [{ kind: 'payload-too-large', code: '80300008' }]);
    assert.equal(em.hms.received.length, 0);
  });

  test('receipts are posted signed with X-HUAWEI-CALLBACK-ID and parse into delivered / dead-token', async () => {
    const ok = message(em, 'hms', 'rcpt-ok');
    const uninstalled = message(em, 'hms', 'rcpt-dead');
    em.hms.receipts.outcomeFor = (t) => (t === uninstalled.token ? 'dead-token' : 'delivered');
    const outcomes = await registry.adapter('hms', 'app-1')!.submit([ok, uninstalled]);
    const mine = () => receiver.calls.filter((c) => c.body.includes(ok.token) || c.body.includes(uninstalled.token));
    await receiver.until(() => [ok.token, uninstalled.token].every((t) => mine().some((c) => c.body.includes(t))));
    em.hms.receipts.outcomeFor = undefined;
    const calls = mine();
    for (const call of calls) {
      const header = String(call.headers['x-huawei-callback-id']);
      const [, timestamp, nonce] = /^timestamp=(\d+);nonce=([^;]+);value=/.exec(header)!;
      assert.equal(header, hmsCallbackId(em.hmsReceiptSigning, Number(timestamp), nonce!));
    }
    const parsed = calls.flatMap((c) => registry.receiptParser('hms')!.parseReceipt(c.body, String(c.headers['content-type'])));
    const byToken = new Map(parsed.map((r) => [r.token, r]));
    assert.equal(byToken.get(ok.token)!.status, 'delivered');
    assert.equal(byToken.get(uninstalled.token)!.status, 'dead-token');
    assert.equal(byToken.get(ok.token)!.vendorMessageId, (outcomes[0] as { vendorMessageId: string }).vendorMessageId);
  });
});
