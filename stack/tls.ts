import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ensureDir } from './paths.ts';
import { runLogged } from './process.ts';

/**
 * Certificates for the secured local stack (stack/secure.ts), made with the machine's openssl: a
 * certificate authority, and certificates it signs for the servers (every service of the stack
 * presents the same one, for the address it listens on) and for clients (Kafka's mTLS). ECDSA P-256
 * keys in PKCS#8 PEM, which every service of the stack and Node read. Files are written once and
 * kept: a restarted stack presents the same certificates, so clients configured earlier still trust it.
 */

/** A PEM certificate and its private key, as files. */
export interface CertificateFiles {
  readonly cert: string;
  readonly key: string;
}

const DAYS = '825';
const LOG = 'tls';

/** `openssl req` making a new unencrypted P-256 key into `keyFile`, and `out` (a certificate or a request) for `subject`. */
function newKeyRequest(keyFile: string, out: string, subject: string, extra: readonly string[]): void {
  runLogged(LOG, 'openssl', [
    'req',
    ...extra,
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-keyout',
    keyFile,
    '-out',
    out,
    '-subj',
    subject,
  ]);
}

/** A self-signed certificate authority under `dir` (`<name>.pem`, `<name>-key.pem`), made unless present. */
export function certificateAuthority(dir: string, name = 'ca', subject = '/O=offline-push local stack/CN=offline-push local CA'): CertificateFiles {
  ensureDir(dir);
  const files = { cert: join(dir, `${name}.pem`), key: join(dir, `${name}-key.pem`) };
  if (existsSync(files.cert) && existsSync(files.key)) return files;
  newKeyRequest(files.key, files.cert, subject, [
    '-x509',
    '-days',
    DAYS,
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  ]);
  return files;
}

/** What a leaf certificate is for: a server (its subject alternative names) or a client (its common name is the principal). */
export type LeafUse = { readonly server: { readonly ips: readonly string[]; readonly dnsNames?: readonly string[] } } | { readonly client: true };

/** A certificate signed by `ca` under `dir` (`<name>.pem`, `<name>-key.pem`), made unless present. */
export function issueCertificate(ca: CertificateFiles, dir: string, name: string, commonName: string, use: LeafUse): CertificateFiles {
  ensureDir(dir);
  const files = { cert: join(dir, `${name}.pem`), key: join(dir, `${name}-key.pem`) };
  if (existsSync(files.cert) && existsSync(files.key)) return files;
  const request = join(dir, `${name}.csr`);
  const extensions = join(dir, `${name}.ext`);
  const names = 'server' in use ? [...use.server.ips.map((ip) => `IP:${ip}`), ...(use.server.dnsNames ?? []).map((n) => `DNS:${n}`)].join(',') : undefined;
  writeFileSync(
    extensions,
    [
      'basicConstraints=critical,CA:FALSE',
      'keyUsage=critical,digitalSignature,keyEncipherment',
      `extendedKeyUsage=${'server' in use ? 'serverAuth,clientAuth' : 'clientAuth'}`,
      ...(names ? [`subjectAltName=${names}`] : []),
      '',
    ].join('\n'),
  );
  newKeyRequest(files.key, request, `/O=offline-push local stack/CN=${commonName}`, ['-new']);
  runLogged(LOG, 'openssl', [
    'x509',
    '-req',
    '-in',
    request,
    '-CA',
    ca.cert,
    '-CAkey',
    ca.key,
    '-CAcreateserial',
    '-days',
    DAYS,
    '-sha256',
    '-extfile',
    extensions,
    '-out',
    files.cert,
  ]);
  return files;
}
