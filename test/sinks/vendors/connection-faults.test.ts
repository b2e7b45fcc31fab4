import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { parseAppsConfig } from '../../../sinks/vendors/apps-config.ts';
import { createVendorRegistry, type VendorRegistry } from '../../../sinks/vendors/registry.ts';
import { NO_ANSWER, VENDORS, type PushMessage, type SubmitOutcome, type Vendor, type VendorAdapter } from '../../../processors/fan-out/vendor-port.ts';
import type { ConnectionFault } from '../../../emulators/index.ts';
import { startEmulators, type StartedEmulators } from '../../../emulators/index.ts';
import { message } from './support.ts';

/**
 * Whatever the connection does (TCP reset without GOAWAY, a stalled
 * answer, a server restart), every submit() settles within its timeout + 1 s (plus however late this
 * process's timers ran meanwhile, see `timerLateness`), and a driver that
 * resends what came back retryable on the same channel (as the fan-out does) ends with every push
 * accepted exactly once; resends carry the same collapse id; while the vendor is down, new
 * connections stay within the pool size per reconnect backoff step.
 */
const PUSHES = 1500;
const TIMEOUT_MS = 2000;
const SETTLE_MARGIN_MS = 1000;
const DOWN_MS = 1500;
/** The adapters' default first reconnect delay (sinks/vendors/reconnect.ts). */
const RECONNECT_INITIAL_MS = 250;
const MAX_ROUNDS = 40;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Starts measuring how late this process's timers fire; the function returned stops and answers the
 * worst lateness, ms. A submit's deadline is a timer: on a busy machine, or with 1500 answers to
 * handle in the same event loop, it fires that much late, and the call cannot settle sooner. A
 * submit without a deadline would still take far longer than that.
 */
function timerLateness(): () => number {
  const delay = monitorEventLoopDelay({ resolution: 10 });
  delay.enable();
  return () => {
    delay.disable();
    return delay.max / 1e6;
  };
}

/** The longest a submit may take: its timeout and margin, plus how late the timers ran. */
const settleBoundMs = (latenessMs: number) => TIMEOUT_MS + SETTLE_MARGIN_MS + latenessMs;

interface Delivery {
  /** Accepted outcomes per task id. */
  readonly accepted: Map<string, number>;
  /** Longest time one submit() took, ms. */
  maxSettleMs: number;
  /** How late this process's timers fired at worst during the delivery, ms (`timerLateness`). */
  latenessMs: number;
  /** Codes of the retryable outcomes seen. */
  readonly retryCodes: Set<string>;
  /** Outcomes that are neither accepted nor retryable (there should be none). */
  readonly unexpected: SubmitOutcome[];
}

/** Submits every message, then resends the retryable ones on the same adapter until all are accepted. */
async function deliver(adapter: VendorAdapter, messages: readonly PushMessage[]): Promise<Delivery> {
  const lateness = timerLateness();
  const d: Delivery = { accepted: new Map(), maxSettleMs: 0, latenessMs: 0, retryCodes: new Set(), unexpected: [] };
  let pending = [...messages];
  for (let round = 1; pending.length > 0 && round <= MAX_ROUNDS; round++) {
    const results = await Promise.all(
      pending.map(async (m) => {
        const started = performance.now();
        const [outcome] = await adapter.submit([m]);
        d.maxSettleMs = Math.max(d.maxSettleMs, performance.now() - started);
        return [m, outcome!] as const;
      }),
    );
    const next: PushMessage[] = [];
    let waitMs = 50;
    for (const [m, o] of results) {
      if (o.kind === 'accepted') d.accepted.set(m.taskId, (d.accepted.get(m.taskId) ?? 0) + 1);
      else if (o.kind === 'retryable') {
        next.push(m);
        d.retryCodes.add(o.code);
        waitMs = Math.max(waitMs, Math.min(2000, o.retryAfterMs ?? 0));
      } else d.unexpected.push(o);
    }
    pending = next;
    if (pending.length > 0) await sleep(waitMs);
  }
  d.latenessMs = lateness();
  return d;
}

