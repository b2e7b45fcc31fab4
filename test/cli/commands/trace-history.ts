/**
 * The scripted histories of the large `pushctl trace` test (test/cli/commands/trace-history.stack.test.ts), and
 * the timeline the trace must show for each user, built here from the script alone.
 *
 * Eight histories, one per user in turn: an offline push (every fourth one in private mode), an
 * online device that ACKs within the hold window, quiet hours in the user's own zone (Asia/Tokyo),
 * a muted conversation (one message without a mention, suppressed; one with an @mention, which
 * overrides mute), a merge burst (leading push, one merged, the trailing update), a dead first
 * token (HMS refuses it, FCM takes the push, the token is invalidated), a quota re-route (Xiaomi's
 * daily quota is 0, so the Xiaomi phone is pushed through FCM) and a user with two offline devices,
 * the first of which was connected once (so its pushes say how old its last heartbeat was).
 * Only quota users have Xiaomi phones, so the quota touches no other history.
 */
import { clientTokenReport, MAKERS, type SyntheticDevice, type TimedRecord } from '../../../demo/workload.ts';
import type { Vendor } from '../../../processors/fan-out/vendor-port.ts';
import type { MessagePersisted } from '../../../processors/model/records.ts';

export type History = 'offline' | 'online' | 'dnd' | 'mute' | 'burst' | 'dead-token' | 'quota' | 'two-devices';
export const HISTORIES: readonly History[] = ['offline', 'online', 'dnd', 'mute', 'burst', 'dead-token', 'quota', 'two-devices'];

/** Settings the workers run with: the expectations below depend on them. */
export const HOLD_WINDOW_MS = 5000;
export const MERGE_WINDOW_MS = 3000;
export const QUIET_ZONE = 'Asia/Tokyo';
export const HEARTBEAT_TIMEOUT_MS = 600_000;
export const workerSettings = (): Record<string, string> => ({
  PUSH_HOLD_WINDOW_MS: String(HOLD_WINDOW_MS),
  PUSH_MERGE_WINDOW_MS: String(MERGE_WINDOW_MS),
  PUSH_VENDOR_QUOTAS: 'xiaomi:*=0',
  PUSH_MENTION_RULE: 'mute',
  // Online devices connect during the setup and send no heartbeat after it: they stay online through the run.
  PUSH_HEARTBEAT_TIMEOUT_MS: String(HEARTBEAT_TIMEOUT_MS),
});

export interface HistoryUser {
  readonly uid: string;
  readonly history: History;
  readonly privateMode: boolean;
  readonly devices: readonly SyntheticDevice[];
}

/** One line the trace must show, as the fields compared: the decision and the facts that say why. */
export interface ExpectedLine {
  readonly msg_id: string;
  readonly device_id: string;
  readonly stage: string;
  readonly outcome: string;
  readonly reason: string;
  readonly vendor: string;
  readonly merge: string;
  /**
   * Exactly the facts the line must carry: each key with this value, or one of the values of a
   * list (`''` in a list: the key may be absent); no other key.
   */
  readonly facts: Readonly<Record<string, string | readonly string[]>>;
}

export interface UserExpectation {
  /** Lines every run must show. */
  readonly always: readonly ExpectedLine[];
  /**
   * A burst's lines: `merged` while its window stays open (the rule), `apart` when processing
   * stalled longer than the window and each message was pushed on its own. Never a mix.
   */
  readonly burst?: { readonly merged: readonly ExpectedLine[]; readonly apart: readonly ExpectedLine[] };
  /** Messages persisted for the user. */
  readonly messages: readonly string[];
  /** `device|vendor` of every token the trace must show invalidated. */
  readonly invalidated: readonly string[];
}

export interface HistoryScenario {
  readonly users: readonly HistoryUser[];
  readonly setup: {
    tokens: Array<{ key: string; value: unknown }>;
    settings: Array<{ key: string; value: unknown }>;
    presence: Array<{ key: string; value: unknown }>;
  };
  readonly timeline: readonly TimedRecord[];
  readonly deadTokens: ReadonlyArray<{ vendor: Vendor; token: string }>;
  readonly expected: ReadonlyMap<string, UserExpectation>;
}

const maker = (name: string) => MAKERS.find((m) => m.manufacturer === name)!;
/** Makers of plain offline devices: never Xiaomi (its quota is 0 in this run). */
const PLAIN_MAKERS = ['apple', 'huawei', 'oppo', 'vivo', 'samsung'];
const localHhmm = (at: number, zone: string) =>
  new Intl.DateTimeFormat('en-GB', { timeZone: zone, hour: '2-digit', minute: '2-digit', hourCycle: 'h23' }).format(at);
const minuteOf = (hhmm: string) => Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3));
const hhmm = (minute: number) => `${String(Math.floor(minute / 60)).padStart(2, '0')}:${String(minute % 60).padStart(2, '0')}`;

