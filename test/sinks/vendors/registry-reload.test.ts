/**
 * The vendor registry swapped per app at run time (sinks/vendors/registry.ts `replace`, docs/vendors.md
 * "Reloading the apps file"): what a new apps file adds, removes, changes and leaves alone; calls in
 * flight on a replaced app's adapters finish there, which then close; a call that reaches them later
 * goes to the app's new adapters, or, the app removed, is not made.
 */
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { startEmulators, type RawAppEntry, type StartedEmulators } from '../../../emulators/index.ts';
import { parseAppsConfig, type AppsConfig } from '../../../sinks/vendors/apps-config.ts';
import { APP_REMOVED_CODE, createVendorRegistry, type ReloadableVendorRegistry } from '../../../sinks/vendors/registry.ts';
import { message } from './support.ts';

describe('reloading the vendor registry', () => {
  let em: StartedEmulators;
  let registry: ReloadableVendorRegistry;
  /** An apps file of these entries (the emulators' CA unless given). */
  const file = (apps: readonly RawAppEntry[], ca = em.ca): AppsConfig => parseAppsConfig({ ca, apps });
  const entry = (appId: string): RawAppEntry => structuredClone(em.rawAppsConfig.apps.find((a) => a.appId === appId)!);

  before(async () => {
    em = await startEmulators({ apps: ['app-a', 'app-b', 'app-c'] });
  });
  after(() => em.close());
  beforeEach(async () => {
    em.reset();
    await registry?.close();
    registry = createVendorRegistry(file([entry('app-a'), entry('app-b'), entry('app-c')]));
  });

  test('a new file is diffed per app: unchanged apps keep their adapters and connections, changed ones get new adapters, removed ones none', async () => {
    const a = registry.adapter('apns', 'app-a')!;
    const b = registry.adapter('fcm', 'app-b')!;
    // Both connections of its pool open (requests go round-robin over them).
    await a.submit([message(em, 'apns', 'a1', { appId: 'app-a' }), message(em, 'apns', 'a1b', { appId: 'app-a' })]);
    const opened = (a as unknown as { connectionsOpened: number }).connectionsOpened;
    const changedB = entry('app-b');
    changedB.vendors.fcm!.connections = 8;
    const change = registry.replace(file([entry('app-a'), changedB]));
    assert.deepEqual([change.added, change.removed, change.changed, change.unchanged], [[], ['app-c'], ['app-b'], ['app-a']]);
    await change.drained;
    assert.equal(registry.adapter('apns', 'app-a'), a, 'an unchanged app keeps its adapter');
    await a.submit([message(em, 'apns', 'a2', { appId: 'app-a' }), message(em, 'apns', 'a2b', { appId: 'app-a' })]);
    assert.equal((a as unknown as { connectionsOpened: number }).connectionsOpened, opened, '… and its connections');
    assert.notEqual(registry.adapter('fcm', 'app-b'), b, 'a changed app gets new adapters');
    assert.equal(registry.limits('fcm', 'app-b')?.concurrency, 256);
    assert.equal(registry.hasApp('app-c'), false);
    assert.equal(registry.adapter('apns', 'app-c'), undefined);
  });

  test('an app added by a reload is served at once', async () => {
    const [d] = await em.addApps(['app-d']);
    const change = registry.replace(file([entry('app-a'), entry('app-b'), entry('app-c'), d!]));
    assert.deepEqual(change.added, ['app-d']);
    assert.equal(registry.hasApp('app-d'), true);
    for (const vendor of ['apns', 'hms', 'vivo'] as const) {
      const [outcome] = await registry.adapter(vendor, 'app-d')!.submit([message(em, vendor, `d-${vendor}`, { appId: 'app-d' })]);
      assert.equal(outcome!.kind, 'accepted', vendor);
    }
    assert.deepEqual(new Set(em.apns.accepted().map((r) => r.appId)), new Set(['app-d']));
  });

  test('a changed app: its call in flight finishes on the old adapter, which then closes; a call through the old adapter afterwards goes to the new one', async () => {
    const old = registry.adapter('apns', 'app-b')!;
    await old.submit([message(em, 'apns', 'warm', { appId: 'app-b' })]);
    const connectionsBefore = em.apns.openConnections;
    em.apns.latencyMs = 400;
    const inFlight = old.submit([message(em, 'apns', 'in-flight', { appId: 'app-b' })]);
    await new Promise((r) => setTimeout(r, 100));
    const changed = entry('app-b');
    changed.vendors.apns!.connections = 3;
    const change = registry.replace(file([entry('app-a'), changed, entry('app-c')]));
    assert.deepEqual(change.changed, ['app-b']);
    let drained = false;
    void change.drained.then(() => (drained = true));
    const [outcome] = await inFlight;
    assert.equal(
      outcome!.kind,
      'accepted',
      `the call in flight finished on the old adapter: ${JSON.stringify(outcome)} ${em.apns.received.map((r) => r.answer).join()}`,
    );
    await change.drained;
    assert.ok(drained);
    em.apns.latencyMs = 0;
    // Its connections are closed: none of the old pool is left open at the emulator.
    await until(() => em.apns.openConnections < connectionsBefore, 'the old pool closed');
    const fresh = registry.adapter('apns', 'app-b')!;
    assert.notEqual(fresh, old);
    // A fan-out path made before the swap still holds the old adapter: its call goes to the new one.
    const [late] = await old.submit([message(em, 'apns', 'late', { appId: 'app-b' })]);
    assert.equal(late!.kind, 'accepted');
    assert.equal((fresh as unknown as { connectionsOpened: number }).connectionsOpened, 1, 'sent on the new adapter’s pool');
  });

  test('drained waits for the calls in flight, then closes', async () => {
    const old = registry.adapter('hms', 'app-c')!;
    em.hms.latencyMs = 500;
    const started = Date.now();
    const inFlight = old.submit([message(em, 'hms', 'slow', { appId: 'app-c' })]);
    await new Promise((r) => setTimeout(r, 50));
    const change = registry.replace(file([entry('app-a'), entry('app-b')]));
    await change.drained;
    assert.ok(Date.now() - started >= 450, 'the drain waited for the call');
    assert.equal((await inFlight)[0]!.kind, 'accepted');
    em.hms.latencyMs = 0;
  });

  test('a removed app: a call that still reaches its adapter is not made, answered retryable APP_REMOVED for the fan-out to end', async () => {
    const old = registry.adapter('xiaomi', 'app-c')!;
    await registry.replace(file([entry('app-a'), entry('app-b')])).drained;
    assert.deepEqual(await old.submit([message(em, 'xiaomi', 'gone', { appId: 'app-c' })]), [{ kind: 'retryable', code: APP_REMOVED_CODE }]);
    assert.equal(em.xiaomi.received.length, 0);
    assert.equal(registry.receiptParser('xiaomi') !== undefined, true, 'receipts still parse through the apps left');
  });

  test('a changed CA changes every app; the same file again changes none', async () => {
    const same = registry.replace(file([entry('app-a'), entry('app-b'), entry('app-c')]));
    assert.deepEqual([same.added, same.removed, same.changed], [[], [], []]);
    const caChanged = registry.replace(file([entry('app-a'), entry('app-b'), entry('app-c')], `${em.ca}\n`));
    assert.deepEqual(caChanged.changed, ['app-a', 'app-b', 'app-c']);
    await caChanged.drained;
  });

  test('apps of one APNs team key keep sharing one provider token across a reload of another app', async () => {
    const a = registry.adapter('apns', 'app-a')!;
    await a.submit([message(em, 'apns', 't1', { appId: 'app-a' })]);
    const changed = entry('app-b');
    changed.vendors.apns!.connections = 4;
    await registry.replace(file([entry('app-a'), changed, entry('app-c')])).drained;
    await registry.adapter('apns', 'app-b')!.submit([message(em, 'apns', 't2', { appId: 'app-b' })]);
    const jwts = new Set(em.apns.received.map((r) => (r.request as Record<string, string>).authorization));
    assert.equal(jwts.size, 1, 'the rebuilt app uses the token already in use');
  });
});

async function until(done: () => boolean, what: string, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!done()) {
    if (Date.now() > deadline) assert.fail(`${what}: not within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
