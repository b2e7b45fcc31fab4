/**
 * A scripted workload for the decision stages on the real stack, and an independent ground-truth
 * model of what it must dispatch. The model restates docs/design.md, "online-filter", "merge" and
 * "policy", for this script only (it shares no code with processors/): every device kind and
 * setting below has its expected pushes spelled out here.
 */
import type { MessagePersisted, PresenceEvent, PushDispatch, TokenReport, UserSettings } from '../../../processors/model/records.ts';

export const APP = 'im.integration';

/** How a device behaves in the script. */
export type DeviceKind = 'offline' | 'background' | 'acking' | 'half-open' | 'stale-heartbeat' | 'disconnected';
const KINDS: DeviceKind[] = ['offline', 'background', 'acking', 'half-open', 'stale-heartbeat', 'disconnected'];

/** Device models: platform, maker and the vendors it holds tokens for; the first is its preferred channel. */
const MODELS = [
  { platform: 'ios', manufacturer: 'apple', vendors: ['apns'] },
  { platform: 'android', manufacturer: 'huawei', vendors: ['hms', 'fcm'] },
  { platform: 'android', manufacturer: 'xiaomi', vendors: ['xiaomi'] },
  { platform: 'android', manufacturer: 'oppo', vendors: ['oppo', 'fcm'] },
  { platform: 'android', manufacturer: 'vivo', vendors: ['vivo'] },
  { platform: 'android', manufacturer: 'samsung', vendors: ['fcm'] },
];

export interface ScriptDevice {
  id: string;
  kind: DeviceKind;
  model: (typeof MODELS)[number];
}

export interface ScriptUser {
  uid: string;
  devices: ScriptDevice[];
  /** Messages in c1 (a burst 150 ms apart), then one in c2. */
  burst: number;
  mutedC2: boolean;
  privateMode: boolean;
  quiet: boolean;
}

/** A small deterministic generator (LCG), so a failing run can be replayed. */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => (s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32;
}

export function makeUsers(count: number, seed: number, uidPrefix: string): ScriptUser[] {
  const r = rng(seed);
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(r() * xs.length)]!;
  return Array.from({ length: count }, (_, i) => {
    const n = 1 + Math.floor(r() * 3);
    return {
      uid: `${uidPrefix}${i}`,
      devices: Array.from({ length: n }, (_, d) => ({ id: `dev${d}`, kind: pick(KINDS), model: pick(MODELS) })),
      burst: 1 + Math.floor(r() * 4),
      mutedC2: r() < 0.1,
      privateMode: r() < 0.1,
      quiet: r() < 0.05,
    };
  });
}

const ZONE = 'Asia/Shanghai';

function localMinute(at: number): number {
  const parts = new Intl.DateTimeFormat('en-US', { timeZone: ZONE, hourCycle: 'h23', hour: '2-digit', minute: '2-digit' }).formatToParts(new Date(at));
  return Number(parts.find((p) => p.type === 'hour')!.value) * 60 + Number(parts.find((p) => p.type === 'minute')!.value);
}

/** Tokens, settings and presence, stamped `now` (stale heartbeats 200 s earlier). */
export function setupRecords(users: ScriptUser[], now: number): { tokens: TokenReport[]; settings: UserSettings[]; presence: PresenceEvent[] } {
  const tokens: TokenReport[] = [];
  const settings: UserSettings[] = [];
  const presence: PresenceEvent[] = [];
  const m = localMinute(now);
  for (const u of users) {
    for (const d of u.devices) {
      for (const vendor of d.model.vendors) {
        tokens.push({
          uid: u.uid,
          device_id: d.id,
          platform: d.model.platform,
          vendor,
          app_id: APP,
          token: `${vendor}:${u.uid}:${d.id}`,
          reported_at: now,
          state: 'VALID',
          source: 'CLIENT',
          reason: null,
          manufacturer: d.model.manufacturer,
        });
      }
      const ev = (kind: PresenceEvent['kind'], at = now): PresenceEvent => ({ uid: u.uid, device_id: d.id, kind, conv_id: null, seq: null, at });
      if (d.kind === 'background') presence.push(ev('CONNECT'), ev('HEARTBEAT'), ev('BACKGROUND'));
      if (d.kind === 'acking' || d.kind === 'half-open') presence.push(ev('CONNECT'), ev('HEARTBEAT'));
      if (d.kind === 'stale-heartbeat') presence.push(ev('CONNECT', now - 200_000), ev('HEARTBEAT', now - 200_000));
      if (d.kind === 'disconnected') presence.push(ev('CONNECT'), ev('HEARTBEAT'), ev('DISCONNECT'));
    }
    // Quiet users: a range around the current local time (±2 h); others get a range far from it.
    const around = { start_minute: (m + 1440 - 120) % 1440, end_minute: (m + 120) % 1440 };
    const away = { start_minute: (m + 360) % 1440, end_minute: (m + 480) % 1440 };
    settings.push({
      uid: u.uid,
      time_zone: ZONE,
      quiet_hours: u.quiet ? around : away,
      muted_conversations: u.mutedC2 ? ['c2'] : [],
      private_mode: u.privateMode,
      updated_at: now,
    });
  }
  return { tokens, settings, presence };
}

