/**
 * The campaign phase of the benchmark (docs/entry.md): IM latency with and without a
 * campaign on the business lane, measured in the same run. First a steady IM load alone (the
 * latency population's leading pushes to offline devices, persist → vendor), then the same load
 * again while a campaign of `users` users, submitted as one push.campaigns record naming a uid
 * file, goes through the expansion (PUSH_CAMPAIGN_EXPANSION_RATE) → push.requests → business →
 * push.dispatch.business → fan-out-business. Reported: both IM latency figures and their p99 ratio
 * (the target: within 20 %), the expansion rate, the campaign's send rate at the vendors against
 * the sender's rate limit (the workers' default PUSH_BUSINESS_STRATEGIES: 500/s per sender), and
 * whether every campaign user got exactly one push. Campaign users have one device each, of the IM
 * population's makers in their shares (campaignDevice). */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Environment } from '../demo/environment.ts';
import type { ReceivedPush } from '../emulators/index.ts';
import { MAKERS, type Population, type TimedRecord } from '../demo/workload.ts';
import type { Vendor } from '../processors/fan-out/vendor-port.ts';
import { cancelRecord, type PushCampaignRecord, type PushRequestRecord } from '../processors/campaigns/records.ts';
import type { TokenReport, UserSettings } from '../processors/model/records.ts';
import { leadingPushLatency, type LatencyFigures } from './analysis.ts';
import { runStep, waitDrained, type PipelineUnderTest } from './steps.ts';
import { formatByApp, formatSegments } from './worker-metrics.ts';

export interface CampaignPhaseOptions {
  /** Campaign recipients (one Android device with an FCM token each). */
  readonly users: number;
  /** The IM load beside it, persisted msgs/s, and how long each of the two IM runs lasts, s. */
  readonly imRate: number;
  readonly imSeconds: number;
  /** The sender rate the workers apply to the campaign's sender (PUSH_BUSINESS_STRATEGIES; default 500/s). */
  readonly senderRatePerSecond: number;
  readonly mergeWindowMs: number;
  /** Most time the campaign may take to reach every user before the phase gives up, s. */
  readonly timeoutSeconds: number;
  /** The workers' PUSH_CAMPAIGN_UID_DIR (the campaign's uid file is written there) and PUSH_CAMPAIGN_EXPANSION_RATE. */
  readonly uidDir: string;
  readonly expansionRatePerSecond: number;
}

export interface CampaignFigures {
  readonly users: number;
  readonly imRate: number;
  /** The IM load alone, before the campaign and again after it ended (the box's noise between the two shows in their spread). */
  readonly imAlone: LatencyFigures;
  readonly imAloneAfter: LatencyFigures;
  readonly imWithCampaign: LatencyFigures;
  /** imWithCampaign p99 ÷ the lower of the two IM-alone p99s − 1, %; the target is ≤ 20. */
  readonly imP99IncreasePct: number | null;
  /** The campaigns stage's expansion rate, per-user requests per second at most (what feeds the lane). */
  readonly expansionRatePerSecond: number;
  /** Campaign users whose push reached the vendor, and how many got it more than once. */
  readonly reached: number;
  readonly repeated: number;
  /** From the first request produced to the last campaign push at the vendor, s. */
  readonly seconds: number;
  /** Distinct campaign users reached per second. */
  readonly sendPerSecond: number;
  /** Campaign users reached per second while the IM load ran beside it (the expansion yields to IM: PUSH_CAMPAIGN_YIELD_DELAY_MS). */
  readonly besideSendPerSecond: number;
  readonly senderRatePerSecond: number;
  /** The send rate did not exceed the sender's rate limit (1 % tolerance for clock granularity). */
  readonly withinRateLimit: boolean;
}

const CAMPAIGN_SENDER = 'bench-campaign';
/** The campaign sender's send-rate limit: the workers' default PUSH_BUSINESS_STRATEGIES rate per sender, pushes/s. */
export const CAMPAIGN_SENDER_RATE = 500;

/** An Etc/GMT zone where it is about noon now, so the night rule never holds the campaign back. */
export function noonZone(nowMs = Date.now()): string {
  const offset = 12 - new Date(nowMs).getUTCHours(); // local = UTC + offset; Etc/GMT-X means UTC+X
  const bounded = Math.max(-12, Math.min(14, offset));
  return bounded === 0 ? 'Etc/GMT' : `Etc/GMT${bounded > 0 ? '-' : '+'}${Math.abs(bounded)}`;
}

/** A campaign user's one device: its maker, platform and the vendor of its token. */
export interface CampaignDevice {
  readonly vendor: Vendor;
  readonly platform: TokenReport['platform'];
  readonly manufacturer: string;
}

const FCM_PHONE: CampaignDevice = { vendor: 'fcm', platform: 'android', manufacturer: 'google' };

