import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { XiaomiAdapter } from '../../../sinks/vendors/xiaomi/adapter.ts';
import type { VendorRegistry } from '../../../sinks/vendors/registry.ts';
import type { OutcomeKind } from '../../../processors/fan-out/vendor-port.ts';
import type { StartedEmulators } from '../../../emulators/index.ts';
import { message, useVendorEmulators, type Receiver } from './support.ts';

/** MiPush codes (docs/vendors.md, Sources) and their outcomes. */
const EXPECTED: Record<string, OutcomeKind> = {
  '-1': 'retryable',
  '1': 'retryable',
  '10001': 'retryable',
  '10002': 'retryable',
  '10003': 'retryable',
  '26003': 'retryable',
  '65029': 'retryable',
  '20301': 'retryable',
  '10008': 'payload-rejected',
  '10016': 'payload-rejected',
  '10017': 'payload-rejected',
  '21305': 'payload-rejected',
  '65011': 'payload-rejected',
  '10027': 'rate-limited',
  '21303': 'rate-limited',
  '26004': 'rate-limited',
  '10034': 'quota-exhausted',
  '10031': 'permanent',
  '21301': 'auth-failed',
  '21302': 'auth-failed',
  '22000': 'auth-failed',
  '22006': 'auth-failed',
  '22007': 'auth-failed',
  '22022': 'permanent',
  '27001': 'permanent',
  '65009': 'payload-too-large',
  '65036': 'payload-rejected',
  '65037': 'payload-rejected',
  '65038': 'payload-rejected',
};

describe('Xiaomi adapter against the MiPush emulator', () => {
  let em: StartedEmulators;
  let registry: VendorRegistry;
  let receiver: Receiver;
  useVendorEmulators('xiaomi', (env) => ({ em, registry, receiver } = env), '?secret=s3cret');

  test('an accepted push uses the private channel, notify_id and the receipt callback', async () => {
    const m = message(em, 'xiaomi', 'dave');
    const [outcome] = await registry.adapter('xiaomi', 'app-1')!.submit([m]);
    assert.equal(outcome!.kind, 'accepted');
    const got = em.xiaomi.accepted()[0]!;
    const form = got.request as Record<string, string>;
    assert.equal(got.token, m.token);
    assert.equal(form['extra.channel_id'], 'im_private');
    assert.equal(form.restricted_package_name, 'com.example.app-1');
    assert.match(form.notify_id!, /^\d+$/);
    assert.equal(form['extra.callback'], `${receiver.url}/receipts/xiaomi?secret=s3cret`);
    assert.deepEqual(got.data, m.data);
  });

  test('every MiPush code maps onto its outcome', async () => {
    const adapter = registry.adapter('xiaomi', 'app-1')!;
    for (const [code, kind] of Object.entries(EXPECTED)) {
      const m = message(em, 'xiaomi', `code${code}`);
      em.xiaomi.script({ kind: 'code', code }, { token: m.token, times: 1 });
      assert.deepEqual(await adapter.submit([m]), [{ kind, code }], code);
    }
  });

  test('a wrong AppSecret is refused (21301)', async () => {
    const c = em.appsConfig.apps[0]!.vendors.xiaomi!;
    const wrong = new XiaomiAdapter({ ...c, appSecret: 'not-the-secret' }, { ca: em.ca });
    assert.deepEqual(await wrong.submit([message(em, 'xiaomi', 'x')]), [{ kind: 'auth-failed', code: '21301' }]);
    await wrong.close();
  });

  test('identical messages go as one regId list; a dead regId is accepted and reported by receipt type 16', async () => {
    const shared = { title: 'Group', body: 'New', badge: 1, collapseId: 'conv-g', data: { conv_id: 'g' } };
    const batch = ['x1', 'x2'].map((s) => message(em, 'xiaomi', s, shared));
    em.xiaomi.deadTokens.add(batch[1]!.token);
    const outcomes = await registry.adapter('xiaomi', 'app-1')!.submit(batch);
    assert.deepEqual(
      outcomes.map((o) => o.kind),
      ['accepted', 'accepted'],
    );
    assert.equal((em.xiaomi.received[0]!.request as Record<string, string>).registration_id, batch.map((m) => m.token).join(','));
    const mine = () =>
      receiver.calls.filter((c) => c.body.includes(encodeURIComponent(batch[0]!.token)) || c.body.includes(encodeURIComponent(batch[1]!.token)));
    await receiver.until(() => mine().length >= 2);
    assert.ok(mine().every((c) => c.path === '/receipts/xiaomi?secret=s3cret'));
    const parsed = mine().flatMap((c) => registry.receiptParser('xiaomi')!.parseReceipt(c.body, String(c.headers['content-type'])));
    const byToken = new Map(parsed.map((r) => [r.token, r]));
    assert.equal(byToken.get(batch[0]!.token)!.status, 'delivered');
    assert.equal(byToken.get(batch[1]!.token)!.status, 'dead-token');
    assert.equal(byToken.get(batch[1]!.token)!.code, '16');
    assert.equal(byToken.get(batch[0]!.token)!.vendorMessageId, (outcomes[0] as { vendorMessageId: string }).vendorMessageId);
  });

  test('rate limit and daily quota', async () => {
    const adapter = registry.adapter('xiaomi', 'app-1')!;
    const a = message(em, 'xiaomi', 'rl');
    em.xiaomi.script({ kind: 'rate-limit' }, { token: a.token, times: 1 });
    assert.deepEqual(await adapter.submit([a]), [{ kind: 'rate-limited', code: '10027' }]);
    em.xiaomi.script({ kind: 'quota' }, { token: a.token, times: 1 });
    assert.deepEqual(await adapter.submit([a]), [{ kind: 'quota-exhausted', code: '10034' }]);
  });
});
