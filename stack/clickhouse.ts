import { existsSync, readFileSync, writeFileSync, copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { ensureDir, stackPath } from './paths.ts';
import { aptInstall, logFile, portOpen, readPid, startDetached, stopByPidFile, waitFor } from './process.ts';
import { stackPort, type ServiceStatus, type StackService } from './service.ts';

/**
 * Debian's clickhouse-server (installed from Debian packages when absent), run by this stack with
 * a copy of the packaged config whose data, logs and ports are project-local (.stack/clickhouse).
 * HTTP on 8123 by default; the native port moves to 19000 so it cannot clash with other services.
 */
const NAME = 'clickhouse';
const SERVER = '/usr/sbin/clickhouse-server';
const PACKAGED_CONFIG = '/etc/clickhouse-server';

function writeConfig(httpPort: number, tcpPort: number): string {
  const dir = ensureDir(stackPath('clickhouse', 'config'));
  const data = ensureDir(stackPath('clickhouse', 'data')) + '/';
  const logs = ensureDir(stackPath('clickhouse', 'log')) + '/';
  const config = readFileSync(join(PACKAGED_CONFIG, 'config.xml'), 'utf8')
    .replaceAll('/var/lib/clickhouse/', data)
    .replaceAll('/var/log/clickhouse-server/', logs)
    .replace(/<http_port>\d+<\/http_port>/, `<http_port>${httpPort}</http_port>`)
    .replace(/<tcp_port>\d+<\/tcp_port>/, `<tcp_port>${tcpPort}</tcp_port>`)
    .replace(/<interserver_http_port>\d+<\/interserver_http_port>/, `<interserver_http_port>${tcpPort + 9}</interserver_http_port>`)
    // The packaged 5 GB mark cache is sized for a dedicated server.
    .replace(/<mark_cache_size>\d+<\/mark_cache_size>/, '<mark_cache_size>268435456</mark_cache_size>');
  const file = join(dir, 'config.xml');
  writeFileSync(file, config);
  copyFileSync(join(PACKAGED_CONFIG, 'users.xml'), join(dir, 'users.xml'));
  return file;
}

async function clickhouseVersion(port: number): Promise<string | undefined> {
  const response = await fetch(`http://127.0.0.1:${port}/?query=${encodeURIComponent('SELECT version()')}`, { signal: AbortSignal.timeout(2000) });
  return response.ok ? (await response.text()).trim() : undefined;
}

/** Scheduling niceness of the local stack's ClickHouse server. */
const CLICKHOUSE_NICE = 10;

export function clickhouseService(): StackService {
  const port = stackPort('clickhouseHttp', 'CLICKHOUSE');
  const tcpPort = stackPort('clickhouseTcp', 'CLICKHOUSE_TCP');
  return {
    name: NAME,
    port,
    async up() {
      if (await portOpen(port)) {
        await waitFor(NAME, async () => (await clickhouseVersion(port)) !== undefined, { timeoutMs: 30_000 });
        return 'reused';
      }
      if (!existsSync(SERVER)) aptInstall(NAME, ['clickhouse-server', 'clickhouse-client']);
      const config = writeConfig(port, tcpPort);
      // Niced, with every thread it starts: accounting is on no push's path, and on a box shared with the
      // broker and the workers its inserts and merges take only the CPU they leave (`nice` execs the
      // server, so the PID file names the server).
      const pid = startDetached(NAME, 'nice', ['-n', String(CLICKHOUSE_NICE), SERVER, `--config-file=${config}`], { cwd: stackPath('clickhouse') });
      console.log(`[stack] clickhouse starting (pid ${pid}, port ${port}, log ${logFile(NAME)})`);
      await waitFor(NAME, async () => (await clickhouseVersion(port)) !== undefined, { timeoutMs: 60_000, pid });
      return 'started';
    },
    down: () => stopByPidFile(NAME),
    async status(): Promise<ServiceStatus> {
      const version = await clickhouseVersion(port).catch(() => undefined); // not answering: reported as not healthy
      return { name: NAME, port, healthy: version !== undefined, version, pid: readPid(NAME), detail: `http://127.0.0.1:${port}` };
    },
  };
}