/**
 * The device of campaign user number `i`: the IM population's makers (demo/workload.ts MAKERS) in
 * their shares, each with its preferred vendor, so a campaign reaches Huawei, Xiaomi, OPPO and vivo
 * phones through their batch APIs and the rest one token per call, as a real app's users would.
 */
export function campaignDevice(i: number): CampaignDevice {
  let pick = ((i * 7919) % 1000) / 1000;
  const maker = MAKERS.find((m) => (pick -= m.weight) < 0) ?? MAKERS[0]!;
  return { vendor: maker.vendors[0]!, platform: maker.platform, manufacturer: maker.manufacturer };
}

/**
 * Token reports (one device `phone` per user: token → uid; `deviceOf` gives its maker and vendor,
 * an Android phone with an FCM token by default) and settings in `zone` for campaign users.
 */
export function campaignUserRecords(
  tokenOf: ReadonlyMap<string, string>,
  appId: string,
  zone: string,
  now: number,
  deviceOf: (uid: string) => CampaignDevice = () => FCM_PHONE,
) {
  const tokens = [...tokenOf].map(([token, uid]) => {
    const device = deviceOf(uid);
    const value: TokenReport = {
      uid,
      device_id: 'phone',
      platform: device.platform,
      vendor: device.vendor,
      app_id: appId,
      token,
      reported_at: now,
      state: 'VALID',
      source: 'CLIENT',
      reason: null,
      manufacturer: device.manufacturer,
    };
    return { key: uid, value };
  });
  const settings = [...tokenOf.values()].map((uid) => {
    const value: UserSettings = { uid, time_zone: zone, quiet_hours: null, muted_conversations: [], private_mode: false, updated_at: now };
    return { key: uid, value };
  });
  return { tokens, settings };
}

/** A campaign's request for one user (idempotency key `<campaign>:<uid>`); `fields` override the rest. */
export function campaignRequest(uid: string, fields: Partial<PushRequestRecord> & Pick<PushRequestRecord, 'sender' | 'app_id'>): PushRequestRecord {
  return {
    uid,
    idempotency_key: `${fields.campaign_id ?? 'campaign'}:${uid}`,
    category: 'CAMPAIGN',
    priority: 'LOW',
    title: 'Spring sale',
    body: 'Everything half price today',
    template_id: null,
    template_params: {},
    data: {},
    device_id: null,
    collapse_key: null,
    expire_at: null,
    campaign_id: null,
    requested_at: Date.now(),
    ...fields,
  };
}

function takeReceived(env: Environment): ReceivedPush[] {
  return env.emulators.all().flatMap((e) => e.received.splice(0, e.received.length));
}

