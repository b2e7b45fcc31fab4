import { createHash } from 'node:crypto';
import { ConfigError } from '../../../common/errors.ts';
import type { VendorModule } from '../module.ts';
import { asGiven, NO_CLASSES } from '../module.ts';
import { HTTP2_CONNECTIONS, type ConfigReader, type RawConfig, type VendorCommon } from '../vendor-config.ts';
import { ApnsAdapter } from './adapter.ts';
import { bundleIdOf, readClientCertificate, type ApnsClientCertificate } from './certificate.ts';
import { ProviderToken } from './provider-token.ts';

/** What every APNs entry has, whichever way it authenticates. */
interface ApnsBase extends VendorCommon {
  /** The app's bundle id, sent as apns-topic. With certificate auth, the certificate's bundle id by default. */
  readonly topic: string;
  /** `production` (api.push.apple.com) or `sandbox` (api.sandbox.push.apple.com). Default production. */
  readonly environment: 'production' | 'sandbox';
  /** apns-push-type. Default `alert`. */
  readonly pushType: 'alert' | 'background' | 'voip';
}

/** Token auth: an ES256 provider token from the team's `.p8` key, on every request. */
export interface ApnsTokenConfig extends ApnsBase {
  readonly auth: 'token';
  readonly teamId: string;
  readonly keyId: string;
  /** PKCS#8 PEM of the .p8 key (from `privateKey` or `privateKeyFile`). */
  readonly privateKey: string;
  /** Regenerate the provider token after this many minutes (20–60). Default 50. */
  readonly tokenRefreshMinutes: number;
}

/** Certificate auth: the app's provider certificate as the TLS client certificate of its connections; no authorization header. */
export interface ApnsCertificateConfig extends ApnsBase {
  readonly auth: 'certificate';
  readonly certificate: ApnsClientCertificate;
}

/** An app's APNs entry: token or certificate auth, exactly one (docs/vendors.md). */
export type ApnsAppConfig = ApnsTokenConfig | ApnsCertificateConfig;

const TOKEN_FIELDS = ['teamId', 'keyId', 'privateKey', 'tokenRefreshMinutes'] as const;

/** Which auth an entry asks for; a mix of both kinds is refused naming the first field of the second kind. */
function authOf(read: ConfigReader, o: RawConfig, key: string): 'token' | 'certificate' {
  const token = TOKEN_FIELDS.find((f) => read.has(o, f));
  const certificate = (['certificate', 'key', 'p12File', 'passphrase'] as const).find((f) => (f === 'p12File' ? o.p12File !== undefined : read.has(o, f)));
  if (token !== undefined && certificate !== undefined)
    throw new ConfigError(
      `${key}.${certificate}`,
      `token auth (teamId, keyId, privateKey) and certificate auth (certificate and key, or p12File) exclude each other; ${token} is given too`,
    );
  return certificate === undefined ? 'token' : 'certificate';
}

function parseApns(read: ConfigReader, o: RawConfig, key: string): ApnsAppConfig {
  const base = {
    ...read.common(o, key, HTTP2_CONNECTIONS),
    environment: read.oneOf(o, 'environment', key, 'production', ['production', 'sandbox'] as const),
    pushType: read.oneOf(o, 'pushType', key, 'alert', ['alert', 'background', 'voip'] as const),
  };
  if (authOf(read, o, key) === 'token')
    return {
      ...base,
      auth: 'token',
      topic: read.str(o, 'topic', key),
      teamId: read.str(o, 'teamId', key),
      keyId: read.str(o, 'keyId', key),
      privateKey: read.secret(o, 'privateKey', key),
      tokenRefreshMinutes: read.int(o, 'tokenRefreshMinutes', key, 50, 20, 60),
    };
  const { certificate, x509 } = readClientCertificate(read, o, key);
  const bundle = bundleIdOf(x509);
  const topic = read.optStr(o, 'topic', key) ?? bundle;
  if (topic === undefined) throw new ConfigError(`${key}.topic`, 'required: the certificate names no bundle id');
  // A VoIP certificate may name the VoIP topic itself.
  if (bundle !== undefined && bundle !== topic && bundle !== `${topic}.voip`)
    throw new ConfigError(`${key}.topic`, `the certificate is for ${JSON.stringify(bundle)}, not ${JSON.stringify(topic)}`);
  return { ...base, auth: 'certificate', topic, certificate };
}

/** A short digest of a key, so that a rotated key under the same key id gets a provider token of its own. */
const digestOf = (text: string) => createHash('sha256').update(text).digest('hex').slice(0, 16);

/** Apple Push Notification service: iOS, iPadOS and macOS devices; no receipts. */
export const APNS: VendorModule<'apns', ApnsAppConfig, null> = {
  vendor: 'apns',
  name: 'APNs',
  parseConfig: parseApns,
  createAdapter: (c, ctx) =>
    c.auth === 'certificate'
      ? new ApnsAdapter(c, { ca: ctx.ca, now: ctx.now })
      : new ApnsAdapter(c, {
          // One provider token per (team, key): every connection of every app using that key shares it.
          providerToken: ctx.shared(
            `apns/${c.teamId}/${c.keyId}/${digestOf(c.privateKey)}`,
            () =>
              new ProviderToken({ teamId: c.teamId, keyId: c.keyId, privateKey: c.privateKey, refreshAfterMs: c.tokenRefreshMinutes * 60_000, now: ctx.now }),
          ),
          ca: ctx.ca,
          now: ctx.now,
        }),
  // The provider certificate expires (a year after issue); a .p8 token key does not.
  credentialExpiries: (c) => (c.auth === 'certificate' ? [{ credential: 'certificate', expiresAtMs: c.certificate.notAfterMs }] : []),
  channels: { platforms: ['ios', 'ipados', 'macos'], makers: [], classes: NO_CLASSES },
  sentText: asGiven,
  receipts: null,
};
