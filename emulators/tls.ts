import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** A throwaway CA and a server certificate for localhost / 127.0.0.1 signed by it (PEM). */
export interface TestTls {
  readonly ca: string;
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

async function generate(): Promise<TestTls> {
  const dir = await mkdtemp(join(tmpdir(), 'push-emulator-tls-'));
  const p = (f: string) => join(dir, f);
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  try {
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
      '/CN=offline-push emulator test CA',
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign',
    ]);
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
    const [ca, key, cert] = await Promise.all([readFile(p('ca.pem'), 'utf8'), readFile(p('server.key'), 'utf8'), readFile(p('server.pem'), 'utf8')]);
    return { ca, key, cert };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
