/**
 * APNs certificate auth (docs/vendors.md, "APNs certificate auth") against the APNs emulator, which
 * checks the client certificate as APNs does: issued by the CA it trusts, valid by its clock, marked
 * for its environment, its bundle id the apns-topic. And the apps file's rules for it, and the
 * expiry gauge and warning.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, beforeEach, describe, test } from 'node:test';
import { ConfigError } from '../../../common/errors.ts';
import type { Logger } from '../../../common/log.ts';
import { startEmulators, type StartedEmulators } from '../../../emulators/index.ts';
import { foreignCertificateAuthority, issuePushCertificate, type PushCertificate } from '../../../emulators/tls.ts';
import { PipelineMetrics } from '../../../sinks/metrics/pipeline-metrics.ts';
import { ApnsAdapter, CERTIFICATE_EXPIRED } from '../../../sinks/vendors/apns/adapter.ts';
import type { ApnsCertificateConfig } from '../../../sinks/vendors/apns/index.ts';
import { loadAppsConfig, parseAppsConfig, type AppsConfig } from '../../../sinks/vendors/apps-config.ts';
import { CredentialExpiryWatch } from '../../../sinks/vendors/credential-expiry.ts';
import { createVendorRegistry, type ReloadableVendorRegistry } from '../../../sinks/vendors/registry.ts';
import { message } from './support.ts';

const DAY = 86_400_000;

/** An apps file with one app whose APNs entry is `apns` (plus the emulator's base URL and CA). */
function appsWith(em: StartedEmulators, apns: Record<string, unknown>, appId = 'app-cert'): AppsConfig {
  return parseAppsConfig({ ca: em.ca, apps: [{ appId, vendors: { apns: { baseUrl: em.baseUrls.apns, environment: 'sandbox', ...apns } } }] });
}

const pem = (c: PushCertificate) => ({ certificate: c.cert, key: c.key });

function configError(run: () => unknown): ConfigError {
  try {
    run();
  } catch (error) {
    assert.ok(error instanceof ConfigError, String(error));
    return error;
  }
  assert.fail('expected a ConfigError');
}

