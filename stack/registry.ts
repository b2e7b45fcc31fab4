import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fetch } from 'undici';
import { tlsDispatcher } from '../common/tls-files.ts';
import { ensureDir, stackPath } from './paths.ts';
import { logFile, portOpen, readPid, runLogged, startDetached, stopByPidFile, waitFor } from './process.ts';
import { stackPort, type ServiceStatus, type StackService } from './service.ts';

/**
 * Apicurio Registry (Maven Central `io.apicurio:apicurio-registry-app:<v>:tar.gz:all`), run on a
 * Java 21+ JDK found under /usr/lib/jvm, with its Confluent-compatible API at /apis/ccompat/v7 and
 * global compatibility BACKWARD. Schemas are kept in an H2 file database under .stack/apicurio/db,
 * so ids stay valid for the records already in Kafka across restarts.
 */
const APICURIO_VERSION = '3.3.3';
const NAME = 'registry';

const distDir = () => stackPath('apicurio', `dist-${APICURIO_VERSION}`);

function ensureDistribution(): string {
  const runJar = join(distDir(), 'quarkus-run.jar');
  if (existsSync(runJar)) return runJar;
  const archiveDir = ensureDir(stackPath('apicurio'));
  const archive = join(archiveDir, `apicurio-registry-app-${APICURIO_VERSION}-all.tar.gz`);
  if (!existsSync(archive)) {
    console.log(`[stack] resolving Apicurio Registry ${APICURIO_VERSION} from Maven Central ...`);
    runLogged(NAME, 'mvn', [
      '-B',
      '-q',
      'dependency:copy',
      `-Dartifact=io.apicurio:apicurio-registry-app:${APICURIO_VERSION}:tar.gz:all`,
      `-DoutputDirectory=${archiveDir}`,
    ]);
  }
  ensureDir(distDir());
  runLogged(NAME, 'tar', ['-xzf', archive, '-C', distDir()]);
  if (!existsSync(runJar)) throw new Error(`quarkus-run.jar not found in ${archive}`);
  return runJar;
}

/** A JDK of release 21 or newer: PUSH_STACK_REGISTRY_JAVA, else the newest under /usr/lib/jvm. */
export function findJava21(): string {
  if (process.env.PUSH_STACK_REGISTRY_JAVA) return process.env.PUSH_STACK_REGISTRY_JAVA;
  const jvmRoot = '/usr/lib/jvm';
  const candidates = existsSync(jvmRoot)
    ? readdirSync(jvmRoot)
        .map((dir) => ({ dir, release: Number(/(?:^|-)(\d{2})(?:[.-]|$)/.exec(dir)?.[1] ?? 0) }))
        .filter((c) => c.release >= 21 && existsSync(join(jvmRoot, c.dir, 'bin', 'java')))
        .sort((a, b) => b.release - a.release)
    : [];
  if (candidates.length === 0) throw new Error('Apicurio Registry needs Java 21+: none found under /usr/lib/jvm (set PUSH_STACK_REGISTRY_JAVA)');
  return join(jvmRoot, candidates[0]!.dir, 'bin', 'java');
}

/** One registry: its name (PID file, log), port and folder (database, config). */
export interface RegistryInstance {
  readonly name: string;
  readonly port: number;
  readonly dir: string;
  /** HTTPS only, every request with basic auth (the secured stack, stack/secure.ts); absent: plain HTTP, no auth. */
  readonly secured?: {
    /** PEM certificate and key the registry serves, and the authority that signs them. */
    readonly cert: string;
    readonly key: string;
    readonly ca: string;
    /** The one user, an admin of the registry. */
    readonly user: { readonly name: string; readonly password: string };
  };
}

/** The stack's registry. */
export function stackRegistry(): RegistryInstance {
  return { name: NAME, port: stackPort('registry', 'REGISTRY'), dir: stackPath('apicurio') };
}

/** The registry's root URL. */
export function registryRoot(instance: RegistryInstance): string {
  return `${instance.secured ? 'https' : 'http'}://127.0.0.1:${instance.port}`;
}

async function registryGet(instance: RegistryInstance, path: string): Promise<Awaited<ReturnType<typeof fetch>>> {
  const s = instance.secured;
  const dispatcher = tlsDispatcher(s ? { ca: readFileSync(s.ca) } : undefined);
  return await fetch(`${registryRoot(instance)}${path}`, {
    signal: AbortSignal.timeout(2000),
    ...(s ? { headers: { authorization: `Basic ${Buffer.from(`${s.user.name}:${s.user.password}`).toString('base64')}` } } : {}),
    ...(dispatcher ? { dispatcher } : {}),
  });
}

