/**
 * A scripted IM workload whose expected result is known in advance, independently of the pipeline:
 * every user belongs to one category (offline, private mode, online and ACKing, quiet hours, muted,
 * dead first token, no token) and every message goes to its own conversation, except the merge
 * bursts (three messages of one conversation within 400 ms). From the categories alone the scenario
 * says which pushes must reach which vendor with which token, and in which outcome class every
 * (message, device) must end (docs/design.md, "Nothing is lost; every ending is counted"). Used by
 * the end-to-end, scaling and chaos runs.
 */
import { clientTokenReport, MAKERS, random, type SyntheticDevice, type TimedRecord } from '../demo/workload.ts';
import type { Vendor } from '../processors/fan-out/vendor-port.ts';

export type Category = 'offline' | 'private' | 'online' | 'quiet' | 'muted' | 'dead-first' | 'no-token';

/**
 * The outcome class an input ends in: `ACCEPTED`, `MERGED`, `SUPPRESSED/<reason>`, `DROPPED/<reason>`;
 * `MERGED|ACCEPTED` where either is right (see `optionalPushes`).
 */
export type OutcomeClass = string;

export interface ScenarioDevice extends SyntheticDevice {
  readonly online: boolean;
}

export interface ScenarioUser {
  readonly uid: string;
  readonly category: Category;
  readonly devices: readonly ScenarioDevice[];
  /** Conversations the user muted (every conversation of a `muted` user). */
  readonly muted: readonly string[];
}

/** One push that must reach a vendor exactly once. */
export interface ExpectedPush {
  readonly vendor: Vendor;
  readonly token: string;
  readonly uid: string;
  readonly deviceId: string;
  readonly convId: string;
  readonly seq: number;
  /** The message summary; must appear in the payload unless `generic`. */
  readonly summary: string;
  /** Private-mode user: the payload must carry only the generic text. */
  readonly generic: boolean;
  /** A trailing merge update (silent). */
  readonly trailing: boolean;
}

export interface ScenarioOptions {
  readonly users: number;
  /** Messages per user (each its own conversation). Default 2. */
  readonly messagesPerUser?: number;
  /** Every n-th offline user also gets a three-message burst in one conversation. Default 10. */
  readonly burstEvery?: number;
  /** Spread of the messages, ms. */
  readonly durationMs: number;
  /** When the first message may be sent (epoch ms). */
  readonly startMs: number;
  readonly appId: string;
  /** Device tokens in each vendor's format (the emulators' `token`). */
  readonly tokenFor: (vendor: Vendor, seed: string) => string;
  /** Seed of the pseudo-random times. Default 1. */
  readonly seed?: number;
  /** uid prefix, so runs sharing an app never share users. Default `u`. */
  readonly uidPrefix?: string;
}

export interface Scenario {
  readonly users: readonly ScenarioUser[];
  readonly devices: readonly ScenarioDevice[];
  /** Token reports and settings to produce (and drain) before the timeline. */
  readonly setup: {
    tokens: Array<{ key: string; value: unknown }>;
    settings: Array<{ key: string; value: unknown }>;
    presence: Array<{ key: string; value: unknown }>;
  };
  /** Persisted messages, ACKs and heartbeats in time order. */
  readonly timeline: readonly TimedRecord[];
  readonly expectedPushes: readonly ExpectedPush[];
  /**
   * Pushes that may rightly go out or not: the middle message of a burst is merged while its window
   * stays open, but if processing stalls longer than the window (a rebalance, a restart), the window
   * closes with it as the trailing update and the third message opens a new one. Same collapse id.
   */
  readonly optionalPushes: readonly ExpectedPush[];
  /** Expected class per input key `uid|conv|seq|device` (device empty for user-level outcomes). */
  readonly expectedClasses: ReadonlyMap<string, OutcomeClass>;
  /** Tokens the vendors consider dead (to put into the emulators' `deadTokens`). */
  readonly deadTokens: ReadonlyArray<{ vendor: Vendor; token: string }>;
  /** Persisted messages in the timeline. */
  readonly messages: number;
}

