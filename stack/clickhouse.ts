import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync, copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { fetch } from 'undici';
import { tlsDispatcher } from '../common/tls-files.ts';
import { ensureDir, stackPath } from './paths.ts';
import { aptInstall, logFile, portOpen, readPid, startDetached, stopByPidFile, waitFor } from './process.ts';
import { stackPort, type ServiceStatus, type StackService } from './service.ts';

/**
 * Debian's clickhouse-server (installed from Debian packages when absent), run by this stack with
 * a copy of the packaged config whose data, logs and ports are project-local (.stack/clickhouse).
 * HTTP on 8123 by default; the native port moves to 19000 so it cannot clash with other services.
 * The secured stack (stack/secure.ts) runs a second one that serves HTTPS only, to users with passwords.
 */
const NAME = 'clickhouse';
const SERVER = '/usr/sbin/clickhouse-server';
const PACKAGED_CONFIG = '/etc/clickhouse-server';

/** One server: its name (PID file, log), HTTP(S) port and folder (config, data, logs). */
export interface ClickhouseInstance {
  readonly name: string;
  readonly port: number;
  readonly dir: string;
  /** The native protocol's port (plain servers only). */
  readonly tcpPort?: number;
  /**
   * HTTPS only (Poco's TLS server: https_port and openSSL.server of the packaged config), no native
   * port, and users.xml's one user with a password (the default user gets an unknown one).
   */
  readonly secured?: {
    readonly cert: string;
    readonly key: string;
    readonly ca: string;
    readonly user: { readonly name: string; readonly password: string };
  };
}

/** The stack's ClickHouse. */
export function stackClickhouse(): ClickhouseInstance {
  return { name: NAME, port: stackPort('clickhouseHttp', 'CLICKHOUSE'), tcpPort: stackPort('clickhouseTcp', 'CLICKHOUSE_TCP'), dir: stackPath('clickhouse') };
}

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

/** users.xml of a secured server: `user` with its password's hash, the default user with a random one, both from this host only. */
function securedUsers(user: { name: string; password: string }): string {
  const entry = (name: string, password: string) =>
    `    <${name}><password_sha256_hex>${sha256(password)}</password_sha256_hex><networks><ip>::1</ip><ip>127.0.0.1</ip></networks><profile>default</profile><quota>default</quota></${name}>`;
  return [
    '<?xml version="1.0"?>',
    '<yandex>',
    '  <profiles><default><max_memory_usage>10000000000</max_memory_usage></default></profiles>',
    '  <users>',
    entry('default', randomBytes(24).toString('hex')),
    entry(user.name, user.password),
    '  </users>',
    '  <quotas><default><interval><duration>3600</duration><queries>0</queries><errors>0</errors><result_rows>0</result_rows><read_rows>0</read_rows><execution_time>0</execution_time></interval></default></quotas>',
    '</yandex>',
    '',
  ].join('\n');
}

function writeConfig(instance: ClickhouseInstance): string {
  const { port, tcpPort, secured } = instance;
  const dir = ensureDir(join(instance.dir, 'config'));
  const data = ensureDir(join(instance.dir, 'data')) + '/';
  const logs = ensureDir(join(instance.dir, 'log')) + '/';
  let config = readFileSync(join(PACKAGED_CONFIG, 'config.xml'), 'utf8')
    .replaceAll('/var/lib/clickhouse/', data)
    .replaceAll('/var/log/clickhouse-server/', logs)
    // The packaged 5 GB mark cache is sized for a dedicated server.
    .replace(/<mark_cache_size>\d+<\/mark_cache_size>/, '<mark_cache_size>268435456</mark_cache_size>');
  if (secured)
    config = config
      .replace(/<http_port>\d+<\/http_port>/, `<https_port>${port}</https_port>`)
      .replace(/<tcp_port>\d+<\/tcp_port>/, '')
      .replace(/<interserver_http_port>\d+<\/interserver_http_port>/, '')
      .replace(/<certificateFile>.*?<\/certificateFile>/, `<certificateFile>${secured.cert}</certificateFile>`)
      .replace(/<privateKeyFile>.*?<\/privateKeyFile>/, `<privateKeyFile>${secured.key}</privateKeyFile>`)
      // An ECDSA certificate needs no Diffie-Hellman parameters.
      .replace(/\s*<dhParamsFile>.*?<\/dhParamsFile>/, '');
  else
    config = config
      .replace(/<http_port>\d+<\/http_port>/, `<http_port>${port}</http_port>`)
      .replace(/<tcp_port>\d+<\/tcp_port>/, `<tcp_port>${tcpPort}</tcp_port>`)
      .replace(/<interserver_http_port>\d+<\/interserver_http_port>/, `<interserver_http_port>${tcpPort! + 9}</interserver_http_port>`);
  const file = join(dir, 'config.xml');
  writeFileSync(file, config);
  if (secured) writeFileSync(join(dir, 'users.xml'), securedUsers(secured.user), { mode: 0o600 });
  else copyFileSync(join(PACKAGED_CONFIG, 'users.xml'), join(dir, 'users.xml'));
  return file;
}

async function clickhouseVersion(instance: ClickhouseInstance): Promise<string | undefined> {
  const s = instance.secured;
  const dispatcher = tlsDispatcher(s ? { ca: readFileSync(s.ca) } : undefined);
  const response = await fetch(`${s ? 'https' : 'http'}://127.0.0.1:${instance.port}/?query=${encodeURIComponent('SELECT version()')}`, {
    signal: AbortSignal.timeout(2000),
    ...(s ? { headers: { 'X-ClickHouse-User': s.user.name, 'X-ClickHouse-Key': s.user.password } } : {}),
    ...(dispatcher ? { dispatcher } : {}),
  });
  return response.ok ? (await response.text()).trim() : undefined;
}

/** Scheduling niceness of the local stack's ClickHouse server. */
const CLICKHOUSE_NICE = 10;

export function clickhouseService(instance: ClickhouseInstance = stackClickhouse()): StackService {
  const { name, port } = instance;
  const answers = async () => (await clickhouseVersion(instance)) !== undefined;
  return {
    name,
    port,
    async up() {
      if (await portOpen(port)) {
        await waitFor(name, answers, { timeoutMs: 30_000 });
        return 'reused';
      }
      if (!existsSync(SERVER)) aptInstall(name, ['clickhouse-server', 'clickhouse-client']);
      const config = writeConfig(instance);
      // Niced, with every thread it starts: accounting is on no push's path, and on a box shared with the
      // broker and the workers its inserts and merges take only the CPU they leave (`nice` execs the
      // server, so the PID file names the server).
      const pid = startDetached(name, 'nice', ['-n', String(CLICKHOUSE_NICE), SERVER, `--config-file=${config}`], { cwd: instance.dir });
      console.log(`[stack] ${name} starting (pid ${pid}, port ${port}, log ${logFile(name)})`);
      await waitFor(name, answers, { timeoutMs: 60_000, pid });
      return 'started';
    },
    down: () => stopByPidFile(name),
    async status(): Promise<ServiceStatus> {
      const version = await clickhouseVersion(instance).catch(() => undefined); // not answering: reported as not healthy
      return { name, port, healthy: version !== undefined, version, pid: readPid(name), detail: `${instance.secured ? 'https' : 'http'}://127.0.0.1:${port}` };
    },
  };
}