describe('APNs certificate auth against the APNs emulator', () => {
  let em: StartedEmulators;
  const registries: ReloadableVendorRegistry[] = [];
  const registry = (config: AppsConfig, now?: () => number) => {
    const r = createVendorRegistry(config, now ? { now } : {});
    registries.push(r);
    return r;
  };

  before(async () => {
    em = await startEmulators({ apps: ['app-1', 'app-cert'], apnsCertificateApps: ['app-cert'] });
  });
  after(async () => {
    await Promise.all(registries.map((r) => r.close()));
    await em.close();
  });
  beforeEach(() => em.reset());

  test('a certificate the emulator issued is accepted: no authorization header, the push recorded under its app, on the pool of connections', async () => {
    const vendors = registry(em.appsConfig);
    assert.equal(em.appsConfig.apps[1]!.vendors.apns!.auth, 'certificate');
    assert.equal(em.appsConfig.apps[1]!.vendors.apns!.topic, 'com.example.app-cert', 'the topic is the certificate’s bundle id');
    const adapter = vendors.adapter('apns', 'app-cert')!;
    const batch = Array.from({ length: 6 }, (_, i) => message(em, 'apns', `cert${i}`, { appId: 'app-cert' }));
    const outcomes = await adapter.submit(batch);
    assert.deepEqual(
      outcomes.map((o) => o.kind),
      batch.map(() => 'accepted'),
    );
    const got = em.apns.accepted();
    assert.deepEqual(new Set(got.map((r) => r.appId)), new Set(['app-cert']));
    for (const r of got) {
      const headers = r.request as Record<string, string>;
      assert.equal(headers.authorization, undefined, 'certificate auth sends no provider token');
      assert.equal(headers['apns-topic'], 'com.example.app-cert');
    }
    assert.equal(em.apns.certificateConnections('com.example.app-cert'), 2, 'the pool’s two connections each present the certificate');
    // The token app beside it on the same emulator is unaffected.
    assert.equal((await vendors.adapter('apns', 'app-1')!.submit([message(em, 'apns', 'token-app')]))[0]!.kind, 'accepted');
  });

  test('GOAWAY on a certificate connection: the refused stream is resent on a new connection, nothing lost or doubled', async () => {
    const adapter = registry(em.appsConfig).adapter('apns', 'app-cert')!;
    const batch = Array.from({ length: 20 }, (_, i) => message(em, 'apns', `goaway${i}`, { appId: 'app-cert' }));
    em.apns.script({ kind: 'goaway' }, { token: batch[5]!.token, times: 1 });
    const outcomes = await adapter.submit(batch);
    assert.deepEqual(
      outcomes.map((o) => o.kind),
      batch.map(() => 'accepted'),
    );
    assert.equal(em.apns.goaways, 1);
    assert.deepEqual(
      em.apns
        .accepted()
        .map((r) => r.token)
        .sort(),
      batch.map((m) => m.token).sort(),
    );
  });

  test('a PKCS#12 file with its passphrase (from a file) is accepted', async () => {
    const cert = await em.apns.issueCertificate('app-p12', { p12Passphrase: 'correct horse battery' });
    const dir = mkdtempSync(join(tmpdir(), 'apns-p12-'));
    writeFileSync(join(dir, 'push.p12'), cert.p12!);
    writeFileSync(join(dir, 'push.pass'), 'correct horse battery\n');
    writeFileSync(
      join(dir, 'apps.json'),
      JSON.stringify({
        ca: em.ca,
        apps: [{ appId: 'app-p12', vendors: { apns: { baseUrl: em.baseUrls.apns, p12File: 'push.p12', passphraseFile: 'push.pass' } } }],
      }),
    );
    const config = loadAppsConfig(join(dir, 'apps.json'));
    const outcomes = await registry(config)
      .adapter('apns', 'app-p12')!
      .submit([message(em, 'apns', 'p12', { appId: 'app-p12' })]);
    assert.equal(outcomes[0]!.kind, 'accepted');
    assert.equal(em.apns.accepted()[0]!.appId, 'app-p12');
  });

  test('a certificate of another CA is refused: 403 BadCertificate, an auth failure that never counts against the token', async () => {
    const foreign = await issuePushCertificate(await foreignCertificateAuthority(), { topic: 'com.example.app-cert' });
    const vendors = registry(appsWith(em, pem(foreign)));
    const outcomes = await vendors.adapter('apns', 'app-cert')!.submit([message(em, 'apns', 'foreign')]);
    assert.deepEqual(outcomes, [{ kind: 'auth-failed', code: 'BadCertificate' }]);
    assert.deepEqual(
      em.apns.received.map((r) => r.answer),
      ['BadCertificate'],
    );
  });

  test('an expired certificate is refused by APNs (BadCertificate), and by the adapter itself before it connects', async () => {
    const expired = await em.apns.issueCertificate('app-cert', { notBeforeMs: Date.now() - 400 * DAY, notAfterMs: Date.now() - DAY });
    const config = appsWith(em, pem(expired));
    // An adapter whose clock is behind (it believes the certificate valid) reaches APNs, which refuses it.
    const behind = registry(config, () => Date.now() - 2 * DAY);
    assert.deepEqual(await behind.adapter('apns', 'app-cert')!.submit([message(em, 'apns', 'expired')]), [{ kind: 'auth-failed', code: 'BadCertificate' }]);
    assert.deepEqual(
      em.apns.received.map((r) => r.answer),
      ['BadCertificate'],
    );
    // With the right clock the adapter refuses it without a request.
    em.reset();
    assert.deepEqual(
      await registry(config)
        .adapter('apns', 'app-cert')!
        .submit([message(em, 'apns', 'expired-local')]),
      [{ kind: 'auth-failed', code: CERTIFICATE_EXPIRED }],
    );
    assert.equal(em.apns.received.length, 0);
  });

  test('a certificate that expires while its connection is open is refused from then on', async () => {
    const shortLived = await em.apns.issueCertificate('app-cert', { notAfterMs: Date.now() + DAY });
    const adapter = registry(appsWith(em, pem(shortLived)), () => Date.now()).adapter('apns', 'app-cert')!;
    assert.equal((await adapter.submit([message(em, 'apns', 'before')]))[0]!.kind, 'accepted');
    em.clock.advance(2 * DAY);
    try {
      assert.deepEqual(await adapter.submit([message(em, 'apns', 'after')]), [{ kind: 'auth-failed', code: 'BadCertificate' }]);
    } finally {
      em.clock.advance(-2 * DAY);
    }
  });

  test('a sandbox-only certificate on the production endpoint: BadCertificateEnvironment; a topic the certificate does not name: TopicDisallowed', async () => {
    const sandboxOnly = await em.apns.issueCertificate('app-cert', { environments: ['sandbox'] });
    const vendors = registry(appsWith(em, pem(sandboxOnly)));
    assert.deepEqual(await vendors.adapter('apns', 'app-cert')!.submit([message(em, 'apns', 'env')]), [
      { kind: 'auth-failed', code: 'BadCertificateEnvironment' },
    ]);
    // The apps file refuses a topic the certificate does not name; an adapter given one anyway meets APNs' refusal.
    const cert = await em.apns.issueCertificate('app-cert');
    const c = appsWith(em, pem(cert)).apps[0]!.vendors.apns as ApnsCertificateConfig;
    const wrongTopic = new ApnsAdapter({ ...c, topic: 'com.example.someone-else' }, { ca: em.ca });
    try {
      assert.deepEqual(await wrongTopic.submit([message(em, 'apns', 'topic')]), [{ kind: 'dead-token', code: 'TopicDisallowed' }]);
    } finally {
      await wrongTopic.close();
    }
  });

  test('push_credential_expiry_seconds shows the seconds left; under the threshold a warning names app, vendor and expiry, never the certificate', async () => {
    const notAfterMs = Date.now() + 10 * DAY;
    const soon = await em.apns.issueCertificate('app-cert', { notAfterMs });
    const config = parseAppsConfig({
      ca: em.ca,
      apps: [
        { appId: 'app-cert', vendors: { apns: { baseUrl: em.baseUrls.apns, ...pem(soon) } } },
        { appId: 'app-token', vendors: { apns: em.rawAppsConfig.apps[0]!.vendors.apns! } },
      ],
    });
    const metrics = new PipelineMetrics();
    const lines: Array<{ level: string; message: string; fields: object | undefined }> = [];
    const logger: Logger = {
      debug: () => undefined,
      info: (message, fields) => lines.push({ level: 'info', message, fields }),
      warn: (message, fields) => lines.push({ level: 'warn', message, fields }),
      error: (message, fields) => lines.push({ level: 'error', message, fields }),
      child: () => logger,
    };
    const now = Date.now();
    const watch = new CredentialExpiryWatch({ gauge: metrics.credentialExpiry, logger, warnDays: 30, now: () => now });
    metrics.registry.onCollect(() => watch.collect());
    watch.watch(config);
    const body = metrics.registry.render();
    const seconds = Number(/^push_credential_expiry_seconds\{app="app-cert",credential="certificate",vendor="apns"\} (-?\d+)$/m.exec(body)?.[1]);
    const expected = Math.round((Math.floor(notAfterMs / 1000) * 1000 - now) / 1000);
    assert.ok(Math.abs(seconds - expected) <= 1, `${seconds} s left, expected about ${expected}`);
    assert.doesNotMatch(body, /app="app-token"/, 'a token key carries no expiry');
    assert.equal(lines.length, 1);
    assert.equal(lines[0]!.level, 'warn');
    assert.deepEqual(
      { ...(lines[0]!.fields as Record<string, unknown>), expiresAt: undefined },
      {
        app: 'app-cert',
        vendor: 'apns',
        kind: 'certificate',
        daysLeft: 9,
        expiresAt: undefined,
      },
    );
    assert.doesNotMatch(JSON.stringify(lines), /BEGIN|PRIVATE/, 'no certificate or key in the log');
    // An expired one is an error; a later version without the app drops its series.
    const expired = new CredentialExpiryWatch({ gauge: metrics.credentialExpiry, logger, warnDays: 30, now: () => notAfterMs + 1000 });
    expired.watch(config);
    assert.equal(lines.at(-1)!.level, 'error');
    watch.watch(parseAppsConfig({ apps: [{ appId: 'app-token', vendors: { apns: em.rawAppsConfig.apps[0]!.vendors.apns! } }] }));
    assert.doesNotMatch(metrics.registry.render(), /push_credential_expiry_seconds\{/);
  });
});

describe('APNs certificate auth in the apps file', () => {
  let em: StartedEmulators;
  let cert: PushCertificate;
  let other: PushCertificate;
  before(async () => {
    em = await startEmulators({ apps: ['app-1'] });
    cert = await em.apns.issueCertificate('app-cert', { p12Passphrase: 'pass-1' });
    other = await em.apns.issueCertificate('app-other');
  });
  after(() => em.close());

  const refusal = (apns: Record<string, unknown>) => configError(() => appsWith(em, apns)).key;

  test('exactly one auth kind: a mix, a half or a stray passphrase is refused naming the field', () => {
    const token = em.rawAppsConfig.apps[0]!.vendors.apns!;
    assert.equal(refusal({ ...pem(cert), teamId: token.teamId, keyId: token.keyId }), 'apps[0].vendors.apns.certificate');
    assert.equal(refusal({ privateKey: token.privateKey, key: cert.key }), 'apps[0].vendors.apns.key');
    assert.equal(refusal({ ...pem(cert), tokenRefreshMinutes: 30 }), 'apps[0].vendors.apns.certificate');
    assert.equal(refusal({ certificate: cert.cert }), 'apps[0].vendors.apns.key');
    assert.equal(refusal({ key: cert.key }), 'apps[0].vendors.apns.certificate');
    assert.equal(refusal({ ...pem(cert), passphrase: 'x' }), 'apps[0].vendors.apns.passphrase');
  });

  test('the certificate must parse, the key must be its key, a PKCS#12 must open with its passphrase, the topic must be the certificate’s', () => {
    assert.equal(refusal({ certificate: 'not a certificate', key: cert.key }), 'apps[0].vendors.apns.certificate');
    assert.equal(refusal({ certificate: cert.cert, key: 'not a key' }), 'apps[0].vendors.apns.key');
    assert.equal(refusal({ certificate: cert.cert, key: other.key }), 'apps[0].vendors.apns.key');
    assert.equal(refusal({ ...pem(cert), topic: 'com.example.someone-else' }), 'apps[0].vendors.apns.topic');
    const dir = mkdtempSync(join(tmpdir(), 'apns-p12-'));
    writeFileSync(join(dir, 'push.p12'), cert.p12!);
    writeFileSync(join(dir, 'junk.p12'), 'not pkcs12');
    const p12 = (entry: Record<string, unknown>) => {
      writeFileSync(join(dir, 'apps.json'), JSON.stringify({ apps: [{ appId: 'a', vendors: { apns: entry } }] }));
      return configError(() => loadAppsConfig(join(dir, 'apps.json'))).key;
    };
    assert.equal(p12({ p12File: 'push.p12', passphrase: 'wrong' }), 'apps[0].vendors.apns.passphrase');
    assert.equal(p12({ p12File: 'junk.p12', passphrase: 'pass-1' }), 'apps[0].vendors.apns.p12File');
    assert.equal(p12({ p12File: 'push.p12', passphrase: 'pass-1', certificate: cert.cert }), 'apps[0].vendors.apns.certificate');
    assert.equal(p12({ p12File: 'missing.p12' }), 'apps[0].vendors.apns.p12File');
    writeFileSync(join(dir, 'apps.json'), JSON.stringify({ apps: [{ appId: 'a', vendors: { apns: { p12File: 'push.p12', passphrase: 'pass-1' } } }] }));
    const parsed = loadAppsConfig(join(dir, 'apps.json')).apps[0]!.vendors.apns!;
    assert.equal(parsed.auth, 'certificate');
    assert.equal(parsed.topic, 'com.example.app-cert');
  });
});