export interface HistoryOptions {
  readonly users: number;
  readonly uidPrefix: string;
  readonly appId: string;
  /** When the setup happens (CONNECTs of online devices are at this instant). */
  readonly setupAt: number;
  /** When the first message may be sent. */
  readonly startMs: number;
  readonly durationMs: number;
  readonly tokenFor: (vendor: Vendor, seed: string) => string;
}

export function buildHistories(o: HistoryOptions): HistoryScenario {
  const users: HistoryUser[] = [];
  const deadTokens: Array<{ vendor: Vendor; token: string }> = [];
  for (let i = 0; i < o.users; i++) {
    const uid = `${o.uidPrefix}${i}`;
    const history = HISTORIES[i % HISTORIES.length]!;
    const makers =
      history === 'dead-token'
        ? ['huawei']
        : history === 'quota'
          ? ['xiaomi']
          : history === 'two-devices'
            ? ['apple', 'samsung']
            : [PLAIN_MAKERS[i % PLAIN_MAKERS.length]!];
    const devices = makers.map((name, d): SyntheticDevice => {
      const m = maker(name);
      const deviceId = `${uid}-d${d}`;
      return {
        uid,
        deviceId,
        platform: m.platform,
        manufacturer: m.manufacturer,
        tokens: m.vendors.map((vendor) => ({ vendor, token: o.tokenFor(vendor, `${deviceId}-${vendor}`) })),
      };
    });
    if (history === 'dead-token') deadTokens.push(devices[0]!.tokens[0]!);
    users.push({ uid, history, privateMode: history === 'offline' && i % 32 === 0, devices });
  }

  const tokyoNow = minuteOf(localHhmm(o.setupAt, QUIET_ZONE));
  const quiet = { start_minute: (tokyoNow + 1440 - 60) % 1440, end_minute: (tokyoNow + 120) % 1440 };
  const setup: HistoryScenario['setup'] = { tokens: [], settings: [], presence: [] };
  for (const u of users) {
    for (const d of u.devices) for (const t of d.tokens) setup.tokens.push(clientTokenReport(d, t, o.appId, o.setupAt));
    const presence = (kind: 'CONNECT' | 'DISCONNECT', at: number) =>
      setup.presence.push({ key: u.uid, value: { uid: u.uid, device_id: u.devices[0]!.deviceId, kind, conv_id: null, seq: null, at } });
    if (u.history === 'online' || u.history === 'two-devices') presence('CONNECT', o.setupAt);
    if (u.history === 'two-devices') presence('DISCONNECT', o.setupAt + 1);
    setup.settings.push({
      key: u.uid,
      value: {
        uid: u.uid,
        time_zone: u.history === 'dnd' ? QUIET_ZONE : 'UTC',
        quiet_hours: u.history === 'dnd' ? quiet : null,
        muted_conversations: u.history === 'mute' ? [`c-${u.uid}-0`, `c-${u.uid}-1`] : [],
        private_mode: u.privateMode,
        updated_at: o.setupAt,
      },
    });
  }

  const timeline: TimedRecord[] = [];
  const expected = new Map<string, UserExpectation>();
  // Pseudo-random but reproducible spread; the last 30 % of the duration stays free for the windows to close.
  const at = (i: number, k: number) => o.startMs + Math.floor((((i * 7919 + k * 104729) % 1000) / 1000) * o.durationMs * 0.7);
  users.forEach((u, i) => {
    const always: ExpectedLine[] = [];
    const messages: string[] = [];
    let burst: UserExpectation['burst'];
    const persist = (conv: string, seq: number, t: number, mention: MessagePersisted['mention'] = 'NONE'): string => {
      const value: MessagePersisted = {
        msg_id: `m-${conv}-${seq}`,
        conv_id: conv,
        conv_type: 'SINGLE',
        seq,
        sender_uid: `s-${u.uid}`,
        uid: u.uid,
        unread_cnt: seq,
        title: `From s-${u.uid}`,
        summary: `summary ${conv} #${seq}`,
        sensitive: false,
        mention,
        persisted_at: t,
        app_id: o.appId,
      };
      timeline.push({ topic: 'persisted', at: t, key: u.uid, value });
      messages.push(value.msg_id);
      return value.msg_id;
    };
    const line = (
      msg: string,
      device: string,
      stage: string,
      outcome: string,
      reason: string,
      vendor: string,
      facts: ExpectedLine['facts'] = {},
      merge = '',
    ): ExpectedLine => ({
      msg_id: msg,
      device_id: device,
      stage,
      outcome,
      reason,
      vendor,
      merge,
      facts,
    });
    /** The push of one message to one device as the fan-out reports it, with the policy's why. */
    const pushed = (msg: string, d: SyntheticDevice, merge = '', extra: Record<string, string> = {}): ExpectedLine[] => {
      const first = d.tokens[0]!.vendor;
      const why = d.tokens.length === 1 ? 'only' : 'maker';
      const base = { on: 'OFFLINE', ...(u.privateMode ? { private: '1' } : {}), ...extra };
      if (u.history === 'dead-token')
        return [
          line(msg, d.deviceId, 'fan-out', 'dead_token', 'dead_token', first, { ...base, ch: first, why }),
          line(msg, d.deviceId, 'fan-out', 'accepted', '', d.tokens[1]!.vendor, { ...base, ch: first, why }, merge),
        ];
      if (u.history === 'quota') return [line(msg, d.deviceId, 'fan-out', 'accepted', '', 'fcm', { ...base, ch: 'fcm', why: 'quota', skip: first }, merge)];
      return [line(msg, d.deviceId, 'fan-out', 'accepted', '', first, { ...base, ch: first, why }, merge)];
    };
    const d0 = u.devices[0]!;
    switch (u.history) {
      case 'online':
        for (let k = 0; k < 2; k++) {
          const t = at(i, k);
          const msg = persist(`c-${u.uid}-${k}`, 1, t);
          timeline.push({
            topic: 'presence',
            at: t + 100,
            key: u.uid,
            value: { uid: u.uid, device_id: d0.deviceId, kind: 'ACK', conv_id: `c-${u.uid}-${k}`, seq: 1, at: t + 100 },
          });
          // The ACK 100 ms after the message; `before` if the stage read the ACK first (both are what happened).
          always.push(
            line(msg, d0.deviceId, 'online-filter', 'suppressed', 'online_ack', '', {
              hb: String(t - o.setupAt),
              ack: ['100', 'before'],
              hold: [String(HOLD_WINDOW_MS), ''],
            }),
          );
        }
        break;
      case 'dnd':
        for (let k = 0; k < 2; k++) {
          const t = at(i, k);
          const msg = persist(`c-${u.uid}-${k}`, 1, t);
          const local = [localHhmm(t, QUIET_ZONE), localHhmm(t + 60_000, QUIET_ZONE)];
          always.push(
            line(msg, d0.deviceId, 'policy', 'suppressed', 'dnd', '', { tz: QUIET_ZONE, qh: `${hhmm(quiet.start_minute)}-${hhmm(quiet.end_minute)}`, local }),
          );
        }
        break;
      case 'mute': {
        const silent = persist(`c-${u.uid}-0`, 1, at(i, 0));
        always.push(line(silent, d0.deviceId, 'policy', 'suppressed', 'mute', ''));
        const mentioned = persist(`c-${u.uid}-1`, 1, at(i, 1), 'DIRECT');
        always.push(...pushed(mentioned, d0, '', { over: 'mute', mention: 'DIRECT' }));
        break;
      }
      case 'burst': {
        always.push(...pushed(persist(`c-${u.uid}-0`, 1, at(i, 0)), d0));
        const t = at(i, 1);
        const conv = `b-${u.uid}`;
        const [a, b, c] = [persist(conv, 1, t), persist(conv, 2, t + 200), persist(conv, 3, t + 400)];
        burst = {
          merged: [
            ...pushed(a, d0, 'leading'),
            line(b, d0.deviceId, 'merge', 'merged', 'merged', '', { by: '3', win: String(MERGE_WINDOW_MS) }),
            ...pushed(c, d0, 'trailing'),
          ],
          apart: [...pushed(a, d0), ...pushed(b, d0), ...pushed(c, d0)],
        };
        break;
      }
      case 'dead-token':
        // One message: a second one could rightly go straight to FCM once the invalidation reached the policy.
        always.push(...pushed(persist(`c-${u.uid}-0`, 1, at(i, 0)), d0));
        break;
      default:
        for (let k = 0; k < 2; k++) {
          const t = at(i, k);
          const msg = persist(`c-${u.uid}-${k}`, 1, t);
          // The first device of two connected at the setup and disconnected: its heartbeat age goes with the push.
          for (const d of u.devices) always.push(...pushed(msg, d, '', u.history === 'two-devices' && d === d0 ? { hb: String(t - o.setupAt) } : {}));
        }
    }
    const invalidated = u.history === 'dead-token' ? [`${d0.deviceId}|${d0.tokens[0]!.vendor}`] : [];
    expected.set(u.uid, { always, messages, invalidated, ...(burst ? { burst } : {}) });
  });
  timeline.sort((a, b) => a.at - b.at);
  return { users, setup, timeline, deadTokens, expected };
}

/** The fields of a trace line that are compared with an expected line (facts apart). */
export const decisionKey = (l: Omit<ExpectedLine, 'facts'>): string => [l.msg_id, l.device_id, l.stage, l.outcome, l.reason, l.vendor, l.merge].join('|');

/** What differs between the facts a trace line shows and those expected; empty when they agree. */
export function factProblems(got: Readonly<Record<string, string>>, want: ExpectedLine['facts']): string[] {
  const problems: string[] = [];
  for (const [key, value] of Object.entries(want)) {
    const have = got[key] ?? '';
    if (typeof value === 'string' ? have !== value : !value.includes(have))
      problems.push(`${key}: got ${JSON.stringify(got[key])}, want ${JSON.stringify(value)}`);
  }
  for (const key of Object.keys(got)) if (!(key in want)) problems.push(`${key}=${got[key]} not expected`);
  return problems;
}
