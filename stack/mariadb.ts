import { existsSync, mkdirSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import mysql from 'mysql2/promise';
import { readEndpoints } from '../common/endpoints.ts';
import { aptInstall, logFile, portOpen, readPid, startDetached, stopByPidFile, waitFor } from './process.ts';
import { stackPort, type ServiceStatus, type StackService } from './service.ts';

/**
 * The machine's MariaDB server (127.0.0.1:3306, root without a password). Reused when it answers;
 * started when installed but stopped; installed from Debian packages when absent. `up` also creates
 * the project database named in PUSH_MYSQL_URL.
 */
const NAME = 'mariadb';

async function serverVersion(port: number): Promise<string | undefined> {
  const connection = await mysql.createConnection({ host: '127.0.0.1', port, user: 'root', connectTimeout: 2000 });
  try {
    const [rows] = await connection.query('SELECT VERSION() AS v');
    return (rows as Array<{ v: string }>)[0]?.v;
  } finally {
    await connection.end();
  }
}

async function createProjectDatabase(port: number): Promise<void> {
  const database = new URL(readEndpoints().mysqlUrl).pathname.replace(/^\//, '') || 'offline_push';
  const connection = await mysql.createConnection({ host: '127.0.0.1', port, user: 'root' });
  try {
    await connection.query(`CREATE DATABASE IF NOT EXISTS \`${database.replace(/`/g, '')}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci`);
  } finally {
    await connection.end();
  }
}

export function mariadbService(): StackService {
  const port = stackPort('mysql', 'MYSQL');
  return {
    name: NAME,
    port,
    async up() {
      let how: 'started' | 'reused' = 'reused';
      if (!(await portOpen(port))) {
        if (!existsSync('/usr/sbin/mariadbd')) aptInstall(NAME, ['mariadb-server']);
        mkdirSync('/run/mysqld', { recursive: true });
        execFileSync('chown', ['mysql:mysql', '/run/mysqld']);
        const pid = startDetached(NAME, 'setpriv', [
          '--reuid=mysql',
          '--regid=mysql',
          '--init-groups',
          '/usr/sbin/mariadbd',
          '--datadir=/var/lib/mysql',
          '--socket=/run/mysqld/mysqld.sock',
          '--bind-address=127.0.0.1',
          `--port=${port}`,
        ]);
        console.log(`[stack] mariadb starting (pid ${pid}, port ${port}, log ${logFile(NAME)})`);
        await waitFor(NAME, async () => (await serverVersion(port)) !== undefined, { timeoutMs: 60_000, pid });
        how = 'started';
      } else {
        await waitFor(NAME, async () => (await serverVersion(port)) !== undefined, { timeoutMs: 30_000 });
      }
      await createProjectDatabase(port);
      return how;
    },
    down: () => stopByPidFile(NAME),
    async status(): Promise<ServiceStatus> {
      const version = await serverVersion(port).catch(() => undefined); // not answering: reported as not healthy
      return {
        name: NAME,
        port,
        healthy: version !== undefined,
        version,
        pid: readPid(NAME),
        detail: readPid(NAME) ? 'started by this stack' : 'machine service',
      };
    },
  };
}
