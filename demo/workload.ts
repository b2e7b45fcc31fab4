/**
 * Synthetic IM traffic for the demo and the benchmark: a population of users with several devices
 * (each with the vendor tokens its maker implies), their settings, and a timeline of persisted
 * messages and presence events — one-to-one chats, group storms, devices that are online and ACK,
 * devices that went to the background. Deterministic for a seed.
 */
import type { Vendor } from '../processors/fan-out/vendor-port.ts';
import type { MessagePersisted, PresenceEvent, PresenceKind, TokenReport } from '../processors/model/records.ts';

export interface WorkloadOptions {
  /** Users in the population. */
  readonly users: number;
  /** Seed of the pseudo-random choices. Default 1. */
  readonly seed?: number;
  /** App every user belongs to (round-robin over the list). Default ['app-1']. */
  readonly apps?: readonly string[];
  /** Share of devices online and ACKing (their pushes are suppressed). Default 0.25. */
  readonly onlineShare?: number;
  /** Share of devices that reported BACKGROUND (pushed at once). Default 0.1. */
  readonly backgroundShare?: number;
  /** Share of users in quiet hours right now. Default 0.05. */
  readonly quietShare?: number;
  /** Share of users in private mode. Default 0.05. */
  readonly privateShare?: number;
  /** Share of devices whose first token the vendor reports dead. Default 0.03. */
  readonly deadTokenShare?: number;
  /** Members of each storm group. Default 20. */
  readonly groupSize?: number;
  /** Messages of one group storm (sent within ~2 s). Default 15. */
  readonly stormMessages?: number;
  /**
   * Prefix of every uid (and so of device and conversation ids). Give each run its own, so that runs
   * sharing one MySQL never collide on im_push_task's (uid, conv_id, seq, device_id). Default ''.
   */
  readonly idPrefix?: string;
}

/**
 * Per (conv, uid) seq and per uid unread counters of a timeline. Pass the same object to successive
 * `timeline` calls over one population so seqs and unread counts keep rising across them.
 */
export interface TimelineCounters {
  readonly seqs: Map<string, number>;
  readonly unread: Map<string, number>;
}

/** A synthetic device (of the demo population, of the chaos scenario) and the tokens its maker implies. */
export interface SyntheticDevice {
  readonly uid: string;
  readonly deviceId: string;
  readonly platform: 'ios' | 'android' | 'harmony';
  readonly manufacturer: string;
  /** Tokens in the order the device holds them; the first is its preferred channel. */
  readonly tokens: ReadonlyArray<{ vendor: Vendor; token: string }>;
}

export interface Device extends SyntheticDevice {
  readonly presence: 'online' | 'background' | 'offline';
  readonly deadFirstToken: boolean;
}

export interface User {
  readonly uid: string;
  readonly appId: string;
  readonly devices: readonly Device[];
  readonly timeZone: string;
  readonly quiet: boolean;
  readonly privateMode: boolean;
  readonly mutedConv?: string;
}

export interface Population {
  readonly users: readonly User[];
  readonly devices: readonly Device[];
}

/** A record for one of the input topics at a point of the timeline. */
export type TimedRecord =
  | { readonly topic: 'persisted'; readonly at: number; readonly key: string; readonly value: MessagePersisted }
  | { readonly topic: 'presence'; readonly at: number; readonly key: string; readonly value: PresenceEvent };

/** Mulberry32: small, fast, good enough for workloads. */
export function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The device makers, the platform and the push vendors of their devices (preferred first), and their share of devices. */
export const MAKERS: ReadonlyArray<{ manufacturer: string; platform: Device['platform']; vendors: Vendor[]; weight: number }> = [
  { manufacturer: 'apple', platform: 'ios', vendors: ['apns'], weight: 0.3 },
  { manufacturer: 'huawei', platform: 'harmony', vendors: ['hms', 'fcm'], weight: 0.2 },
  { manufacturer: 'xiaomi', platform: 'android', vendors: ['xiaomi', 'fcm'], weight: 0.15 },
  { manufacturer: 'oppo', platform: 'android', vendors: ['oppo'], weight: 0.12 },
  { manufacturer: 'vivo', platform: 'android', vendors: ['vivo'], weight: 0.1 },
  { manufacturer: 'samsung', platform: 'android', vendors: ['fcm'], weight: 0.13 },
];

