/**
 * The verdict of a run, from what a user can observe: the vendor emulators' own recordings (what
 * reached the "devices"), the push.outcomes topic and the DLQ, compared with the scenario's
 * expectation. Nothing here reads the pipeline's internal state.
 */
import { ELLIPSIS } from '../sinks/vendors/text.ts';
import type { ReceivedPush } from '../emulators/index.ts';
import type { StartedEmulators } from '../emulators/index.ts';
import { VENDORS, type Vendor } from '../processors/fan-out/vendor-port.ts';
import { collapseId } from '../processors/model/ids.ts';
import type { PushOutcome } from '../processors/model/records.ts';
import { inputKey, pushKey, type ExpectedPush, type Scenario } from './scenario.ts';

export interface PushVerdict {
  readonly expected: number;
  /** Expected pushes that reached their vendor at least once. */
  readonly delivered: number;
  /** Accepted copies of optional pushes (a burst's middle message sent as the trailing update of a window a stall closed early). */
  readonly optionalDelivered: number;
  /** Expected pushes that never reached their vendor (keys `vendor|token|conv|seq`). */
  readonly lost: string[];
  /** Delivered through another of the device's channels than the preferred one (fallback after a 429, say). */
  readonly viaOtherChannel: string[];
  /** Extra copies of expected pushes (a push seen 3 times counts 2). */
  readonly duplicates: number;
  /** Of those extra copies, how many came through the same vendor with the same collapse id as the first (the device replaces them). */
  readonly duplicatesSharingCollapseId: number;
  /** Accepted pushes nobody expected (suppressed ones that went out, wrong token or vendor). */
  readonly unexpected: string[];
  /** Pushes whose collapse id is not the one derived from (uid, conv_id). */
  readonly wrongCollapseId: string[];
  /** Private-mode pushes whose payload contained the message summary. */
  readonly summaryLeaks: string[];
  /** Ordinary pushes that did not carry their summary. */
  readonly summaryMissing: string[];
  readonly byVendor: Record<string, { expected: number; delivered: number }>;
}

/** Which message a recorded vendor request was about: the custom data every adapter sends (conv_id, seq). */
export function messageOf(push: ReceivedPush): { convId: string; seq: number } | undefined {
  const data = push.data as Record<string, unknown> | undefined;
  if (!data || typeof data !== 'object') return undefined;
  const conv = data.conv_id;
  const seq = Number(data.seq);
  return typeof conv === 'string' && Number.isFinite(seq) ? { convId: conv, seq } : undefined;
}

/**
 * Every recorded request of the run's app. Emulators record the vendor's own app id where the
 * vendor has one (vivo's numeric appId), so the run's app is looked up in the apps config too.
 */
export function recordings(emulators: StartedEmulators, appId: string): ReceivedPush[] {
  const apps = (emulators.rawAppsConfig as { apps: Array<{ appId: string; vendors: Record<string, { appId?: string }> }> }).apps;
  const app = apps.find((a) => a.appId === appId);
  return VENDORS.flatMap((v) => {
    const ids = new Set([appId, ...(app?.vendors[v]?.appId !== undefined ? [String(app.vendors[v]!.appId)] : [])]);
    return emulators[v].received.filter((r) => ids.has(r.appId));
  });
}

/** Vendors whose replace key is a number (notify_id / notifyId) rather than a string. */
const NUMERIC_COLLAPSE: readonly string[] = ['xiaomi', 'oppo', 'vivo'];