export const inputKey = (uid: string, convId: string, seq: number, deviceId: string | null) => `${uid}|${convId}|${seq}|${deviceId ?? ''}`;
export const pushKey = (vendor: string, token: string, convId: string, seq: number) => `${vendor}|${token}|${convId}|${seq}`;

const CATEGORY_CYCLE: readonly Category[] = [
  'offline',
  'offline',
  'offline',
  'offline',
  'private',
  'online',
  'quiet',
  'muted',
  'dead-first',
  'offline',
  'offline',
  'no-token',
];

/** Makers whose devices hold two tokens (the first reported dead in the `dead-first` category). */
const TWO_TOKEN_MAKERS = MAKERS.filter((m) => m.vendors.length > 1);

/** Quiet hours (UTC) that cover now and the next two hours, whatever the time of day. */
function quietHoursAround(nowMs: number): { start_minute: number; end_minute: number } {
  const minute = Math.floor((nowMs % 86_400_000) / 60_000);
  return { start_minute: (minute + 1440 - 60) % 1440, end_minute: (minute + 120) % 1440 };
}

export function buildScenario(o: ScenarioOptions): Scenario {
  const rnd = random(o.seed ?? 1);
  const prefix = o.uidPrefix ?? 'u';
  const perUser = o.messagesPerUser ?? 2;
  const burstEvery = o.burstEvery ?? 10;
  const users: ScenarioUser[] = [];
  const deadTokens: Array<{ vendor: Vendor; token: string }> = [];
  for (let i = 0; i < o.users; i++) {
    const uid = `${prefix}${i}`;
    const category = CATEGORY_CYCLE[i % CATEGORY_CYCLE.length]!;
    const deviceCount = category === 'no-token' ? 0 : 1 + (i % 3 === 0 ? 1 : 0);
    const devices: ScenarioDevice[] = [];
    for (let d = 0; d < deviceCount; d++) {
      const maker = category === 'dead-first' ? TWO_TOKEN_MAKERS[d % 2]! : MAKERS[(i + d * 2) % MAKERS.length]!;
      const deviceId = `${uid}-d${d}`;
      const tokens = maker.vendors.map((vendor) => ({ vendor, token: o.tokenFor(vendor, `${deviceId}-${vendor}`) }));
      if (category === 'dead-first') deadTokens.push(tokens[0]!);
      // An "online" user has its first device online and ACKing; a second device stays offline.
      devices.push({ uid, deviceId, platform: maker.platform, manufacturer: maker.manufacturer, tokens, online: category === 'online' && d === 0 });
    }
    const muted = category === 'muted' ? Array.from({ length: perUser }, (_, k) => `c-${uid}-${k}`) : [];
    users.push({ uid, category, devices, muted });
  }

  const setup: Scenario['setup'] = { tokens: [], settings: [], presence: [] };
  for (const user of users) {
    for (const device of user.devices) {
      for (const t of device.tokens) setup.tokens.push(clientTokenReport(device, t, o.appId, o.startMs - 5000));
      if (device.online)
        setup.presence.push({
          key: user.uid,
          value: { uid: user.uid, device_id: device.deviceId, kind: 'CONNECT', conv_id: null, seq: null, at: o.startMs - 2000 },
        });
    }
    setup.settings.push({
      key: user.uid,
      value: {
        uid: user.uid,
        time_zone: 'UTC',
        quiet_hours: user.category === 'quiet' ? quietHoursAround(o.startMs) : null,
        muted_conversations: [...user.muted],
        private_mode: user.category === 'private',
        updated_at: o.startMs - 5000,
      },
    });
  }

  const timeline: TimedRecord[] = [];
  const expectedPushes: ExpectedPush[] = [];
  const optionalPushes: ExpectedPush[] = [];
  const expectedClasses = new Map<string, OutcomeClass>();
  let messages = 0;
  const message = (
    user: ScenarioUser,
    convId: string,
    seq: number,
    at: number,
    unread: number,
    klass: (d: ScenarioDevice) => OutcomeClass,
    trailing = false,
  ) => {
    const summary = `summary ${convId} #${seq} for ${user.uid}`;
    messages++;
    timeline.push({
      topic: 'persisted',
      at,
      key: user.uid,
      value: {
        msg_id: `m-${convId}-${seq}`,
        conv_id: convId,
        conv_type: 'SINGLE',
        seq,
        sender_uid: `s-${user.uid}`,
        uid: user.uid,
        unread_cnt: unread,
        title: `From s-${user.uid}`,
        summary,
        sensitive: false,
        mention: 'NONE',
        persisted_at: at,
        app_id: o.appId,
      },
    });
    if (user.devices.length === 0) {
      expectedClasses.set(inputKey(user.uid, convId, seq, null), 'DROPPED/no_token');
      return;
    }
    for (const device of user.devices) {
      const c = klass(device);
      expectedClasses.set(inputKey(user.uid, convId, seq, device.deviceId), c);
      if (device.online)
        timeline.push({
          topic: 'presence',
          at: at + 100,
          key: user.uid,
          value: { uid: user.uid, device_id: device.deviceId, kind: 'ACK', conv_id: convId, seq, at: at + 100 },
        });
      if (c === 'ACCEPTED' || c === 'MERGED|ACCEPTED') {
        const channel = user.category === 'dead-first' ? device.tokens[1]! : device.tokens[0]!;
        (c === 'ACCEPTED' ? expectedPushes : optionalPushes).push({
          vendor: channel.vendor,
          token: channel.token,
          uid: user.uid,
          deviceId: device.deviceId,
          convId,
          seq,
          summary,
          generic: user.category === 'private',
          trailing: trailing || c !== 'ACCEPTED',
        });
      }
    }
  };
  const plain =
    (user: ScenarioUser) =>
    (d: ScenarioDevice): OutcomeClass => {
      if (d.online) return 'SUPPRESSED/online_ack';
      if (user.category === 'quiet') return 'SUPPRESSED/dnd';
      if (user.category === 'muted') return 'SUPPRESSED/mute';
      return 'ACCEPTED';
    };
  // Messages stay clear of the last 10 % of the duration, so every hold and merge window closes in it.
  const at = () => o.startMs + Math.floor(rnd() * o.durationMs * 0.9);
  users.forEach((user, i) => {
    for (let k = 0; k < perUser; k++) message(user, `c-${user.uid}-${k}`, 1, at(), k + 1, plain(user));
    if (user.category === 'offline' && burstEvery > 0 && i % burstEvery === 0) {
      // Leading push at once, the middle one merged, the last one sent as the trailing update.
      const t = at();
      const conv = `b-${user.uid}`;
      message(user, conv, 1, t, perUser + 1, () => 'ACCEPTED');
      message(user, conv, 2, t + 200, perUser + 2, () => 'MERGED|ACCEPTED');
      message(user, conv, 3, t + 400, perUser + 3, () => 'ACCEPTED', true);
    }
  });
  // Heartbeats keep online devices online through long runs (the filter's timeout is 90 s).
  for (let hb = o.startMs + 30_000; hb < o.startMs + o.durationMs; hb += 30_000) {
    for (const user of users)
      for (const d of user.devices)
        if (d.online)
          timeline.push({
            topic: 'presence',
            at: hb,
            key: user.uid,
            value: { uid: user.uid, device_id: d.deviceId, kind: 'HEARTBEAT', conv_id: null, seq: null, at: hb },
          });
  }
  timeline.sort((a, b) => a.at - b.at);
  return { users, devices: users.flatMap((u) => u.devices), setup, timeline, expectedPushes, optionalPushes, expectedClasses, deadTokens, messages };
}
