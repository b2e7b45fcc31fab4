import { existsSync, mkdirSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import mysql from 'mysql2/promise';
import { readEndpoints } from '../common/endpoints.ts';
import { aptInstall, logFile, portOpen, readPid, runLogged, startDetached, stopByPidFile, waitFor } from './process.ts';
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

/**
 * A MariaDB server of its own (the secured stack, stack/secure.ts): its data under `dir`, TLS with
 * the stack's certificate, every TCP connection required to use it (require_secure_transport), and
 * one user with a password that must connect over TLS. The stack itself manages it as root over its
 * unix socket, which counts as secure.
 */
export interface MariadbInstance {
  readonly name: string;
  readonly port: number;
  readonly dir: string;
  readonly tls: { readonly cert: string; readonly key: string; readonly ca: string };
  readonly user: { readonly name: string; readonly password: string };
  /** Created when missing. */
  readonly database: string;
}

const socketOf = (instance: MariadbInstance) => join(instance.dir, 'mysqld.sock');

async function asRoot<T>(instance: MariadbInstance, work: (connection: mysql.Connection) => Promise<T>): Promise<T> {
  const connection = await mysql.createConnection({ socketPath: socketOf(instance), user: 'root', connectTimeout: 2000 });
  try {
    return await work(connection);
  } finally {
    await connection.end();
  }
}

/** The user (its password as the secrets file says now) and the database, created or brought up to date. */
async function provision(instance: MariadbInstance): Promise<void> {
  const { user, database } = instance;
  await asRoot(instance, async (c) => {
    await c.query(`CREATE DATABASE IF NOT EXISTS \`${database.replace(/`/g, '')}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci`);
    await c.query('CREATE USER IF NOT EXISTS ?@? IDENTIFIED BY ? REQUIRE SSL', [user.name, '%', user.password]);
    await c.query('ALTER USER ?@? IDENTIFIED BY ? REQUIRE SSL', [user.name, '%', user.password]);
    // The local stack's user may create the databases tests and runs use; production grants one database (docs/operations.md).
    await c.query('GRANT ALL PRIVILEGES ON *.* TO ?@?', [user.name, '%']);
  });
}

export function mariadbInstanceService(instance: MariadbInstance): StackService {
  const { name, port, dir, tls } = instance;
  const answers = async () => (await asRoot(instance, async (c) => (await c.query('SELECT 1'))[0])) !== undefined;
  return {
    name,
    port,
    async up() {
      let how: 'started' | 'reused' = 'reused';
      if (!(await portOpen(port))) {
        if (!existsSync('/usr/sbin/mariadbd')) aptInstall(name, ['mariadb-server']);
        const data = join(dir, 'data');
        if (!existsSync(join(data, 'mysql'))) {
          mkdirSync(data, { recursive: true });
          runLogged(name, 'mariadb-install-db', [
            '--no-defaults',
            `--datadir=${data}`,
            '--user=root',
            '--auth-root-authentication-method=socket',
            '--skip-test-db',
          ]);
        }
        // As root (this machine's stack runs as root; --user=root says so), reading no my.cnf of the machine's server.
        const pid = startDetached(name, '/usr/sbin/mariadbd', [
          '--no-defaults',
          '--user=root',
          `--datadir=${data}`,
          `--socket=${socketOf(instance)}`,
          `--pid-file=${join(dir, 'mysqld.pid')}`,
          '--bind-address=127.0.0.1',
          `--port=${port}`,
          `--ssl-ca=${tls.ca}`,
          `--ssl-cert=${tls.cert}`,
          `--ssl-key=${tls.key}`,
          '--require-secure-transport=ON',
          '--skip-name-resolve',
          '--innodb-buffer-pool-size=64M',
        ]);
        console.log(`[stack] ${name} starting (pid ${pid}, port ${port}, log ${logFile(name)})`);
        await waitFor(name, answers, { timeoutMs: 60_000, pid });
        how = 'started';
      } else {
        await waitFor(name, answers, { timeoutMs: 30_000 });
      }
      await provision(instance);
      return how;
    },
    down: () => stopByPidFile(name),
    async status(): Promise<ServiceStatus> {
      const version = await asRoot(instance, async (c) => ((await c.query('SELECT VERSION() AS v'))[0] as Array<{ v: string }>)[0]?.v).catch(() => undefined);
      return { name, port, healthy: version !== undefined, version, pid: readPid(name), detail: `TLS required, data ${join(dir, 'data')}` };
    },
  };
}