export function verifyPushes(scenario: Scenario, received: readonly ReceivedPush[]): PushVerdict {
  // A push is about (device, conv_id, seq); which of the device's tokens carried it is checked apart
  // (a 429 or a dead token may rightly move it to the device's next channel).
  const deviceOfToken = new Map<string, string>();
  for (const d of scenario.devices) for (const t of d.tokens) deviceOfToken.set(`${t.vendor}|${t.token}`, d.deviceId);
  const expected = new Map<string, ExpectedPush>(scenario.expectedPushes.map((p) => [`${p.deviceId}|${p.convId}|${p.seq}`, p]));
  const optional = new Set(scenario.optionalPushes.map((p) => `${p.deviceId}|${p.convId}|${p.seq}`));
  const copies = new Map<string, ReceivedPush[]>();
  const unexpected: string[] = [];
  let optionalDelivered = 0;
  for (const r of received) {
    if (r.answer !== 'accepted') continue;
    const m = messageOf(r);
    const key = `${deviceOfToken.get(`${r.vendor}|${r.token}`) ?? '?'}|${m?.convId ?? '?'}|${m?.seq ?? -1}`;
    if (optional.has(key)) {
      optionalDelivered++;
      continue;
    }
    if (!expected.has(key)) {
      unexpected.push(pushKey(r.vendor, r.token, m?.convId ?? '?', m?.seq ?? -1));
      continue;
    }
    copies.set(key, [...(copies.get(key) ?? []), r]);
  }
  const lost: string[] = [];
  const viaOtherChannel: string[] = [];
  const wrongCollapseId: string[] = [];
  const summaryLeaks: string[] = [];
  const summaryMissing: string[] = [];
  const byVendor: Record<string, { expected: number; delivered: number }> = Object.fromEntries(VENDORS.map((v) => [v, { expected: 0, delivered: 0 }]));
  let duplicates = 0;
  let duplicatesSharingCollapseId = 0;
  const collapseOfConv = new Map<string, string>();
  const convOfCollapse = new Map<string, string>();
  for (const [key, p] of expected) {
    const label = pushKey(p.vendor, p.token, p.convId, p.seq);
    byVendor[p.vendor]!.expected++;
    const seen = copies.get(key) ?? [];
    if (seen.length === 0) {
      lost.push(label);
      continue;
    }
    byVendor[p.vendor]!.delivered++;
    if (seen[0]!.vendor !== p.vendor || seen[0]!.token !== p.token) viaOtherChannel.push(label);
    duplicates += seen.length - 1;
    // The device replaces a copy only when the same vendor shows it under the same collapse id.
    duplicatesSharingCollapseId += seen.slice(1).filter((r) => r.vendor === seen[0]!.vendor && r.collapseId === seen[0]!.collapseId).length;
    // String collapse ids (APNs, FCM, HMS) are the (uid, conv_id) digest itself; numeric notify ids
    // (Xiaomi, OPPO, vivo) must be one number per (uid, conv_id), different for different conversations.
    for (const r of seen) {
      const numeric = NUMERIC_COLLAPSE.includes(r.vendor);
      const id = r.collapseId === undefined ? undefined : String(r.collapseId);
      if (id === undefined || (!numeric && id !== collapseId(p.uid, p.convId)) || (numeric && !/^[1-9][0-9]*$/.test(id))) {
        wrongCollapseId.push(label);
        break;
      }
      const conv = `${r.vendor}|${p.uid}|${p.convId}`;
      const known = collapseOfConv.get(conv);
      const owner = convOfCollapse.get(`${r.vendor}|${r.token}|${id}`);
      if ((known !== undefined && known !== id) || (owner !== undefined && owner !== conv)) {
        wrongCollapseId.push(label);
        break;
      }
      collapseOfConv.set(conv, id);
      convOfCollapse.set(`${r.vendor}|${r.token}|${id}`, conv);
    }
    for (const r of seen) {
      const payload = JSON.stringify([r.title, r.body, r.data, r.request]);
      if (p.generic && payload.includes(p.summary)) summaryLeaks.push(label);
      // A trailing update may be silent and carry only the badge; leading pushes must say something.
      if (!p.generic && !p.trailing && !carriesSummary(r.body, p.summary)) summaryMissing.push(label);
    }
  }
  return {
    expected: expected.size,
    delivered: expected.size - lost.length,
    optionalDelivered,
    lost,
    viaOtherChannel,
    duplicates,
    duplicatesSharingCollapseId,
    unexpected,
    wrongCollapseId,
    summaryLeaks,
    summaryMissing,
    byVendor,
  };
}

