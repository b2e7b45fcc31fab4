import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
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

async function registryHealthy(port: number): Promise<boolean> {
  const response = await fetch(`http://127.0.0.1:${port}/apis/ccompat/v7/subjects`, { signal: AbortSignal.timeout(2000) });
  return response.ok;
}

async function registryVersion(port: number): Promise<string | undefined> {
  const response = await fetch(`http://127.0.0.1:${port}/apis/registry/v3/system/info`, { signal: AbortSignal.timeout(2000) });
  if (!response.ok) return undefined;
  const info = (await response.json()) as { name?: string; version?: string };
  return `${info.name ?? 'registry'} ${info.version ?? ''}`.trim();
}

export function registryService(): StackService {
  const port = stackPort('registry', 'REGISTRY');
  return {
    name: NAME,
    port,
    async up() {
      if (await portOpen(port)) {
        await waitFor(NAME, () => registryHealthy(port), { timeoutMs: 90_000 });
        return 'reused';
      }
      const runJar = ensureDistribution();
      const dbDir = ensureDir(stackPath('apicurio', 'db'));
      const props = join(ensureDir(stackPath('apicurio', 'config')), 'application.properties');
      writeFileSync(props, '# written by stack/registry.ts\n');
      const pid = startDetached(NAME, findJava21(), [
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
      ]);
      console.log(`[stack] registry starting (pid ${pid}, port ${port}, log ${logFile(NAME)})`);
      await waitFor(NAME, () => registryHealthy(port), { timeoutMs: 180_000, pid });
      return 'started';
    },
    down: () => stopByPidFile(NAME),
    async status(): Promise<ServiceStatus> {
      // Not answering: reported as not healthy.
      const healthy = await registryHealthy(port).catch(() => false);
      const version = healthy ? await registryVersion(port).catch(() => undefined) : undefined;
      return { name: NAME, port, healthy, version, pid: readPid(NAME), detail: `http://127.0.0.1:${port}/apis/ccompat/v7` };
    },
  };
}