/** The messages, persisted from `now` on (c1 burst 150 ms apart, then c2), and the ACKs acking devices send. */
export function messageRecords(users: ScriptUser[], now: number): { messages: MessagePersisted[]; acks: PresenceEvent[] } {
  const messages: MessagePersisted[] = [];
  const acks: PresenceEvent[] = [];
  for (const u of users) {
    const msg = (conv: string, seq: number, at: number): MessagePersisted => ({
      msg_id: `${u.uid}-${conv}-${seq}`,
      conv_id: conv,
      conv_type: 'GROUP',
      seq,
      sender_uid: 'bot',
      uid: u.uid,
      unread_cnt: seq,
      title: `Title ${conv}`,
      summary: `summary ${u.uid} ${conv} ${seq}`,
      sensitive: false,
      mention: 'NONE',
      persisted_at: at,
      app_id: APP,
    });
    for (let s = 1; s <= u.burst; s++) messages.push(msg('c1', s, now + (s - 1) * 150));
    messages.push(msg('c2', 1, now + u.burst * 150));
    for (const d of u.devices.filter((x) => x.kind === 'acking')) {
      acks.push({ uid: u.uid, device_id: d.id, kind: 'ACK', conv_id: 'c1', seq: u.burst, at: now + u.burst * 150 });
      acks.push({ uid: u.uid, device_id: d.id, kind: 'ACK', conv_id: 'c2', seq: 1, at: now + u.burst * 150 });
    }
  }
  return { messages, acks };
}

/** One dispatch as the comparison sees it. */
export function dispatchKey(
  d: Pick<PushDispatch, 'uid' | 'device_id' | 'conv_id' | 'seq' | 'kind' | 'silent' | 'badge' | 'body' | 'merged_count'> & { vendors: string[] },
): string {
  return `${d.uid}/${d.device_id}/${d.conv_id}#${d.seq} ${d.kind}${d.silent ? ' silent' : ''} badge=${d.badge} n=${d.merged_count} via ${d.vendors.join(',')} "${d.body}"`;
}

/**
 * The ground truth (merge mode leading, window longer than the burst, hold window longer than the
 * ACK delay, background cooldown 10 s > the script):
 * - acking devices: every message is ACKed → no push.
 * - background devices: the first message (c1#1) is pushed; nothing else within 10 s.
 * - every other kind (offline, stale heartbeat, disconnected, half-open after its hold): c1 → a
 *   leading push of #1 and, for a burst of n > 1, one silent trailing update with #n and badge n;
 *   c2 → a leading push of #1.
 * - policy: quiet users get nothing; muted c2 gets nothing; private mode → generic text.
 * - channels: the model's vendors in order (preferred first).
 */
export function expectedDispatches(users: ScriptUser[]): string[] {
  const out: string[] = [];
  for (const u of users) {
    if (u.quiet) continue;
    for (const d of u.devices) {
      const push = (conv: string, seq: number, kind: 'LEADING' | 'TRAILING', n: number) => {
        if (conv === 'c2' && u.mutedC2) return;
        out.push(
          dispatchKey({
            uid: u.uid,
            device_id: d.id,
            conv_id: conv,
            seq,
            kind,
            silent: kind === 'TRAILING',
            badge: seq,
            merged_count: n,
            vendors: d.model.vendors,
            body: u.privateMode ? 'You have a new message' : `summary ${u.uid} ${conv} ${seq}`,
          }),
        );
      };
      if (d.kind === 'acking') continue;
      if (d.kind === 'background') {
        push('c1', 1, 'LEADING', 1);
        continue;
      }
      push('c1', 1, 'LEADING', 1);
      if (u.burst > 1) push('c1', u.burst, 'TRAILING', u.burst - 1);
      push('c2', 1, 'LEADING', 1);
    }
  }
  return out.sort();
}