export interface OutcomeVerdict {
  /** Inputs the scenario expects an outcome for (one per message and device, or per message for users without tokens). */
  readonly inputs: number;
  /** Inputs that ended in exactly one class, the expected one. */
  readonly asExpected: number;
  /** Inputs with no final outcome at all. */
  readonly missing: string[];
  /** Inputs that ended in more than one class. */
  readonly conflicting: Array<{ key: string; classes: string[] }>;
  /** Inputs that ended in one class, not the expected one. */
  readonly mismatched: Array<{ key: string; expected: string; got: string }>;
  /** Final classes counted over the expected inputs. */
  readonly byClass: Record<string, number>;
  /** Outcome records whose input the scenario did not produce (should be 0). */
  readonly foreign: number;
}

/** The final class(es) of one input from its outcome records (attempt records like THROTTLED are not final). */
export function finalClasses(records: readonly PushOutcome[]): string[] {
  const classes = new Set<string>();
  for (const o of records) {
    if (o.status === 'ACCEPTED' || o.status === 'MERGED') classes.add(o.status);
    else if (o.status === 'SUPPRESSED' || o.status === 'DROPPED') classes.add(`${o.status}/${o.reason}`);
  }
  if (classes.size === 0 && records.some((o) => o.status === 'FAILED' || o.status === 'DEAD_TOKEN' || o.status === 'THROTTLED')) classes.add('FAILED');
  return [...classes].sort();
}

export function verifyOutcomes(scenario: Scenario, outcomes: readonly PushOutcome[]): OutcomeVerdict {
  const byInput = new Map<string, PushOutcome[]>();
  let foreign = 0;
  for (const o of outcomes) {
    const key = inputKey(o.uid, o.conv_id, Number(o.seq), o.device_id);
    if (!scenario.expectedClasses.has(key)) {
      foreign++;
      continue;
    }
    byInput.set(key, [...(byInput.get(key) ?? []), o]);
  }
  const missing: string[] = [];
  const conflicting: Array<{ key: string; classes: string[] }> = [];
  const mismatched: Array<{ key: string; expected: string; got: string }> = [];
  const byClass: Record<string, number> = {};
  let asExpected = 0;
  for (const [key, expected] of scenario.expectedClasses) {
    const classes = finalClasses(byInput.get(key) ?? []);
    if (classes.length === 0) missing.push(key);
    else if (classes.length > 1) conflicting.push({ key, classes });
    else {
      byClass[classes[0]!] = (byClass[classes[0]!] ?? 0) + 1;
      if (expected.split('|').includes(classes[0]!)) asExpected++;
      else mismatched.push({ key, expected, got: classes[0]! });
    }
  }
  return { inputs: scenario.expectedClasses.size, asExpected, missing, conflicting, mismatched, byClass, foreign };
}

export interface VendorArrival {
  readonly submitted: number;
  readonly arrived: number;
}

/**
 * Ground truth of the arrival rate from the emulators' own recordings: per vendor, the distinct
 * (device token, conv_id, seq) the vendor was asked to deliver, and those it accepted.
 */
export function emulatorArrival(received: readonly ReceivedPush[]): Record<string, VendorArrival> {
  const submitted = new Map<Vendor, Set<string>>();
  const arrived = new Map<Vendor, Set<string>>();
  for (const r of received) {
    const m = messageOf(r);
    if (!m) continue;
    const key = pushKey(r.vendor, r.token, m.convId, m.seq);
    if (!submitted.has(r.vendor)) submitted.set(r.vendor, new Set());
    submitted.get(r.vendor)!.add(key);
    if (r.answer === 'accepted') {
      if (!arrived.has(r.vendor)) arrived.set(r.vendor, new Set());
      arrived.get(r.vendor)!.add(key);
    }
  }
  return Object.fromEntries([...submitted.keys()].sort().map((v) => [v, { submitted: submitted.get(v)!.size, arrived: arrived.get(v)?.size ?? 0 }]));
}

/** The summary as sent: whole, or cut to the vendor's limit with an ellipsis (sinks/vendors/text.ts). */
function carriesSummary(body: string | null | undefined, summary: string): boolean {
  if (body === summary) return true;
  return typeof body === 'string' && body.endsWith(ELLIPSIS) && body.length > ELLIPSIS.length && summary.startsWith(body.slice(0, -ELLIPSIS.length));
}
