/**
 * Apps come, go and rotate credentials under a steady load, with no worker restart (docs/operations.md,
 * "Reloading the apps file"): one worker on the local stack pushes for three apps (the third with APNs
 * certificate auth) while its apps file is rewritten: a fourth app is added, one app's HMS secret
 * rotated (reloaded by SIGHUP), one app's APNs connection count changed, that app removed, and an
 * invalid file written (refused by the worker and by `pushctl apps reload`). Counted at the vendor
 * emulators: every push of every app reaches its vendor exactly once, the new app's within seconds;
 * the removed app's later pushes end DROPPED app_removed, reach no vendor and invalidate no token.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startEnvironment, type Environment } from '../../demo/environment.ts';
import { trafficProducer, watchOutcomes, type OutcomeWatcher, type TrafficProducer } from '../../demo/traffic.ts';
import type { RawAppEntry, RawAppsFile } from '../../emulators/index.ts';
import { appsVersions } from '../../pipeline/apps-fleet.ts';
import { parseSamples } from '../../pipeline/group-status.ts';
import { VENDORS, type Vendor } from '../../processors/fan-out/vendor-port.ts';
import { appsFileVersion } from '../../sinks/vendors/apps-config.ts';
import { pushctl } from '../cli/pushctl-process.ts';

/** Platform and maker of a device whose only token is for `vendor` (so the policy picks it). */
const DEVICE: Readonly<Record<Vendor, { platform: string; manufacturer: string }>> = {
  apns: { platform: 'ios', manufacturer: 'apple' },
  fcm: { platform: 'android', manufacturer: 'samsung' },
  hms: { platform: 'harmony', manufacturer: 'huawei' },
  xiaomi: { platform: 'android', manufacturer: 'xiaomi' },
  oppo: { platform: 'android', manufacturer: 'oppo' },
  vivo: { platform: 'android', manufacturer: 'vivo' },
};

/** The load's period: every app with load sends one message to each of its users per tick. */
const TICK_MS = 500;

interface User {
  readonly app: string;
  readonly uid: string;
  readonly vendor: Vendor;
  readonly token: string;
}

interface Sent {
  readonly user: User;
  readonly msgId: string;
  readonly at: number;
}

let env: Environment;
let traffic: TrafficProducer;
let watcher: OutcomeWatcher;

before(async () => {
  env = await startEnvironment({
    instances: 1,
    partitions: 2,
    apps: 3,
    verbose: false,
    // Long enough that a SIGHUP right after a write is what reloads it, not the folder watch.
    workerEnv: { PUSH_APPS_RELOAD_DEBOUNCE_MS: '1500' },
  });
  await env.waitReady();
  traffic = await trafficProducer(env.topicPrefix);
  watcher = await watchOutcomes(env.topicPrefix, `${env.applicationId}-test-watcher`);
});

