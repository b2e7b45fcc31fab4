import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { apnsIdOf, ApnsAdapter } from '../../../sinks/vendors/apns/adapter.ts';
import { ProviderToken } from '../../../sinks/vendors/apns/provider-token.ts';
import { VENDOR_USER_AGENT } from '../../../sinks/vendors/http.ts';
import type { ApnsTokenConfig } from '../../../sinks/vendors/apns/index.ts';
import type { VendorRegistry } from '../../../sinks/vendors/registry.ts';
import type { OutcomeKind } from '../../../processors/fan-out/vendor-port.ts';
import { APNS_REASON_STATUS } from '../../../emulators/apns.ts';
import type { StartedEmulators } from '../../../emulators/index.ts';
import { message, useEmulators } from './support.ts';

/** Apple's reasons and the outcome each must produce (docs/vendors.md, Sources). */
const EXPECTED: Record<string, OutcomeKind> = {
  BadCollapseId: 'payload-rejected',
  BadDeviceToken: 'dead-token',
  BadExpirationDate: 'payload-rejected',
  BadMessageId: 'payload-rejected',
  BadPriority: 'payload-rejected',
  BadTopic: 'permanent',
  DeviceTokenNotForTopic: 'dead-token',
  DuplicateHeaders: 'payload-rejected',
  IdleTimeout: 'retryable',
  InvalidPushType: 'permanent',
  MissingDeviceToken: 'permanent',
  MissingTopic: 'permanent',
  PayloadEmpty: 'payload-rejected',
  TopicDisallowed: 'dead-token',
  BadCertificate: 'auth-failed',
  BadCertificateEnvironment: 'auth-failed',
  Forbidden: 'permanent',
  InvalidProviderToken: 'auth-failed',
  MissingProviderToken: 'auth-failed',
  UnrelatedKeyIdInToken: 'auth-failed',
  BadEnvironmentKeyIdInToken: 'auth-failed',
  BadPath: 'permanent',
  MethodNotAllowed: 'permanent',
  Unregistered: 'dead-token',
  ExpiredToken: 'dead-token',
  PayloadTooLarge: 'payload-too-large',
  TooManyProviderTokenUpdates: 'rate-limited',
  TooManyRequests: 'rate-limited',
  InternalServerError: 'retryable',
  ServiceUnavailable: 'retryable',
  Shutdown: 'retryable',
};