export async function runCampaignPhase(
  put: PipelineUnderTest & { env: Environment },
  population: Population,
  load: (rate: number, seconds: number) => { records: TimedRecord[]; window: { startMs: number; seconds: number } },
  o: CampaignPhaseOptions,
): Promise<CampaignFigures> {
  const { env, say } = put;
  const settleMs = o.mergeWindowMs + 2000;
  const now = Date.now();
  const zone = noonZone(now);
  const uids = Array.from({ length: o.users }, (_, i) => `${env.run}c${i}`);
  const devices = new Map(uids.map((uid, i) => [uid, campaignDevice(i)]));
  const tokenOf = new Map(uids.map((uid) => [env.emulators.token(devices.get(uid)!.vendor, `${uid}-phone`), uid]));
  const { tokens, settings } = campaignUserRecords(tokenOf, env.appId, zone, now, (uid) => devices.get(uid)!);
  say(`[bench] campaign: ${o.users} users' tokens and settings (zone ${zone}) ...`);
  await put.traffic.send('tokens', tokens);
  await put.traffic.send('settings', settings);
  await waitDrained(put, 600_000);
  takeReceived(env);

  say(`[bench] campaign: IM alone at ${o.imRate} msgs/s for ${o.imSeconds} s ...`);
  const alone = load(o.imRate, o.imSeconds);
  const aloneStep = await runStep(put, `IM alone ${o.imRate}/s`, alone.records, { settleMs, window: alone.window });
  const imAlone = leadingPushLatency(alone.records, population, takeReceived(env), 2 * o.mergeWindowMs);

  // The campaign comes as large ones do: one push.campaigns record naming a uid file, expanded by the
  // campaigns stage at PUSH_CAMPAIGN_EXPANSION_RATE into push.requests.
  const campaignId = `${env.run}-spring`;
  writeFileSync(join(o.uidDir, `${campaignId}.txt`), `${uids.join('\n')}\n`);
  const campaign: PushCampaignRecord = {
    ...cancelRecord(campaignId, CAMPAIGN_SENDER, Date.now()),
    action: 'CREATE',
    app_id: env.appId,
    title: 'Spring sale',
    body: 'Everything half price today',
    collapse_key: 'spring-sale',
    uid_file: `${campaignId}.txt`,
  };
  say(`[bench] campaign: ${o.users} users from ${CAMPAIGN_SENDER} (push.campaigns, a uid file) with IM at ${o.imRate} msgs/s beside them ...`);
  const beside = load(o.imRate, o.imSeconds);
  const campaignStart = Date.now();
  await put.traffic.send('campaigns', [{ key: campaignId, value: campaign }]);
  const imStep = runStep(put, `IM beside campaign ${o.imRate}/s`, beside.records, { settleMs, window: beside.window });
  const received: ReceivedPush[] = [];
  const besideStep = await imStep;
  received.push(...takeReceived(env));
  const imWithCampaign = leadingPushLatency(beside.records, population, received, 2 * o.mergeWindowMs);

  const reachedUsers = new Map<string, number>();
  let last = campaignStart;
  const count = (pushes: readonly ReceivedPush[]) => {
    for (const p of pushes) {
      const uid = p.answer === 'accepted' ? tokenOf.get(p.token) : undefined;
      if (uid === undefined) continue;
      reachedUsers.set(uid, (reachedUsers.get(uid) ?? 0) + 1);
      last = Math.max(last, p.at);
    }
  };
  // Campaign users reached while the IM load ran (its window, not the drain after it).
  const besideEnd = beside.window.startMs + beside.window.seconds * 1000;
  const besideReached = new Set(received.filter((p) => p.answer === 'accepted' && p.at <= besideEnd && tokenOf.has(p.token)).map((p) => p.token)).size;
  const besideSendPerSecond = Math.round(besideReached / Math.max(0.001, (besideEnd - campaignStart) / 1000));
  count(received);
  const deadline = campaignStart + o.timeoutSeconds * 1000;
  while (reachedUsers.size < o.users && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 1000));
    count(takeReceived(env));
  }
  const seconds = Math.max(0.001, (last - campaignStart) / 1000);
  const sendPerSecond = Math.round(reachedUsers.size / seconds);

  // The same IM load alone once more, after the campaign: the comparison is with the better of the
  // two runs alone, so background work left over before the first (the campaign users' tokens being
  // written away) cannot make the campaign look cheaper than it is.
  await waitDrained(put, 600_000);
  takeReceived(env);
  say(`[bench] campaign: IM alone again at ${o.imRate} msgs/s for ${o.imSeconds} s ...`);
  const again = load(o.imRate, o.imSeconds);
  const afterStep = await runStep(put, `IM alone again ${o.imRate}/s`, again.records, { settleMs, window: again.window });
  const imAloneAfter = leadingPushLatency(again.records, population, takeReceived(env), 2 * o.mergeWindowMs);
  const aloneP99s = [imAlone.p99Ms, imAloneAfter.p99Ms].filter((p): p is number => p !== null && p > 0);
  const baseline = aloneP99s.length > 0 ? Math.min(...aloneP99s) : null;
  const figures: CampaignFigures = {
    users: o.users,
    imRate: o.imRate,
    imAlone,
    imAloneAfter,
    imWithCampaign,
    imP99IncreasePct: baseline !== null && imWithCampaign.p99Ms !== null ? Math.round(((imWithCampaign.p99Ms - baseline) / baseline) * 1000) / 10 : null,
    expansionRatePerSecond: o.expansionRatePerSecond,
    reached: reachedUsers.size,
    repeated: [...reachedUsers.values()].filter((n) => n > 1).length,
    seconds: Math.round(seconds * 10) / 10,
    sendPerSecond,
    besideSendPerSecond,
    senderRatePerSecond: o.senderRatePerSecond,
    withinRateLimit: sendPerSecond <= o.senderRatePerSecond * 1.01,
  };
  say(
    `[bench] campaign: IM p99 ${imAlone.p99Ms} ms alone before, ${imAloneAfter.p99Ms} ms alone after, ${imWithCampaign.p99Ms} ms beside the campaign (${figures.imP99IncreasePct ?? 'n/a'} % over the lower alone); ` +
      `campaign ${figures.reached}/${o.users} users in ${figures.seconds} s (${sendPerSecond}/s, ${besideSendPerSecond}/s while IM ran beside it, limit ${o.senderRatePerSecond}/s), expanded at ≤ ${o.expansionRatePerSecond}/s`,
  );
  // Where the IM pushes' time went in each run (the IM workers' histograms), so a rise shows its segment.
  for (const [label, step] of [
    ['IM alone', aloneStep],
    ['IM beside the campaign', besideStep],
    ['IM alone again', afterStep],
  ] as const) {
    say(`[bench] campaign: segments of the leading pushes, ${label}:`);
    for (const line of step.breakdown ? formatSegments(step.breakdown.segments) : ['    (no worker metrics)']) say(line);
    // Every stage's transactions share the broker (and its marker writes) with the IM pushes'.
    if (step.breakdown) say(`    transactions/s ${step.breakdown.commitsPerSecond}: ${formatByApp(step.breakdown.commitsPerSecondByApp)}`);
  }
  return figures;
}