async function registryHealthy(instance: RegistryInstance): Promise<boolean> {
  return (await registryGet(instance, '/apis/ccompat/v7/subjects')).ok;
}

async function registryVersion(instance: RegistryInstance): Promise<string | undefined> {
  const response = await registryGet(instance, '/apis/registry/v3/system/info');
  if (!response.ok) return undefined;
  const info = (await response.json()) as { name?: string; version?: string };
  return `${info.name ?? 'registry'} ${info.version ?? ''}`.trim();
}

/**
 * A secured registry's settings, in the application.properties Quarkus reads from the working
 * folder (not on the command line, where any local user could read the password): HTTPS only
 * (quarkus.http.ssl.*), HTTP basic auth checked against one embedded user with the admin role.
 */
function writeSecuredProperties(instance: RegistryInstance & { secured: NonNullable<RegistryInstance['secured']> }): void {
  const { cert, key, user } = instance.secured;
  const file = join(ensureDir(join(instance.dir, 'config')), 'application.properties');
  writeFileSync(
    file,
    [
      '# written by stack/registry.ts',
      `quarkus.http.ssl-port=${instance.port}`,
      'quarkus.http.insecure-requests=disabled',
      `quarkus.http.ssl.certificate.files=${cert}`,
      `quarkus.http.ssl.certificate.key-files=${key}`,
      'quarkus.http.auth.basic=true',
      'quarkus.security.users.embedded.plain-text=true',
      `quarkus.security.users.embedded.users.${user.name}=${user.password}`,
      `quarkus.security.users.embedded.roles.${user.name}=sr-admin`,
      '',
    ].join('\n'),
    { mode: 0o600 },
  );
}

export function registryService(instance: RegistryInstance = stackRegistry()): StackService {
  const { name, port, dir } = instance;
  const healthy = () => registryHealthy(instance);
  return {
    name,
    port,
    async up() {
      if (await portOpen(port)) {
        await waitFor(name, healthy, { timeoutMs: 90_000 });
        return 'reused';
      }
      const runJar = ensureDistribution();
      const dbDir = ensureDir(join(dir, 'db'));
      if (instance.secured) writeSecuredProperties({ ...instance, secured: instance.secured });
      else writeFileSync(join(ensureDir(join(dir, 'config')), 'application.properties'), '# written by stack/registry.ts\n');
      const pid = startDetached(
        name,
        findJava21(),
        [
          '-Xms128m',
          '-Xmx512m',
          '-XX:+UseSerialGC',
          '-XX:TieredStopAtLevel=1',
          '-Dquarkus.http.host=127.0.0.1',
          `-Dquarkus.http.port=${port}`,
          // Quarkus' management interface would otherwise bind 0.0.0.0:9000.
          '-Dquarkus.management.host=127.0.0.1',
          `-Dquarkus.management.port=${port + 1}`,
          '-Dapicurio.rules.global.compatibility=BACKWARD',
          '-Dapicurio.storage.kind=sql',
          '-Dapicurio.storage.sql.kind=h2',
          `-Dapicurio.datasource.url=jdbc:h2:file:${join(dbDir, 'registry')};DB_CLOSE_ON_EXIT=FALSE`,
          '-Dapicurio.datasource.username=sa',
          '-Dapicurio.datasource.password=sa',
          '-Dquarkus.log.level=WARN',
          '-Dquarkus.http.access-log.enabled=false',
          '-jar',
          runJar,
        ],
        // Quarkus reads config/application.properties from its working folder.
        { cwd: dir },
      );
      console.log(`[stack] ${name} starting (pid ${pid}, port ${port}, log ${logFile(name)})`);
      await waitFor(name, healthy, { timeoutMs: 180_000, pid });
      return 'started';
    },
    down: () => stopByPidFile(name),
    async status(): Promise<ServiceStatus> {
      // Not answering: reported as not healthy.
      const up = await healthy().catch(() => false);
      const version = up ? await registryVersion(instance).catch(() => undefined) : undefined;
      return { name, port, healthy: up, version, pid: readPid(name), detail: `${registryRoot(instance)}/apis/ccompat/v7` };
    },
  };
}