describe('APNs adapter against the APNs emulator', () => {
  let em: StartedEmulators;
  let registry: VendorRegistry;
  const config = (): ApnsTokenConfig => em.appsConfig.apps[0]!.vendors.apns as ApnsTokenConfig;

  useEmulators(
    (env) => ({ em, registry } = env),
    () => ({ apps: ['app-1', 'app-2'] }),
  );

  test('an accepted push reaches the emulator with token, topic, collapse id, expiry, badge and apns-id', async () => {
    const m = message(em, 'apns', 'alice');
    const [outcome] = await registry.adapter('apns', 'app-1')!.submit([m]);
    assert.deepEqual(outcome, { kind: 'accepted', vendorMessageId: apnsIdOf(m.taskId) });
    const [got] = em.apns.accepted();
    const headers = got!.request as Record<string, string>;
    assert.equal(got!.token, m.token);
    assert.equal(got!.appId, 'app-1');
    assert.equal(got!.client, VENDOR_USER_AGENT, 'the emulator records which process sent the request');
    assert.equal(got!.collapseId, m.collapseId);
    assert.equal(headers['apns-topic'], 'com.example.app-1');
    assert.equal(headers['apns-push-type'], 'alert');
    assert.equal(headers['apns-priority'], '10');
    const expiresIn = Number(headers['apns-expiration']) - got!.at / 1000;
    assert.ok(expiresIn > 3598 && expiresIn <= 3600, `apns-expiration ${expiresIn} s ahead`);
    assert.equal(got!.title, 'Alice');
    assert.deepEqual(got!.data, { conv_id: 'conv-alice', seq: '42', msg_id: 'm-alice' });
  });

  test('every APNs reason maps onto its outcome', async () => {
    assert.deepEqual(
      Object.keys(EXPECTED).sort(),
      Object.keys(APNS_REASON_STATUS)
        .filter((r) => r !== 'ExpiredProviderToken')
        .sort(),
    );
    const adapter = registry.adapter('apns', 'app-1')!;
    for (const [reason, kind] of Object.entries(EXPECTED)) {
      const m = message(em, 'apns', `code-${reason}`);
      em.apns.script({ kind: 'code', code: reason }, { token: m.token, times: 1 });
      const [outcome] = await adapter.submit([m]);
      assert.equal(outcome!.kind, kind, reason);
      assert.equal((outcome as { code: string }).code, reason);
    }
  });

  test('a dead token answers 410 Unregistered and is reported dead', async () => {
    const m = message(em, 'apns', 'gone');
    em.apns.deadTokens.add(m.token);
    assert.deepEqual(await registry.adapter('apns', 'app-1')!.submit([m]), [{ kind: 'dead-token', code: 'Unregistered' }]);
  });

  test('Retry-After on a 429 is passed on, and TooManyRequests concerns that token only', async () => {
    const m = message(em, 'apns', 'busy');
    em.apns.script({ kind: 'rate-limit', retryAfterS: 7 }, { token: m.token, times: 1 });
    assert.deepEqual(await registry.adapter('apns', 'app-1')!.submit([m]), [
      { kind: 'rate-limited', code: 'TooManyRequests', retryAfterMs: 7000, perToken: true },
    ]);
  });

  test('the provider token is shared by apps of one key, reused for 50 minutes and never triggers TooManyProviderTokenUpdates', async () => {
    const a1 = registry.adapter('apns', 'app-1')!;
    const a2 = registry.adapter('apns', 'app-2')!;
    for (let minute = 0; minute <= 180; minute += 10) {
      const outcomes = [...(await a1.submit([message(em, 'apns', `t${minute}a`)])), ...(await a2.submit([message(em, 'apns', `t${minute}b`)]))];
      assert.deepEqual(
        outcomes.map((o) => o.kind),
        ['accepted', 'accepted'],
        `minute ${minute}`,
      );
      em.clock.advance(10 * 60_000);
    }
    const jwts = new Set(em.apns.received.map((r) => (r.request as Record<string, string>).authorization));
    // 190 simulated minutes with regeneration at 50 minutes: tokens at 0, 50, 100, 150.
    assert.equal(jwts.size, 4);
  });

  test('ExpiredProviderToken: a new token on a new connection, resent once', async () => {
    em.clock.advance(21 * 60_000); // past the 20-minute floor, so the token may be regenerated
    const adapter = registry.adapter('apns', 'app-1')!;
    await adapter.submit([message(em, 'apns', 'warm')]);
    em.clock.advance(21 * 60_000);
    const m = message(em, 'apns', 'expired');
    em.apns.script({ kind: 'expired-auth' }, { token: m.token, times: 1 });
    assert.equal((await adapter.submit([m]))[0]!.kind, 'accepted');
    const tries = em.apns.received.filter((r) => r.token === m.token);
    assert.deepEqual(
      tries.map((r) => r.answer),
      ['ExpiredProviderToken', 'accepted'],
    );
    assert.notEqual((tries[0]!.request as Record<string, string>).authorization, (tries[1]!.request as Record<string, string>).authorization);
    em.apns.script({ kind: 'expired-auth' }, { token: m.token, times: 2 });
    em.clock.advance(21 * 60_000);
    assert.deepEqual(await adapter.submit([m]), [{ kind: 'auth-failed', code: 'ExpiredProviderToken' }]);
  });

  test('the emulator refuses a token older than an hour and one rotated within 20 minutes on a connection', async () => {
    const c = config();
    const stale = new ApnsAdapter(c, {
      providerToken: new ProviderToken({ teamId: c.teamId, keyId: c.keyId, privateKey: c.privateKey, now: () => em.clock.now() - 61 * 60_000 }),
      ca: em.ca,
      now: () => em.clock.now(),
    });
    assert.deepEqual(await stale.submit([message(em, 'apns', 'stale')]), [{ kind: 'auth-failed', code: 'ExpiredProviderToken' }]);
    await stale.close();
    const hasty = new ApnsAdapter(
      { ...c, connections: 1 },
      {
        providerToken: new ProviderToken({ teamId: c.teamId, keyId: c.keyId, privateKey: c.privateKey, refreshAfterMs: 1000, now: () => em.clock.now() }),
        ca: em.ca,
        now: () => em.clock.now(),
      },
    );
    assert.equal((await hasty.submit([message(em, 'apns', 'h1')]))[0]!.kind, 'accepted');
    em.clock.advance(2000);
    assert.deepEqual(await hasty.submit([message(em, 'apns', 'h2')]), [{ kind: 'rate-limited', code: 'TooManyProviderTokenUpdates' }]);
    await hasty.close();
  });

  test('a key of another team is refused as InvalidProviderToken', async () => {
    const c = config();
    const forged = new ApnsAdapter(c, {
      providerToken: new ProviderToken({ teamId: 'OTHERTEAM1', keyId: c.keyId, privateKey: c.privateKey, now: () => em.clock.now() }),
      ca: em.ca,
    });
    assert.deepEqual(await forged.submit([message(em, 'apns', 'forged')]), [{ kind: 'auth-failed', code: 'InvalidProviderToken' }]);
    await forged.close();
  });

  test('a token once verified is not trusted blindly: on the one connection, the same token with its signature altered is refused', async () => {
    const c = config();
    const real = new ProviderToken({ teamId: c.teamId, keyId: c.keyId, privateKey: c.privateKey, now: () => em.clock.now() });
    let tamper = false;
    /** The genuine token first, then the same header and claims with one signature byte changed. */
    class Tampering extends ProviderToken {
      override current(): string {
        const jwt = real.current();
        if (!tamper) return jwt;
        const [head, claims, signature] = jwt.split('.');
        const bytes = Buffer.from(signature!, 'base64url');
        bytes[10] = bytes[10]! ^ 0xff;
        return `${head}.${claims}.${bytes.toString('base64url')}`;
      }
    }
    const adapter = new ApnsAdapter(
      { ...c, connections: 1 },
      { providerToken: new Tampering({ teamId: c.teamId, keyId: c.keyId, privateKey: c.privateKey }), ca: em.ca, now: () => em.clock.now() },
    );
    assert.equal((await adapter.submit([message(em, 'apns', 'genuine')]))[0]!.kind, 'accepted');
    tamper = true;
    assert.deepEqual(await adapter.submit([message(em, 'apns', 'tampered')]), [{ kind: 'auth-failed', code: 'InvalidProviderToken' }]);
    tamper = false;
    assert.equal((await adapter.submit([message(em, 'apns', 'genuine-again')]))[0]!.kind, 'accepted', 'the genuine token still works there');
    await adapter.close();
  });

  test('GOAWAY mid-stream: the refused stream is resent on a new connection and nothing is lost or doubled', async () => {
    const adapter = registry.adapter('apns', 'app-1')!;
    const batch = Array.from({ length: 30 }, (_, i) => message(em, 'apns', `burst${i}`));
    em.apns.script({ kind: 'goaway' }, { token: batch[7]!.token, times: 1 });
    const outcomes = await adapter.submit(batch);
    assert.deepEqual(
      outcomes.map((o) => o.kind),
      batch.map(() => 'accepted'),
    );
    assert.equal(em.apns.goaways, 1);
    const accepted = em.apns
      .accepted()
      .map((r) => r.token)
      .sort();
    assert.deepEqual(accepted, batch.map((m) => m.token).sort());
  });

  test('a long body is cut to fit 4096 bytes, VoIP keeps it within 5120; data that leaves no room is refused before sending', async () => {
    const adapter = registry.adapter('apns', 'app-1')!;
    const big = message(em, 'apns', 'big', { data: { blob: 'x'.repeat(4100) } });
    assert.ok(adapter.payloadBytes(big) > adapter.maxPayloadBytes);
    assert.deepEqual(await adapter.submit([big]), [{ kind: 'payload-too-large', code: 'PayloadTooLarge' }]);
    assert.equal(em.apns.received.length, 0);
    const long = message(em, 'apns', 'long', { body: 'x'.repeat(4200) });
    assert.equal((await adapter.submit([long]))[0]!.kind, 'accepted');
    const cut = em.apns.accepted()[0]!;
    assert.ok(cut.body!.endsWith('…') && cut.body!.length < 4096, 'the body is cut with an ellipsis');
    assert.ok(adapter.payloadBytes(long) <= 4096);
    const voip = new ApnsAdapter(
      { ...config(), pushType: 'voip' },
      { providerToken: new ProviderToken({ ...config(), now: () => em.clock.now() }), ca: em.ca },
    );
    assert.equal(voip.maxPayloadBytes, 5120);
    assert.equal((await voip.submit([long]))[0]!.kind, 'accepted');
    const whole = em.apns.accepted()[1]!;
    assert.equal(whole.body, long.body, 'within 5120 bytes the body is sent whole');
    assert.equal((whole.request as Record<string, string>)['apns-topic'], 'com.example.app-1.voip');
    await voip.close();
  });

  test('TLS is verified: without the test CA nothing is sent', async () => {
    const c = config();
    const untrusting = new ApnsAdapter(c, { providerToken: new ProviderToken({ ...c, now: () => em.clock.now() }) });
    const [outcome] = await untrusting.submit([message(em, 'apns', 'tls')]);
    // Not sent (the vendor cannot have it); a retryAfterMs may say when the next connection is tried.
    assert.deepEqual({ kind: outcome!.kind, code: 'code' in outcome! ? outcome.code : undefined }, { kind: 'retryable', code: 'CONNECTION_LOST' });
    assert.equal(em.apns.received.length, 0);
    await untrusting.close();
  });
});
