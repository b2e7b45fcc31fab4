import { createPrivateKey, X509Certificate, type KeyObject } from 'node:crypto';
import { createSecureContext, type SecureContext } from 'node:tls';
import { ConfigError } from '../../../common/errors.ts';
import type { ConfigReader, RawConfig } from '../vendor-config.ts';

/**
 * An APNs provider certificate with its key (docs/vendors.md, "APNs certificate auth"): PEM, or a
 * PKCS#12 bundle kept as base64 (the parsed apps file is frozen, and a frozen Buffer cannot be).
 * `notAfterMs` is the certificate's expiry, for push_credential_expiry_seconds.
 */
export type ApnsClientCertificate =
  | { readonly format: 'pem'; readonly cert: string; readonly key: string; readonly notAfterMs: number }
  | { readonly format: 'pkcs12'; readonly pfx: string; readonly passphrase?: string; readonly notAfterMs: number };

/** OIDs Apple's push certificates carry for the environments they may connect to (Apple WWDR certificate policy). */
export const APNS_ENVIRONMENT_OIDS = { sandbox: '1.2.840.113635.100.6.3.1', production: '1.2.840.113635.100.6.3.2' } as const;

/**
 * The bundle id a push certificate is for: Apple's subject carries it as UID, and in the CN after
 * "Apple Push Services: " (or the older "Apple Production/Development IOS Push Services: ").
 */
export function bundleIdOf(cert: X509Certificate): string | undefined {
  const fields = new Map<string, string>();
  for (const line of cert.subject.split('\n')) {
    const at = line.indexOf('=');
    if (at > 0) fields.set(line.slice(0, at), line.slice(at + 1));
  }
  const uid = fields.get('UID');
  if (uid) return uid;
  const cn = /Push Services: (.+)$/.exec(fields.get('CN') ?? '')?.[1];
  return cn?.trim() || undefined;
}

/** Whether `cert` carries the DER encoding of `oid` (an extension's id): enough to tell Apple's environment markers apart. */
export function carriesOid(cert: X509Certificate, oid: string): boolean {
  return cert.raw.includes(derOid(oid));
}

function derOid(oid: string): Buffer {
  const [a, b, ...rest] = oid.split('.').map(Number);
  const bytes = [a! * 40 + b!];
  for (const n of rest) {
    const chunk = [n & 0x7f];
    for (let v = Math.floor(n / 128); v > 0; v = Math.floor(v / 128)) chunk.unshift((v & 0x7f) | 0x80);
    bytes.push(...chunk);
  }
  return Buffer.from([0x06, bytes.length, ...bytes]);
}

/**
 * The certificate auth of an APNs entry: `certificate(File)` + `key(File)` (PEM), or `p12File` with
 * an optional `passphrase(File)`. Checked here, once: the certificate parses, the key is its key, a
 * PKCS#12 file opens with its passphrase. Errors name the field and never quote the secret.
 */
export function readClientCertificate(read: ConfigReader, o: RawConfig, key: string): { certificate: ApnsClientCertificate; x509: X509Certificate } {
  if (o.p12File !== undefined) {
    const pemField = (['certificate', 'key'] as const).find((f) => read.has(o, f));
    if (pemField !== undefined) throw new ConfigError(`${key}.${pemField}`, 'give the certificate either as PEM (certificate and key) or as p12File, not both');
    const pfx = read.binaryFile(o, 'p12File', key)!;
    const passphrase = read.has(o, 'passphrase') ? read.secret(o, 'passphrase', key).replace(/\r?\n$/, '') : undefined;
    let context: SecureContext;
    try {
      context = createSecureContext(passphrase === undefined ? { pfx } : { pfx, passphrase });
    } catch (error) {
      const wrongPassphrase = /mac verify|bad decrypt|passphrase|password/i.test((error as Error).message);
      if (wrongPassphrase) throw new ConfigError(`${key}.passphrase`, 'does not open the PKCS#12 file');
      throw new ConfigError(`${key}.p12File`, 'not a PKCS#12 file with a certificate and its key');
    }
    const x509 = certificateOfContext(context);
    if (!x509) throw new ConfigError(`${key}.p12File`, 'the PKCS#12 file holds no certificate');
    const base = { format: 'pkcs12' as const, pfx: pfx.toString('base64'), notAfterMs: Date.parse(x509.validTo) };
    return { certificate: passphrase === undefined ? base : { ...base, passphrase }, x509 };
  }
  if (read.has(o, 'passphrase')) throw new ConfigError(`${key}.passphrase`, 'only a p12File takes a passphrase');
  const certPem = read.secret(o, 'certificate', key);
  const keyPem = read.secret(o, 'key', key);
  let x509: X509Certificate;
  try {
    x509 = new X509Certificate(certPem);
  } catch {
    throw new ConfigError(`${key}.${o.certificate === undefined ? 'certificateFile' : 'certificate'}`, 'not a PEM certificate');
  }
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey(keyPem);
  } catch {
    throw new ConfigError(`${key}.${o.key === undefined ? 'keyFile' : 'key'}`, 'not an unencrypted PEM private key');
  }
  if (!x509.checkPrivateKey(privateKey)) throw new ConfigError(`${key}.${o.key === undefined ? 'keyFile' : 'key'}`, 'is not the key of the certificate');
  return { certificate: { format: 'pem', cert: certPem, key: keyPem, notAfterMs: Date.parse(x509.validTo) }, x509 };
}

/**
 * The certificate a secure context holds. Node has no public reader for it: `getCertificate` of the
 * native context is what `TLSSocket.getCertificate` reads too.
 */
function certificateOfContext(context: SecureContext): X509Certificate | undefined {
  const native = (context as unknown as { context?: { getCertificate?: () => Buffer | undefined } }).context;
  const der = native?.getCertificate?.();
  return der ? new X509Certificate(der) : undefined;
}

/** The TLS context of the APNs connections of a certificate app: its certificate and key, and `ca` when given (else the public roots). */
export function clientSecureContext(c: ApnsClientCertificate, ca: string | undefined): SecureContext {
  const trust = ca === undefined ? {} : { ca };
  if (c.format === 'pem') return createSecureContext({ ...trust, cert: c.cert, key: c.key });
  const pfx = Buffer.from(c.pfx, 'base64');
  return createSecureContext(c.passphrase === undefined ? { ...trust, pfx } : { ...trust, pfx, passphrase: c.passphrase });
}