/** A zone whose local clock is, right now, inside 22:00–08:00 (for quiet-hour users) or outside it. */
function zoneFor(quiet: boolean, nowMs: number): string {
  const zones = ['UTC', 'Asia/Shanghai', 'Europe/Berlin', 'America/New_York', 'Asia/Tokyo', 'America/Los_Angeles', 'Asia/Kolkata', 'Australia/Sydney'];
  for (const zone of zones) {
    const hour = Number(new Intl.DateTimeFormat('en-GB', { timeZone: zone, hour: '2-digit', hourCycle: 'h23' }).format(nowMs));
    const night = hour >= 22 || hour < 8;
    if (night === quiet) return zone;
  }
  return 'UTC';
}

export function buildPopulation(options: WorkloadOptions, tokenFor: (vendor: Vendor, seed: string) => string, nowMs = Date.now()): Population {
  const rnd = random(options.seed ?? 1);
  const apps = options.apps ?? ['app-1'];
  const users: User[] = [];
  const zones = { quiet: zoneFor(true, nowMs), awake: zoneFor(false, nowMs) };
  for (let u = 0; u < options.users; u++) {
    const uid = `${options.idPrefix ?? ''}u${u}`;
    const deviceCount = 1 + Math.floor(rnd() * 3);
    const devices: Device[] = [];
    for (let d = 0; d < deviceCount; d++) {
      let pick = rnd();
      const maker = MAKERS.find((m) => (pick -= m.weight) < 0) ?? MAKERS[0]!;
      const deviceId = `${uid}-d${d}`;
      const p = rnd();
      const presence =
        p < (options.onlineShare ?? 0.25) ? 'online' : p < (options.onlineShare ?? 0.25) + (options.backgroundShare ?? 0.1) ? 'background' : 'offline';
      devices.push({
        uid,
        deviceId,
        platform: maker.platform,
        manufacturer: maker.manufacturer,
        presence,
        tokens: maker.vendors.map((vendor) => ({ vendor, token: tokenFor(vendor, `${deviceId}-${vendor}`) })),
        deadFirstToken: rnd() < (options.deadTokenShare ?? 0.03),
      });
    }
    const quiet = rnd() < (options.quietShare ?? 0.05);
    users.push({
      uid,
      appId: apps[u % apps.length]!,
      devices,
      quiet,
      timeZone: quiet ? zones.quiet : zones.awake,
      privateMode: rnd() < (options.privateShare ?? 0.05),
      ...(rnd() < 0.05 ? { mutedConv: `c-${uid}-muted` } : {}),
    });
  }
  return { users, devices: users.flatMap((u) => u.devices) };
}

/** The VALID token report the client on `device` publishes for one of its tokens (keyed by uid). */
export function clientTokenReport(
  device: SyntheticDevice,
  t: { vendor: Vendor; token: string },
  appId: string,
  reportedAt: number,
): { key: string; value: TokenReport } {
  return {
    key: device.uid,
    value: {
      uid: device.uid,
      device_id: device.deviceId,
      platform: device.platform,
      vendor: t.vendor,
      app_id: appId,
      token: t.token,
      reported_at: reportedAt,
      state: 'VALID',
      source: 'CLIENT',
      reason: null,
      manufacturer: device.manufacturer,
    },
  };
}

/** Token reports and settings: what the clients and the settings service would have published. */
export function setupRecords(population: Population, nowMs = Date.now()) {
  const tokens = population.users.flatMap((user) =>
    user.devices.flatMap((device) => device.tokens.map((t) => clientTokenReport(device, t, user.appId, nowMs))),
  );
  const settings = population.users.map((user) => ({
    key: user.uid,
    value: {
      uid: user.uid,
      time_zone: user.timeZone,
      quiet_hours: user.quiet ? { start_minute: 22 * 60, end_minute: 8 * 60 } : null,
      muted_conversations: user.mutedConv ? [user.mutedConv] : [],
      private_mode: user.privateMode,
      updated_at: nowMs,
    },
  }));
  return { tokens, settings };
}

