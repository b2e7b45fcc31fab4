/**
 * A worker's reload of its apps file (pipeline/apps-reload.ts) without the stack: a change in the
 * file's folder is picked up (debounced), an invalid or unreadable file is refused naming the field
 * while the running version stays, a secret file beside it is read again, and `POST /-/reload` on
 * the metrics port (what `pushctl apps reload` sends, pipeline/apps-fleet.ts) answers what it did.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Logger } from '../../common/log.ts';
import { describeReload } from '../../cli/commands/apps.ts';
import { startEmulators, type RawAppEntry, type StartedEmulators } from '../../emulators/index.ts';
import { appsVersions, describeVersions, reloadFleet } from '../../pipeline/apps-fleet.ts';
import { AppsReloader } from '../../pipeline/apps-reload.ts';
import { PipelineMetrics } from '../../sinks/metrics/pipeline-metrics.ts';
import { startMetricsServer } from '../../sinks/metrics/server.ts';
import { appsFileVersion, readAppsFile } from '../../sinks/vendors/apps-config.ts';
import { createVendorRegistry, type ReloadableVendorRegistry } from '../../sinks/vendors/registry.ts';

interface Line {
  readonly level: string;
  readonly message: string;
  readonly fields: Record<string, unknown>;
}

describe('reloading the apps file', () => {
  let em: StartedEmulators;
  let dir: string;
  let path: string;
  let registry: ReloadableVendorRegistry;
  let reloader: AppsReloader;
  const metrics = new PipelineMetrics();
  const lines: Line[] = [];
  const logger: Logger = {
    debug: () => undefined,
    info: (message, fields) => lines.push({ level: 'info', message, fields: fields as Record<string, unknown> }),
    warn: (message, fields) => lines.push({ level: 'warn', message, fields: fields as Record<string, unknown> }),
    error: (message, fields) => lines.push({ level: 'error', message, fields: fields as Record<string, unknown> }),
    child: () => logger,
  };
  const entry = (appId: string): RawAppEntry => structuredClone(em.rawAppsConfig.apps.find((a) => a.appId === appId)!);
  /** Writes the file as a deploy does (beside it, then renamed over it); returns its version. */
  const write = (content: unknown): string => {
    const text = typeof content === 'string' ? content : JSON.stringify(content, null, 2);
    writeFileSync(join(dir, '.next'), text);
    renameSync(join(dir, '.next'), path);
    return appsFileVersion(text);
  };
  const versionSeries = () => [...metrics.registry.render().matchAll(/^push_apps_config_info\{version="(\w+)"\} (\d+)$/gm)].map((m) => [m[1], m[2]]);

  before(async () => {
    em = await startEmulators({ apps: ['app-a', 'app-b'] });
    dir = mkdtempSync(join(tmpdir(), 'apps-reload-'));
    path = join(dir, 'apps.json');
    write({ ca: em.ca, apps: [entry('app-a'), entry('app-b')] });
    const file = readAppsFile(path);
    registry = createVendorRegistry(file.config);
    reloader = new AppsReloader({ path, version: file.version, registry, metrics, logger, debounceMs: 100 });
    reloader.start();
  });
  after(async () => {
    await reloader.close();
    await registry.close();
    await em.close();
  });

  async function untilVersion(version: string, timeoutMs = 5000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (reloader.version !== version) {
      if (Date.now() > deadline) assert.fail(`version ${version} not in force within ${timeoutMs} ms (still ${reloader.version})`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  test('a new file written in the folder is put in force: apps added and removed, the version gauge follows', async () => {
    assert.deepEqual(versionSeries(), [[reloader.version, '1']]);
    const [c] = await em.addApps(['app-c']);
    const version = write({ ca: em.ca, apps: [entry('app-a'), c] });
    await untilVersion(version);
    assert.equal(registry.hasApp('app-c'), true);
    assert.equal(registry.hasApp('app-b'), false);
    assert.deepEqual(versionSeries(), [[version, '1']], 'only the version in force is shown');
    assert.equal(metrics.appsReloads.get({ trigger: 'watch' }), 1);
    const reloaded = lines.find((l) => l.message === 'apps file reloaded')!;
    assert.deepEqual([reloaded.fields.added, reloaded.fields.removed, reloaded.fields.changed], [['app-c'], ['app-b'], []]);
  });

  test('an invalid file is refused naming the field; the running version and apps stay, the failure is counted and logged', async () => {
    const running = reloader.version;
    const broken = entry('app-a');
    broken.vendors.apns!.connections = 0;
    write({ ca: em.ca, apps: [broken] });
    const deadline = Date.now() + 5000;
    while (metrics.appsReloadFailures.get({ trigger: 'watch' }) < 1) {
      if (Date.now() > deadline) assert.fail('the invalid file was not refused');
      await new Promise((r) => setTimeout(r, 20));
    }
    assert.equal(reloader.version, running);
    assert.equal(registry.hasApp('app-c'), true, 'the running apps stay');
    const refused = lines.findLast((l) => l.level === 'error')!;
    assert.equal(refused.message, 'apps file refused: the running version stays');
    assert.equal(refused.fields.key, 'apps[0].vendors.apns.connections');
    assert.doesNotMatch(JSON.stringify(lines), /PRIVATE KEY|private_key/, 'no secret in the log');
    // Not JSON at all: refused naming the key of the file.
    write('{ "apps": [');
    const result = await reloader.reload('signal');
    assert.deepEqual([result.ok, !result.ok && result.key, result.version], [false, 'PUSH_APPS_CONFIG', running]);
    assert.equal(metrics.appsReloadFailures.get({ trigger: 'signal' }), 1);
  });

  test('a secret file beside the apps file is read again: its app is rebuilt, the version (of the apps file) stays', async () => {
    const a = entry('app-a');
    const { clientSecret, ...hms } = a.vendors.hms!;
    writeFileSync(join(dir, 'hms-a.secret'), String(clientSecret));
    a.vendors.hms = { ...hms, clientSecretFile: 'hms-a.secret' };
    const [c] = await em.addApps(['app-c2']);
    const version = write({ ca: em.ca, apps: [a, c] });
    await untilVersion(version);
    const before = registry.adapter('hms', 'app-a');
    // The HMS console resets the secret; the operator writes the new one into the file.
    em.hms.registerApp({ clientId: String(hms.clientId), clientSecret: 'rotated-secret-123', appId: 'app-a' });
    writeFileSync(join(dir, 'hms-a.secret'), 'rotated-secret-123');
    const deadline = Date.now() + 5000;
    while (registry.adapter('hms', 'app-a') === before) {
      if (Date.now() > deadline) assert.fail('the rotated secret was not picked up');
      await new Promise((r) => setTimeout(r, 20));
    }
    assert.equal(reloader.version, version);
  });

  test('POST /-/reload answers what the reload did; pushctl apps reads versions and reloads a fleet', async () => {
    const server = await startMetricsServer(metrics.registry, { live: () => true, ready: () => true }, 0, undefined, { reload: () => reloader.reload('http') });
    const noApps = await startMetricsServer(new PipelineMetrics().registry, { live: () => true, ready: () => true }, 0);
    try {
      const url = `http://127.0.0.1:${server.port}/metrics`;
      const [c] = await em.addApps(['app-d']);
      const version = write({ ca: em.ca, apps: [entry('app-a'), c] });
      const reload = (await reloadFleet([url]))[0]!;
      assert.ok(reload.reachable);
      assert.equal(reload.status, 200);
      assert.equal(reload.result.version, version, 'in force when the answer comes');
      assert.match(describeReload(reload), new RegExp(`/-/reload: version ${version}`));
      assert.deepEqual(await appsVersions([url]), [{ url, version }]);
      const broken = entry('app-a');
      broken.vendors.fcm!.ratePerSecond = -1;
      write({ ca: em.ca, apps: [broken] });
      const refused = (await reloadFleet([url]))[0]!;
      assert.ok(refused.reachable);
      assert.equal(refused.status, 422);
      assert.match(describeReload(refused), new RegExp(`REFUSED apps\\[0\\]\\.vendors\\.fcm\\.ratePerSecond: .*; still version ${version}$`));
      assert.equal((await fetch(`http://127.0.0.1:${server.port}/-/reload`)).status, 405, 'only POST reloads');
      const none = (await reloadFleet([`http://127.0.0.1:${noApps.port}/metrics`]))[0]!;
      assert.ok(none.reachable && none.status === 404);
      const versions = await appsVersions([url, `http://127.0.0.1:${noApps.port}/metrics`, 'http://127.0.0.1:1/metrics']);
      const described = describeVersions(versions);
      assert.match(described[0]!, new RegExp(`apps file: version ${version}`));
      assert.match(described[1]!, /apps file: none/);
      assert.match(described[2]!, /no worker metrics at http:\/\/127\.0\.0\.1:1\/metrics/);
    } finally {
      await server.close();
      await noApps.close();
    }
  });
});