after(async () => {
  await watcher?.close();
  await traffic?.close();
  await env?.close();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(done: () => boolean | Promise<boolean>, what: string, timeoutMs = 20_000): Promise<number> {
  const started = Date.now();
  while (!(await done())) {
    if (Date.now() - started > timeoutMs) assert.fail(`${what}: not within ${timeoutMs} ms`);
    await sleep(100);
  }
  return Date.now() - started;
}

test('apps added, rotated, resized, removed and refused under load: no restart, nothing lost or doubled', { timeout: 420_000 }, async () => {
  const worker = env.workers[0]!;
  const pid = worker.process.pid;
  const metricsUrl = `http://127.0.0.1:${worker.metricsPort}/metrics`;
  const [appA, appB, appC] = env.appIds as [string, string, string];
  const appD = `${env.appId}-d`;
  const topicC = `com.example.${appC}`;
  let file: RawAppsFile = structuredClone(env.emulators.rawAppsConfig);
  const entry = (appId: string): RawAppEntry => file.apps.find((a) => a.appId === appId)!;
  const runningVersion = async () => {
    const [v] = await appsVersions([metricsUrl]);
    return v && 'version' in v ? v.version : null;
  };
  const metric = async (name: string, labels: Record<string, string> = {}) => {
    const text = await (await fetch(metricsUrl)).text();
    return parseSamples(text)
      .filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
      .reduce((n, s) => n + s.value, 0);
  };
  /** Writes `next` as the apps file; returns its version. */
  const write = (next: RawAppsFile): string => {
    file = next;
    env.writeAppsConfig(next);
    return appsFileVersion(JSON.stringify(next, null, 2));
  };

  // Six users per app, one device each, its only token of one vendor: each app covers all six.
  const users = (app: string): User[] =>
    VENDORS.map((vendor) => {
      const uid = `${env.run}-${app.slice(-4)}-${vendor}`;
      return { app, uid, vendor, token: env.emulators.token(vendor, `${uid}-d0`) };
    });
  const population = new Map([appA, appB, appC, appD].map((app) => [app, users(app)]));
  const now = Date.now();
  await traffic.send(
    'tokens',
    [...population.values()].flat().map((u) => ({
      key: u.uid,
      value: {
        uid: u.uid,
        device_id: `${u.uid}-d0`,
        ...DEVICE[u.vendor],
        vendor: u.vendor,
        app_id: u.app,
        token: u.token,
        reported_at: now,
        state: 'VALID',
        source: 'CLIENT',
        reason: null,
      },
    })),
  );

  // The load: every TICK_MS, one message (a conversation of its own) to each user of each loaded app.
  const sent: Sent[] = [];
  const loaded = new Set([appA, appB, appC]);
  let tick = 0;
  let loading = true;
  const send = async (app: string) => {
    const batch = population.get(app)!.map((user) => {
      const conv = `c-${tick}`;
      return { user, msgId: `m-${conv}-1`, conv };
    });
    const at = Date.now();
    await traffic.send(
      'persisted',
      batch.map(({ user, msgId, conv }) => ({
        key: user.uid,
        value: {
          msg_id: msgId,
          conv_id: conv,
          conv_type: 'SINGLE',
          seq: 1,
          sender_uid: 'sender',
          uid: user.uid,
          unread_cnt: 1,
          title: 'Alice',
          summary: `tick ${tick}`,
          sensitive: false,
          mention: 'NONE',
          persisted_at: at,
          app_id: app,
        },
      })),
    );
    for (const b of batch) sent.push({ user: b.user, msgId: b.msgId, at });
  };
  const load = (async () => {
    while (loading) {
      const started = Date.now();
      tick++;
      await Promise.all([...loaded].map((app) => send(app)));
      await sleep(Math.max(0, TICK_MS - (Date.now() - started)));
    }
  })();

  /** Pushes accepted at the emulators, by `token|msg_id`. */
  const accepted = () => {
    const counts = new Map<string, number>();
    for (const v of VENDORS)
      for (const r of env.emulators[v].accepted()) {
        const key = `${r.token}|${String((r.data as Record<string, unknown> | undefined)?.msg_id)}`;
        counts.set(key, (counts.get(key) ?? 0) + 1);
      }
    return counts;
  };
  const keyOf = (s: Sent) => `${s.user.token}|${s.msgId}`;
  /** Whether every one of `list` has reached its vendor (`some`: any of them). */
  const allArrived = (list: readonly Sent[]) => {
    const counts = accepted();
    return list.every((s) => counts.has(keyOf(s)));
  };
  const anyArrived = (list: readonly Sent[]) => {
    const counts = accepted();
    return list.some((s) => counts.has(keyOf(s)));
  };
  /** The removed app's pushes sent after its removal: they must reach no vendor. */
  let late: Sent[] = [];

  try {
    await until(() => sent.length > 0 && allArrived(sent.filter((s) => s.user.app === appA)), 'the first pushes arrive', 60_000);
    await sleep(3000);

    // 1. A fourth app: registered with the vendors, then added to the file (the folder watch reloads it).
    const [d] = await env.emulators.addApps([appD], { receiptUrls: env.receiptUrls(appD) });
    const withD = write({ ...file, apps: [...file.apps, d!] });
    await until(async () => (await runningVersion()) === withD, 'the file with the new app is in force');
    loaded.add(appD);
    const firstD = await until(() => anyArrived(sent.filter((s) => s.user.app === appD)), 'the new app’s first push', 10_000);
    assert.ok(firstD < 10_000, `the new app's pushes arrive within seconds (${firstD} ms)`);
    await sleep(3000);

    // 2. Rotate app B's HMS secret: HMS resets it (the old one no longer mints tokens), the file
    // gets the new one, SIGHUP reloads it at once.
    const hmsB = entry(appB).vendors.hms!;
    const rotated = `rotated-${env.run}-secret`;
    env.emulators.hms.registerApp({ clientId: String(hmsB.clientId), clientSecret: rotated, appId: appB });
    const mintedBefore = env.emulators.hms.tokensMinted;
    const next = structuredClone(file);
    next.apps.find((a) => a.appId === appB)!.vendors.hms!.clientSecret = rotated;
    const withRotation = write(next);
    process.kill(pid!, 'SIGHUP');
    await until(async () => (await runningVersion()) === withRotation, 'the rotated secret is in force');
    assert.equal(await metric('push_apps_reloads_total', { trigger: 'signal' }), 1, 'SIGHUP reloaded it');
    assert.equal(worker.process.exitCode, null, 'SIGHUP does not stop the worker');
    const afterRotation = sent.length;
    await until(() => anyArrived(sent.slice(afterRotation).filter((s) => s.user.app === appB && s.user.vendor === 'hms')), 'app B pushes through HMS again');
    assert.ok(env.emulators.hms.tokensMinted > mintedBefore, 'the new adapter minted a token with the new secret');
    await sleep(3000);

    // 3. App C's APNs connections (certificate auth), 2 → 4: a new pool of 4; the old one drained and closed.
    await until(() => env.emulators.apns.certificateConnections(topicC) === 2, 'app C on 2 certificate connections');
    const resized = structuredClone(file);
    resized.apps.find((a) => a.appId === appC)!.vendors.apns!.connections = 4;
    const withResize = write(resized);
    await until(async () => (await runningVersion()) === withResize, 'the resized pool is in force');
    await until(() => env.emulators.apns.certificateConnections(topicC) === 4, 'app C on 4 certificate connections, the old 2 closed');
    await sleep(3000);
    assert.equal(env.emulators.apns.certificateConnections(topicC), 4);

    // 4. Remove app C: its load stops, what it sent arrives; then the file without it, then more of its pushes.
    loaded.delete(appC);
    await sleep(TICK_MS * 2);
    await until(() => allArrived(sent.filter((s) => s.user.app === appC)), 'app C’s pushes so far arrive', 30_000);
    const withoutC = write({ ...file, apps: file.apps.filter((a) => a.appId !== appC) });
    await until(async () => (await runningVersion()) === withoutC, 'the file without app C is in force');
    const beforeLate = sent.length;
    tick++;
    await send(appC);
    late = sent.slice(beforeLate).filter((s) => s.user.app === appC);
    assert.equal(late.length, 6);
    await until(() => (watcher.counts.get(`${appC}|DROPPED/app_removed`) ?? 0) >= late.length, 'the removed app’s pushes end DROPPED app_removed');
    assert.equal(watcher.counts.get(`${appC}|DROPPED/app_removed`), late.length, 'each once');
    assert.equal(anyArrived(late), false, 'none reached a vendor');
    assert.equal(watcher.counts.get(`${appC}|DEAD_TOKEN`) ?? 0, 0, 'no token of the removed app invalidated');
    await until(() => env.emulators.apns.certificateConnections(topicC) === 0, 'the removed app’s connections closed');
    await sleep(2000);

    // 5. An invalid file: refused by the watch and by pushctl apps reload, naming the field; the running version stays.
    const failures = await metric('push_apps_reload_failures_total');
    const invalid = structuredClone(file);
    invalid.apps[1]!.vendors.fcm!.ratePerSecond = 0;
    write(invalid);
    await until(async () => (await metric('push_apps_reload_failures_total', { trigger: 'watch' })) > failures, 'the invalid file is refused');
    assert.equal(await runningVersion(), withoutC);
    const cli = await pushctl(['apps', 'reload', '--metrics', metricsUrl]);
    assert.equal(cli.code, 1, cli.stdout + cli.stderr);
    assert.match(cli.stdout, new RegExp(`REFUSED apps\\[1\\]\\.vendors\\.fcm\\.ratePerSecond: .*; still version ${withoutC}`));
    assert.equal(await metric('push_apps_reload_failures_total', { trigger: 'http' }), 1);
    const status = await pushctl(['status', '--app', env.applicationId, '--metrics', metricsUrl]);
    assert.match(status.stdout, new RegExp(`apps file: version ${withoutC}`));
    await sleep(3000);
  } finally {
    loading = false;
    await load;
  }

  // Every push sent while its app was listed reached its vendor exactly once.
  const removed = new Set(late);
  const settled = sent.filter((s) => !removed.has(s));
  await until(() => allArrived(settled), 'every push arrives', 60_000);
  assert.equal(anyArrived(late), false, 'the removed app’s later pushes never reached a vendor');
  await sleep(3000);
  const counts = accepted();
  const twice = settled.filter((s) => (counts.get(keyOf(s)) ?? 0) !== 1);
  assert.deepEqual(
    twice.map((s) => `${s.user.app} ${s.user.vendor} ${s.msgId} ×${counts.get(keyOf(s))}`),
    [],
    'each push accepted exactly once',
  );
  for (const app of [appA, appB, appD]) assert.ok(settled.filter((s) => s.user.app === app).length >= 30, `${app} had a steady load`);
  assert.equal(worker.process.pid, pid);
  assert.equal(worker.process.exitCode, null, 'the worker never restarted');
});
