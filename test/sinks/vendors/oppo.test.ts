import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { OppoAdapter } from '../../../sinks/vendors/oppo/adapter.ts';
import { VENDOR_USER_AGENT } from '../../../sinks/vendors/http.ts';
import type { VendorRegistry } from '../../../sinks/vendors/registry.ts';
import type { OutcomeKind } from '../../../processors/fan-out/vendor-port.ts';
import type { StartedEmulators } from '../../../emulators/index.ts';
import { message, useVendorEmulators, type Receiver } from './support.ts';

/** OPPO return codes (docs/vendors.md, Sources) and their outcomes; 11 and 29 are refreshed first. */
const EXPECTED: Record<string, OutcomeKind> = {
  '-2': 'rate-limited',
  '-1': 'retryable',
  '11': 'auth-failed',
  '12': 'permanent',
  '13': 'rate-limited',
  ...Object.fromEntries(Array.from({ length: 12 }, (_, i) => [String(14 + i), 'permanent' as const])),
  '26': 'permanent',
  '27': 'permanent',
  '28': 'permanent',
  '29': 'auth-failed',
  '30': 'permanent',
  '31': 'permanent',
  '32': 'permanent',
  '33': 'quota-exhausted',
  '34': 'quota-exhausted',
  '40': 'payload-rejected',
  '41': 'payload-rejected',
  '51': 'payload-rejected',
  '55': 'rate-limited',
  '59': 'permanent',
  '67': 'payload-rejected',
  '10000': 'dead-token',
  '10001': 'dead-token',
  '10002': 'dead-token',
  '10003': 'dead-token',
};

describe('OPPO adapter against the OPPO PUSH emulator', () => {
  let em: StartedEmulators;
  let registry: VendorRegistry;
  let receiver: Receiver;
  useVendorEmulators('oppo', (env) => ({ em, registry, receiver } = env));

  test('an accepted push is in the communication class with channel, notify id, dedupe id and callback', async () => {
    const m = message(em, 'oppo', 'erin');
    const [outcome] = await registry.adapter('oppo', 'app-1')!.submit([m]);
    assert.equal(outcome!.kind, 'accepted');
    const got = em.oppo.accepted()[0]!;
    const n = (got.request as { notification: Record<string, unknown> }).notification;
    assert.equal(got.token, m.token);
    assert.equal(got.client, VENDOR_USER_AGENT, 'the emulator records which process sent the request');
    assert.equal(n.category, 'IM');
    assert.equal(n.notify_level, 2);
    assert.equal(n.channel_id, 'im_message');
    assert.equal(n.app_message_id, m.taskId);
    assert.equal(n.call_back_parameter, m.taskId);
    assert.deepEqual(got.data, m.data);
  });

  test('every OPPO return code maps onto its outcome', async () => {
    const adapter = registry.adapter('oppo', 'app-1')!;
    for (const [code, kind] of Object.entries(EXPECTED)) {
      const m = message(em, 'oppo', `code${code}`);
      em.oppo.script({ kind: 'code', code }, { token: m.token, times: 2 });
      assert.deepEqual(await adapter.submit([m]), [{ kind, code }], code);
    }
  });

  test('unicast_batch gives per-item results: a dead regId among accepted ones', async () => {
    const batch = ['o1', 'o2', 'o3'].map((s) => message(em, 'oppo', s));
    em.oppo.deadTokens.add(batch[2]!.token);
    const outcomes = await registry.adapter('oppo', 'app-1')!.submit(batch);
    assert.deepEqual(
      outcomes.map((o) => o.kind),
      ['accepted', 'accepted', 'dead-token'],
    );
    assert.deepEqual(outcomes[2], { kind: 'dead-token', code: '10000' });
  });

  test('the auth_token is signed, cached for a day and refreshed once on code 11', async () => {
    const adapter = registry.adapter('oppo', 'app-1')!;
    await adapter.submit([message(em, 'oppo', 'warm')]);
    const minted = em.oppo.tokensMinted;
    em.clock.advance(20 * 3600_000);
    await adapter.submit([message(em, 'oppo', 'later')]);
    assert.equal(em.oppo.tokensMinted, minted);
    const m = message(em, 'oppo', 'expired');
    em.oppo.script({ kind: 'expired-auth' }, { token: m.token, times: 1 });
    assert.equal((await adapter.submit([m]))[0]!.kind, 'accepted');
    assert.equal(em.oppo.tokensMinted, minted + 1);
    const c = em.appsConfig.apps[0]!.vendors.oppo!;
    const wrong = new OppoAdapter({ ...c, masterSecret: 'wrong' }, { ca: em.ca, now: () => em.clock.now() });
    assert.deepEqual(await wrong.submit([message(em, 'oppo', 'w')]), [{ kind: 'auth-failed', code: '16' }]);
    await wrong.close();
  });

  test('TLS is verified: without the test CA nothing is sent', async () => {
    const c = em.appsConfig.apps[0]!.vendors.oppo!;
    const untrusting = new OppoAdapter(c, { now: () => em.clock.now() });
    const received = em.oppo.received.length;
    const [outcome] = await untrusting.submit([message(em, 'oppo', 'tls')]);
    assert.equal(outcome!.kind, 'retryable');
    assert.equal(em.oppo.received.length, received, 'the emulator got no request');
    await untrusting.close();
  });

  test('custom data over 4000 characters is refused before sending', async () => {
    const big = message(em, 'oppo', 'big', { data: { blob: 'x'.repeat(4000) } });
    assert.equal((await registry.adapter('oppo', 'app-1')!.submit([big]))[0]!.kind, 'payload-too-large');
    assert.equal(em.oppo.received.length, 0);
  });

  test('receipts are posted to call_back_url and parse into delivered / dead-token', async () => {
    const ok = message(em, 'oppo', 'r-ok');
    const bad = message(em, 'oppo', 'r-bad');
    em.oppo.receipts.outcomeFor = (t) => (t === bad.token ? 'dead-token' : 'delivered');
    const outcomes = await registry.adapter('oppo', 'app-1')!.submit([ok, bad]);
    const mine = () => receiver.calls.filter((c) => c.body.includes(ok.token) || c.body.includes(bad.token));
    await receiver.until(() => [ok.token, bad.token].every((t) => mine().some((c) => c.body.includes(t))));
    em.oppo.receipts.outcomeFor = undefined;
    const parsed = mine().flatMap((c) => registry.receiptParser('oppo')!.parseReceipt(c.body, String(c.headers['content-type'])));
    const byToken = new Map(parsed.map((r) => [r.token, r]));
    assert.equal(byToken.get(ok.token)!.status, 'delivered');
    assert.equal(byToken.get(bad.token)!.status, 'dead-token');
    assert.equal(byToken.get(ok.token)!.vendorMessageId, (outcomes[0] as { vendorMessageId: string }).vendorMessageId);
  });
});