/**
 * The traffic: presence first (heartbeats of online devices, BACKGROUND of others), then messages
 * spread over `durationMs` from `startMs` — `stormShare` of them in group storms — each followed, for
 * online devices, by an ACK 50–300 ms later. Records come out in time order.
 */
export function* timeline(
  population: Population,
  options: WorkloadOptions & { messages: number; durationMs: number; startMs: number; stormShare?: number; counters?: TimelineCounters },
): Generator<TimedRecord> {
  const rnd = random((options.seed ?? 1) + 7);
  const events: TimedRecord[] = [];
  const presence = (device: Device, kind: PresenceKind, at: number, conv: string | null = null, seq: number | null = null) =>
    events.push({ topic: 'presence', at, key: device.uid, value: { uid: device.uid, device_id: device.deviceId, kind, conv_id: conv, seq, at } });
  for (const device of population.devices) {
    if (device.presence === 'online') presence(device, 'CONNECT', options.startMs - 1000);
    if (device.presence === 'background') presence(device, 'BACKGROUND', options.startMs - 1000);
  }
  const unread = options.counters?.unread ?? new Map<string, number>();
  const seqs = options.counters?.seqs ?? new Map<string, number>();
  const deliver = (user: User, conv: string, convType: 'SINGLE' | 'GROUP', sender: string, at: number, mention: MessagePersisted['mention']) => {
    const seq = (seqs.get(`${conv}|${user.uid}`) ?? 0) + 1;
    seqs.set(`${conv}|${user.uid}`, seq);
    const count = (unread.get(user.uid) ?? 0) + 1;
    unread.set(user.uid, count);
    events.push({
      topic: 'persisted',
      at,
      key: user.uid,
      value: {
        msg_id: `m-${conv}-${seq}`,
        conv_id: conv,
        conv_type: convType,
        seq,
        sender_uid: sender,
        uid: user.uid,
        unread_cnt: count,
        title: convType === 'GROUP' ? `Group ${conv}` : `User ${sender}`,
        summary: `message ${seq} in ${conv}`,
        sensitive: conv.endsWith('-s'),
        mention,
        persisted_at: at,
        app_id: user.appId,
      },
    });
    for (const device of user.devices) {
      if (device.presence === 'online') presence(device, 'ACK', at + 50 + Math.floor(rnd() * 250), conv, seq);
    }
  };
  const users = population.users;
  const stormMessages = options.stormMessages ?? 15;
  const groupSize = Math.min(options.groupSize ?? 20, users.length);
  let produced = 0;
  while (produced < options.messages) {
    const at = options.startMs + Math.floor(rnd() * options.durationMs);
    if (rnd() < (options.stormShare ?? 0.5) && produced + groupSize <= options.messages) {
      const first = Math.floor(rnd() * users.length);
      const members = Array.from({ length: groupSize }, (_, i) => users[(first + i) % users.length]!);
      const conv = `${options.idPrefix ?? ''}g${first}-${Math.floor(at / 60_000)}`;
      for (let m = 0; m < stormMessages && produced < options.messages; m++) {
        const sender = members[m % members.length]!;
        const when = at + Math.floor((m * 2000) / stormMessages);
        for (const member of members) {
          if (member === sender) continue;
          deliver(member, conv, 'GROUP', sender.uid, when, rnd() < 0.05 ? 'DIRECT' : 'NONE');
          produced++;
        }
      }
    } else {
      const to = users[Math.floor(rnd() * users.length)]!;
      const from = users[Math.floor(rnd() * users.length)]!;
      const conv = rnd() < 0.1 && to.mutedConv ? to.mutedConv : `c-${[to.uid, from.uid].sort().join('-')}${rnd() < 0.05 ? '-s' : ''}`;
      deliver(to, conv, 'SINGLE', from.uid, at, 'NONE');
      produced++;
    }
  }
  events.sort((a, b) => a.at - b.at);
  yield* events;
}