/** Most reconnect steps whose jittered delays (at least half of 250, 500, 1000, ... ms) fit in `ms`. */
function maxSteps(ms: number): number {
  return Math.floor(Math.log2((2 * ms) / RECONNECT_INITIAL_MS + 1));
}

describe('connection faults: every vendor call settles within its deadline', () => {
  let em: StartedEmulators;
  let registry: VendorRegistry;

  before(async () => {
    em = await startEmulators();
  });
  after(async () => {
    await registry?.close();
    await em.close();
  });
  beforeEach(async () => {
    em.reset();
    await registry?.close();
    // Fresh connections per test, and a short timeout so stalled answers cost seconds, not minutes.
    const raw = em.rawAppsConfig as { ca: string; apps: Array<{ appId: string; vendors: Record<string, Record<string, unknown>> }> };
    const apps = raw.apps.map((a) => ({ ...a, vendors: Object.fromEntries(Object.entries(a.vendors).map(([v, c]) => [v, { ...c, timeoutMs: TIMEOUT_MS }])) }));
    registry = createVendorRegistry(parseAppsConfig({ ...raw, apps }), { now: () => em.clock.now() });
  });

  const adapterOf = (vendor: Vendor) => registry.adapter(vendor, 'app-1')! as VendorAdapter & { connectionsOpened: number };
  const pushes = (vendor: Vendor, scenario: string) => Array.from({ length: PUSHES }, (_, i) => message(em, vendor, `${scenario}${i}`));

  /** What a user checks after the storm: all delivered, each once as far as the pipeline knows, resends identical. */
  function assertDeliveredOnce(vendor: Vendor, messages: readonly PushMessage[], d: Delivery): void {
    assert.deepEqual(d.unexpected, [], `${vendor}: only accepted or retryable outcomes`);
    assert.ok(
      d.maxSettleMs <= settleBoundMs(d.latenessMs),
      `${vendor}: a submit() took ${Math.round(d.maxSettleMs)} ms (timeout ${TIMEOUT_MS} ms, timers up to ${Math.round(d.latenessMs)} ms late)`,
    );
    const notAccepted = messages.filter((m) => d.accepted.get(m.taskId) !== 1);
    assert.equal(
      notAccepted.length,
      0,
      `${vendor}: ${notAccepted.length} pushes not accepted exactly once (retryable codes seen: ${[...d.retryCodes].join(', ')})`,
    );
    const byToken = new Map<string, Array<ReturnType<StartedEmulators['apns']['accepted']>[number]>>();
    for (const r of em[vendor].accepted()) byToken.set(r.token, [...(byToken.get(r.token) ?? []), r]);
    for (const m of messages) {
      const got = byToken.get(m.token) ?? [];
      assert.ok(got.length >= 1, `${vendor}: the vendor never accepted ${m.taskId}`);
      assert.equal(new Set(got.map((r) => String(r.collapseId))).size, 1, `${vendor}: every copy of ${m.taskId} carries one collapse id`);
      if (vendor === 'apns' || vendor === 'fcm' || vendor === 'hms') assert.equal(got[0]!.collapseId, m.collapseId, vendor);
      if (vendor === 'apns') assert.equal(new Set(got.map((r) => (r.request as Record<string, string>)['apns-id'])).size, 1, 'a resend keeps its apns-id');
    }
  }

  async function storm(vendor: Vendor, scenario: string, faults: ReadonlyArray<[ConnectionFault, number]>): Promise<Delivery> {
    const messages = pushes(vendor, scenario);
    for (const [fault, times] of faults) em[vendor].scriptConnection(fault, { times });
    const d = await deliver(adapterOf(vendor), messages);
    assert.equal(
      em[vendor].connectionFaults,
      faults.reduce((n, [, times]) => n + times, 0),
      `${vendor}: every scripted fault happened`,
    );
    assertDeliveredOnce(vendor, messages, d);
    return d;
  }

  for (const vendor of VENDORS) {
    test(`${vendor}: TCP resets without GOAWAY, before and after the push was processed, under ${PUSHES} pushes in flight`, async () => {
      // A lost stream may be resent inside its deadline (APNs) or come back ANSWER_LOST: either way each push ends accepted once.
      await storm(vendor, 'rst', [
        [{ kind: 'reset' }, 5],
        [{ kind: 'reset', after: true }, 5],
      ]);
    });

    test(`${vendor}: stalled answers, before and after the push was processed, under ${PUSHES} pushes in flight`, async () => {
      const d = await storm(vendor, 'stall', [
        [{ kind: 'stall' }, 3],
        [{ kind: 'stall', after: true }, 3],
      ]);
      assert.ok(d.retryCodes.has(NO_ANSWER.unknown), `${vendor}: a stalled answer is ANSWER_LOST (${[...d.retryCodes]})`);
    });

    test(`${vendor}: a server restart under ${PUSHES} pushes in flight; reconnects stay within the pool size per backoff step`, async () => {
      const adapter = adapterOf(vendor);
      const messages = pushes(vendor, 'restart');
      // Warm the connections, so the outage starts with a full pool. The first call also fetches
      // the vendor's auth within the test's short timeout: on a loaded box it may take a second try.
      let warm = await adapter.submit([message(em, vendor, 'warm')]);
      for (let i = 1; i < 3 && warm[0]!.kind !== 'accepted'; i++) warm = await adapter.submit([message(em, vendor, `warm${i}`)]);
      assert.equal(warm[0]!.kind, 'accepted');
      let openedAtDown = 0;
      let openedAtUp = 0;
      const delivering = deliver(adapter, messages);
      await sleep(20);
      await em.restart(vendor, DOWN_MS, { down: () => (openedAtDown = adapter.connectionsOpened), up: () => (openedAtUp = adapter.connectionsOpened) });
      const d = await delivering;
      assertDeliveredOnce(vendor, messages, d);
      assert.ok(d.retryCodes.has(NO_ANSWER.notSent), `${vendor}: a refused connection is CONNECTION_LOST (${[...d.retryCodes]})`);
      const pool = em.appsConfig.apps[0]!.vendors[vendor]!.connections;
      const bound = pool * (1 + maxSteps(DOWN_MS));
      const duringOutage = openedAtUp - openedAtDown;
      assert.ok(duringOutage >= 1, `${vendor}: reconnects were tried while the vendor was down`);
      assert.ok(duringOutage <= bound, `${vendor}: ${duringOutage} new connections in a ${DOWN_MS} ms outage (pool ${pool}, at most ${bound})`);
    });
  }

  test('a vendor that accepts and answers after the timeout: the call settles at its deadline as ANSWER_LOST, and the resend is accepted with the same collapse id', async () => {
    for (const vendor of VENDORS) {
      const m = message(em, vendor, 'late');
      em[vendor].scriptConnection({ kind: 'late', delayMs: TIMEOUT_MS + 500 }, { token: m.token, times: 1 });
      const adapter = adapterOf(vendor);
      const started = performance.now();
      const lateness = timerLateness();
      const [first] = await adapter.submit([m]);
      assert.ok(performance.now() - started <= settleBoundMs(lateness()), vendor);
      assert.deepEqual(first, { kind: 'retryable', code: NO_ANSWER.unknown }, vendor);
      assert.equal(em[vendor].accepted().filter((r) => r.token === m.token).length, 1, `${vendor}: the vendor took it although the client gave up`);
      assert.equal((await adapter.submit([m]))[0]!.kind, 'accepted', vendor);
      const copies = em[vendor].accepted().filter((r) => r.token === m.token);
      assert.equal(copies.length, 2, vendor);
      assert.equal(copies[0]!.collapseId, copies[1]!.collapseId, `${vendor}: the resend replaces the first copy on the device`);
    }
  });
});
