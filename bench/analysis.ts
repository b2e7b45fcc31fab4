/**
 * Joins what the vendor emulators received with the timeline that produced it: persist → vendor
 * receive latency of offline devices' leading pushes, and, for the group-storm workload, vendor
 * submissions per trigger and whether every (device, conversation) ended on its latest seq.
 */
import type { ReceivedPush } from '../emulators/index.ts';
import type { Device, Population, TimedRecord } from '../demo/workload.ts';
import type { MessagePersisted } from '../processors/model/records.ts';
import { quantile } from './probes.ts';

/** The custom data every adapter sends (conv_id, seq, msg_id), as the emulators parsed it. */
function pushData(push: ReceivedPush): { conv_id?: string; seq?: number; msg_id?: string } {
  const d = push.data as Record<string, unknown> | undefined;
  if (!d || typeof d !== 'object') return {};
  return {
    ...(typeof d.conv_id === 'string' ? { conv_id: d.conv_id } : {}),
    ...(d.seq !== undefined ? { seq: Number(d.seq) } : {}),
    ...(typeof d.msg_id === 'string' ? { msg_id: d.msg_id } : {}),
  };
}

function devicesByToken(population: Population): Map<string, Device> {
  const map = new Map<string, Device>();
  for (const device of population.devices) for (const t of device.tokens) map.set(t.token, device);
  return map;
}

const persistedOf = (events: readonly TimedRecord[]): MessagePersisted[] => events.flatMap((e) => (e.topic === 'persisted' ? [e.value] : []));

export interface LatencyFigures {
  /** How the latency was measured. */
  readonly measured: string;
  /** Leading pushes to offline devices that the emulators accepted and that were joined. */
  readonly samples: number;
  readonly p50Ms: number | null;
  readonly p90Ms: number | null;
  readonly p99Ms: number | null;
  readonly p999Ms: number | null;
  readonly maxMs: number | null;
  /** Accepted pushes whose custom data could not be joined to a persisted message. */
  readonly unjoined: number;
}

/**
 * Latency from the scheduled persisted_at (the generator's timeline, so a late generator does not
 * hide waiting: no coordinated omission) to the emulator's receive time of the first accepted push
 * to each offline device for each leading message: one with no earlier message of the same
 * (uid, conv) within `idleMs` before it (so the merge window cannot have carried it).
 */
export function leadingPushLatency(events: readonly TimedRecord[], population: Population, received: readonly ReceivedPush[], idleMs: number): LatencyFigures {
  const byToken = devicesByToken(population);
  const lastInConv = new Map<string, number>();
  const leading = new Map<string, number>();
  for (const m of persistedOf(events)) {
    const conv = `${m.uid}|${m.conv_id}`;
    const previous = lastInConv.get(conv);
    if (previous === undefined || m.persisted_at - previous >= idleMs) leading.set(`${m.uid}|${m.msg_id}`, m.persisted_at);
    lastInConv.set(conv, m.persisted_at);
  }
  const seen = new Set<string>();
  const latencies: number[] = [];
  let unjoined = 0;
  for (const push of received) {
    if (push.answer !== 'accepted') continue;
    const device = byToken.get(push.token);
    if (!device) continue;
    const { msg_id } = pushData(push);
    if (msg_id === undefined) {
      unjoined++;
      continue;
    }
    if (device.presence !== 'offline') continue;
    const persistedAt = leading.get(`${device.uid}|${msg_id}`);
    const key = `${device.deviceId}|${msg_id}`;
    if (persistedAt === undefined || seen.has(key)) continue;
    seen.add(key);
    latencies.push(push.at - persistedAt);
  }
  latencies.sort((a, b) => a - b);
  return {
    measured: 'emulator receive time of the first accepted request minus the scheduled persisted_at, offline devices, leading pushes',
    samples: latencies.length,
    p50Ms: quantile(latencies, 0.5),
    p90Ms: quantile(latencies, 0.9),
    p99Ms: quantile(latencies, 0.99),
    p999Ms: quantile(latencies, 0.999),
    maxMs: latencies.length > 0 ? latencies[latencies.length - 1]! : null,
    unjoined,
  };
}

export interface StormFigures {
  /** Persisted messages (one per recipient) of the storm workload. */
  readonly triggers: number;
  /** Σ over triggers of the recipient's devices: the pushes with no merging at all. */
  readonly deviceTriggers: number;
  /** Requests the emulators received for the storm population's tokens (any answer). */
  readonly submissions: number;
  readonly acceptedSubmissions: number;
  /**
   * submissions ÷ triggers (the figure of docs/design.md, "Targets"; the stricter reading when
   * users have several devices).
   */
  readonly submissionsPerTrigger: number;
  /** submissions ÷ deviceTriggers. */
  readonly submissionsPerDeviceTrigger: number;
  /** (device, conversation) pairs that received messages. */
  readonly pairs: number;
  /** Pairs whose last accepted push carries the conversation's last seq (so its latest unread count). */
  readonly pairsFinalLatest: number;
  /** Pairs whose last accepted push carries an older seq: a lost final unread count. */
  readonly pairsFinalStale: number;
  /** Pairs that never got an accepted push. */
  readonly pairsWithoutPush: number;
}

export function stormFigures(events: readonly TimedRecord[], population: Population, received: readonly ReceivedPush[]): StormFigures {
  const byToken = devicesByToken(population);
  const usersById = new Map(population.users.map((u) => [u.uid, u]));
  const messages = persistedOf(events);
  const finalSeq = new Map<string, number>();
  let deviceTriggers = 0;
  for (const m of messages) {
    finalSeq.set(`${m.uid}|${m.conv_id}`, Math.max(finalSeq.get(`${m.uid}|${m.conv_id}`) ?? 0, m.seq));
    deviceTriggers += usersById.get(m.uid)?.devices.length ?? 0;
  }
  let submissions = 0;
  let accepted = 0;
  const last = new Map<string, { at: number; seq: number }>();
  for (const push of received) {
    const device = byToken.get(push.token);
    if (!device) continue;
    submissions++;
    if (push.answer !== 'accepted') continue;
    accepted++;
    const { conv_id, seq } = pushData(push);
    if (conv_id === undefined || seq === undefined) continue;
    const key = `${device.deviceId}|${conv_id}`;
    const previous = last.get(key);
    if (!previous || push.at > previous.at || (push.at === previous.at && seq > previous.seq)) last.set(key, { at: push.at, seq });
  }
  let pairs = 0;
  let latest = 0;
  let stale = 0;
  let without = 0;
  for (const [userConv, seq] of finalSeq) {
    const [uid, conv] = userConv.split('|') as [string, string];
    for (const device of usersById.get(uid)?.devices ?? []) {
      pairs++;
      const got = last.get(`${device.deviceId}|${conv}`);
      if (!got) without++;
      else if (got.seq >= seq) latest++;
      else stale++;
    }
  }
  const ratio = (a: number, b: number) => (b > 0 ? Math.round((a / b) * 1000) / 1000 : 0);
  return {
    triggers: messages.length,
    deviceTriggers,
    submissions,
    acceptedSubmissions: accepted,
    submissionsPerTrigger: ratio(submissions, messages.length),
    submissionsPerDeviceTrigger: ratio(submissions, deviceTriggers),
    pairs,
    pairsFinalLatest: latest,
    pairsFinalStale: stale,
    pairsWithoutPush: without,
  };
}
