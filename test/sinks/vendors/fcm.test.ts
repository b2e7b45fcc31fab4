import type { VendorJson } from '../../../emulators/common.ts';
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { describe, test } from 'node:test';
import { FcmAdapter } from '../../../sinks/vendors/fcm/adapter.ts';
import type { VendorRegistry } from '../../../sinks/vendors/registry.ts';
import type { SubmitOutcome } from '../../../processors/fan-out/vendor-port.ts';
import type { Fault, StartedEmulators } from '../../../emulators/index.ts';
import { message, useEmulators } from './support.ts';

/** Each FCM error shape (docs/vendors.md, Sources) and the outcome it must produce. */
const CASES: Array<[string, Fault, SubmitOutcome]> = [
  ['UNREGISTERED', { kind: 'code', code: 'UNREGISTERED' }, { kind: 'dead-token', code: 'UNREGISTERED' }],
  ['SENDER_ID_MISMATCH', { kind: 'code', code: 'SENDER_ID_MISMATCH' }, { kind: 'dead-token', code: 'SENDER_ID_MISMATCH' }],
  ['INVALID_ARGUMENT on the token', { kind: 'code', code: 'INVALID_ARGUMENT', variant: 'token' }, { kind: 'dead-token', code: 'INVALID_ARGUMENT' }],
  ['INVALID_ARGUMENT elsewhere', { kind: 'code', code: 'INVALID_ARGUMENT' }, { kind: 'payload-rejected', code: 'INVALID_ARGUMENT' }],
  ['QUOTA_EXCEEDED with Retry-After', { kind: 'rate-limit', retryAfterS: 30 }, { kind: 'rate-limited', code: 'QUOTA_EXCEEDED', retryAfterMs: 30_000 }],
  ['429 without an FcmError detail', { kind: 'code', code: 'RESOURCE_EXHAUSTED', variant: 'no-detail' }, { kind: 'rate-limited', code: 'RESOURCE_EXHAUSTED' }],
  ['UNAVAILABLE with Retry-After', { kind: 'server-error', retryAfterS: 2 }, { kind: 'retryable', code: 'UNAVAILABLE', retryAfterMs: 2000 }],
  ['INTERNAL', { kind: 'code', code: 'INTERNAL' }, { kind: 'retryable', code: 'INTERNAL' }],
  ['THIRD_PARTY_AUTH_ERROR', { kind: 'code', code: 'THIRD_PARTY_AUTH_ERROR' }, { kind: 'permanent', code: 'THIRD_PARTY_AUTH_ERROR' }],
  ['UNSPECIFIED_ERROR', { kind: 'code', code: 'UNSPECIFIED_ERROR' }, { kind: 'permanent', code: 'UNSPECIFIED_ERROR' }],
];

describe('FCM adapter against the Google OAuth + FCM v1 emulator', () => {
  let em: StartedEmulators;
  let registry: VendorRegistry;

  useEmulators((env) => ({ em, registry } = env));

  test('an accepted push carries token, collapse key, tag, badge and string data; the bearer is minted once and cached', async () => {
    const adapter = registry.adapter('fcm', 'app-1')!;
    const minted = em.fcm.tokensMinted;
    const batch = [1, 2, 3].map((i) => message(em, 'fcm', `bob${i}`));
    const outcomes = await adapter.submit(batch);
    assert.ok(outcomes.every((o) => o.kind === 'accepted' && o.vendorMessageId.startsWith('projects/project-app-1/messages/')));
    assert.ok(em.fcm.tokensMinted - minted <= 1);
    const got = em.fcm.accepted().find((r) => r.token === batch[0]!.token)!;
    const android = (got.request as { android: VendorJson }).android;
    assert.equal(got.collapseId, 'conv-bob1');
    assert.equal(android.notification.tag, 'conv-bob1');
    assert.equal(android.notification.notification_count, 4);
    assert.deepEqual(got.data, { conv_id: 'conv-bob1', seq: '42', msg_id: 'm-bob1' });
  });

  test('every FCM error maps onto its outcome', async () => {
    const adapter = registry.adapter('fcm', 'app-1')!;
    for (const [name, fault, expected] of CASES) {
      const m = message(em, 'fcm', name.replace(/\W/g, ''));
      em.fcm.script(fault, { token: m.token, times: 1 });
      assert.deepEqual(await adapter.submit([m]), [expected], name);
    }
  });

  test('a dead token answers 404 UNREGISTERED', async () => {
    const m = message(em, 'fcm', 'gone');
    em.fcm.deadTokens.add(m.token);
    assert.deepEqual(await registry.adapter('fcm', 'app-1')!.submit([m]), [{ kind: 'dead-token', code: 'UNREGISTERED' }]);
  });

  test('401 UNAUTHENTICATED: one new bearer, one resend; twice → auth-failed', async () => {
    const adapter = registry.adapter('fcm', 'app-1')!;
    await adapter.submit([message(em, 'fcm', 'warm')]);
    const minted = em.fcm.tokensMinted;
    const m = message(em, 'fcm', 'expired');
    em.fcm.script({ kind: 'expired-auth' }, { token: m.token, times: 1 });
    assert.equal((await adapter.submit([m]))[0]!.kind, 'accepted');
    assert.equal(em.fcm.tokensMinted, minted + 1);
    em.fcm.script({ kind: 'expired-auth' }, { token: m.token, times: 2 });
    assert.deepEqual(await adapter.submit([m]), [{ kind: 'auth-failed', code: 'UNAUTHENTICATED' }]);
  });

  test('the bearer is refreshed before it expires (about 1 h)', async () => {
    const adapter = registry.adapter('fcm', 'app-1')!;
    await adapter.submit([message(em, 'fcm', 'a')]);
    const minted = em.fcm.tokensMinted;
    em.clock.advance(50 * 60_000);
    await adapter.submit([message(em, 'fcm', 'b')]);
    assert.equal(em.fcm.tokensMinted, minted);
    em.clock.advance(6 * 60_000); // 56 min: inside the 5-minute refresh margin
    assert.equal((await adapter.submit([message(em, 'fcm', 'c')]))[0]!.kind, 'accepted');
    assert.equal(em.fcm.tokensMinted, minted + 1);
    assert.equal(em.fcm.received.filter((r) => r.answer !== 'accepted').length, 0);
  });

  test('an assertion signed with a key Google does not know is refused at the token endpoint', async () => {
    const c = em.appsConfig.apps[0]!.vendors.fcm!;
    const otherKey = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
    const forged = new FcmAdapter({ ...c, serviceAccount: { ...c.serviceAccount, private_key: otherKey } }, { ca: em.ca, now: () => em.clock.now() });
    assert.deepEqual(await forged.submit([message(em, 'fcm', 'forged')]), [{ kind: 'auth-failed', code: 'invalid_grant' }]);
    assert.equal(em.fcm.received.length, 0);
    await forged.close();
  });

  test('payloads over the limit are refused before sending', async () => {
    const adapter = registry.adapter('fcm', 'app-1')!;
    const big = message(em, 'fcm', 'big', { data: { blob: 'x'.repeat(4000) } });
    assert.deepEqual(await adapter.submit([big]), [{ kind: 'payload-too-large', code: 'MESSAGE_TOO_BIG' }]);
    assert.equal(em.fcm.received.length, 0);
  });
});
