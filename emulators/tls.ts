import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** A certificate authority of the tests: its certificate and key (PEM). */
export interface CertificateAuthority {
  readonly ca: string;
  readonly caKey: string;
}

/** A throwaway CA and a server certificate for localhost / 127.0.0.1 signed by it (PEM). */
export interface TestTls extends CertificateAuthority {
  readonly key: string;
  readonly cert: string;
}

let cached: Promise<TestTls> | undefined;

/**
 * Node cannot create X.509 certificates, so `openssl` (on the machine) makes them in a temporary
 * folder, removed afterwards. One CA per process: every emulator shares it, adapters trust it.
 */
export function testTls(): Promise<TestTls> {
  cached ??= generate();
  return cached;
}

const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

/** A self-signed CA in `dir` (ca.pem, ca.key). */
async function makeCa(dir: string, name: string): Promise<void> {
  const p = (f: string) => join(dir, f);
  await run('openssl', [
    'req',
    '-x509',
    ...ec,
    '-keyout',
    p('ca.key'),
    '-out',
    p('ca.pem'),
    '-days',
    '7',
    '-subj',
    `/CN=${name}`,
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  ]);
}

/** Another throwaway CA, one no emulator trusts (a certificate from the wrong authority). */
export async function foreignCertificateAuthority(): Promise<CertificateAuthority> {
  const dir = await mkdtemp(join(tmpdir(), 'push-foreign-ca-'));
  try {
    await makeCa(dir, 'offline-push foreign test CA');
    const [ca, caKey] = await Promise.all([readFile(join(dir, 'ca.pem'), 'utf8'), readFile(join(dir, 'ca.key'), 'utf8')]);
    return { ca, caKey };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** What an APNs provider certificate of the tests says. */
export interface PushCertificateOptions {
  /** The bundle id, in the subject as Apple writes it: UID, and CN `Apple Push Services: <bundle id>`. */
  readonly topic: string;
  /** Team id, the subject's OU. Default TEAM4PUSH1. */
  readonly teamId?: string;
  /** Valid from, epoch ms. Default an hour ago. */
  readonly notBeforeMs?: number;
  /** Valid until, epoch ms. Default a year from now, as Apple issues them. */
  readonly notAfterMs?: number;
  /** Apple's environment markers (extensions 1.2.840.113635.100.6.3.1 / .2). Default both: a "Sandbox & Production" certificate. */
  readonly environments?: ReadonlyArray<'sandbox' | 'production'>;
  /** Also bundle it as PKCS#12 under this passphrase. */
  readonly p12Passphrase?: string;
}

/** A client certificate and its key (PEM), and the PKCS#12 bundle when one was asked for. */
export interface PushCertificate {
  readonly cert: string;
  readonly key: string;
  readonly p12?: Buffer;
}

/** `YYYYMMDDHHMMSSZ`, the time format of `openssl ca -startdate/-enddate`. */
const generalizedTime = (ms: number) =>
  new Date(Math.floor(ms / 1000) * 1000)
    .toISOString()
    .replace(/[-:T]/g, '')
    .replace(/\.\d{3}Z$/, 'Z');

/**
 * Issues an APNs provider certificate from `authority` as Apple's WWDR CA does for an app: subject
 * UID and CN naming the bundle id, client-auth key usage, the environment markers. `openssl ca`
 * (which, unlike `x509 -req`, takes any validity dates, an expired one included) in a temporary folder.
 */
export async function issuePushCertificate(authority: CertificateAuthority, o: PushCertificateOptions): Promise<PushCertificate> {
  const dir = await mkdtemp(join(tmpdir(), 'push-client-cert-'));
  const p = (f: string) => join(dir, f);
  const now = Date.now();
  const environments = o.environments ?? ['sandbox', 'production'];
  const oids = { sandbox: '1.2.840.113635.100.6.3.1', production: '1.2.840.113635.100.6.3.2' };
  try {
    await Promise.all([writeFile(p('ca.pem'), authority.ca), writeFile(p('ca.key'), authority.caKey), writeFile(p('index.txt'), '')]);
    await writeFile(
      p('serial'),
      `${Math.floor(Math.random() * 0xffffff)
        .toString(16)
        .padStart(6, '0')}01\n`,
    );
    await writeFile(
      p('ca.cnf'),
      [
        '[ ca ]',
        'default_ca = issuer',
        '[ issuer ]',
        `database = ${p('index.txt')}`,
        `new_certs_dir = ${dir}`,
        `serial = ${p('serial')}`,
        'default_md = sha256',
        'policy = any',
        'unique_subject = no',
        'email_in_dn = no',
        '[ any ]',
        'UID = optional',
        'commonName = supplied',
        'organizationalUnitName = optional',
        'organizationName = optional',
        'countryName = optional',
        '[ push ]',
        'basicConstraints = critical,CA:FALSE',
        'keyUsage = critical,digitalSignature',
        'extendedKeyUsage = clientAuth',
        ...environments.map((e) => `${oids[e]} = ASN1:NULL`),
        '',
      ].join('\n'),
    );
    const subject = `/UID=${o.topic}/CN=Apple Push Services: ${o.topic}/OU=${o.teamId ?? 'TEAM4PUSH1'}/O=offline-push emulator/C=US`;
    await run('openssl', ['req', '-new', ...ec, '-keyout', p('client.key'), '-out', p('client.csr'), '-subj', subject]);
    await run('openssl', [
      'ca',
      '-batch',
      '-notext',
      '-preserveDN',
      '-config',
      p('ca.cnf'),
      '-cert',
      p('ca.pem'),
      '-keyfile',
      p('ca.key'),
      '-in',
      p('client.csr'),
      '-out',
      p('client.pem'),
      '-extensions',
      'push',
      '-startdate',
      generalizedTime(o.notBeforeMs ?? now - 3600_000),
      '-enddate',
      generalizedTime(o.notAfterMs ?? now + 365 * 86_400_000),
    ]);
    if (o.p12Passphrase !== undefined)
      await run(
        'openssl',
        ['pkcs12', '-export', '-inkey', p('client.key'), '-in', p('client.pem'), '-passout', 'env:PUSH_TEST_P12_PASS', '-out', p('client.p12')],
        {
          env: { ...process.env, PUSH_TEST_P12_PASS: o.p12Passphrase },
        },
      );
    const [cert, key] = await Promise.all([readFile(p('client.pem'), 'utf8'), readFile(p('client.key'), 'utf8')]);
    return o.p12Passphrase === undefined ? { cert, key } : { cert, key, p12: await readFile(p('client.p12')) };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function generate(): Promise<TestTls> {
  const dir = await mkdtemp(join(tmpdir(), 'push-emulator-tls-'));
  const p = (f: string) => join(dir, f);
  try {
    await makeCa(dir, 'offline-push emulator test CA');
    await run('openssl', ['req', ...ec, '-keyout', p('server.key'), '-out', p('server.csr'), '-subj', '/CN=localhost']);
    await writeFile(
      p('ext.cnf'),
      'subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n',
    );
    await run('openssl', [
      'x509',
      '-req',
      '-in',
      p('server.csr'),
      '-CA',
      p('ca.pem'),
      '-CAkey',
      p('ca.key'),
      '-CAcreateserial',
      '-out',
      p('server.pem'),
      '-days',
      '7',
      '-extfile',
      p('ext.cnf'),
    ]);
    const [ca, caKey, key, cert] = await Promise.all([
      readFile(p('ca.pem'), 'utf8'),
      readFile(p('ca.key'), 'utf8'),
      readFile(p('server.key'), 'utf8'),
      readFile(p('server.pem'), 'utf8'),
    ]);
    return { ca, caKey, key, cert };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
