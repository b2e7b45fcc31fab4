/**
 * The state of the merge windows of one (uid, conv_id): one entry per device (docs/design.md,
 * "Per device, not per uid"). Kept small, because a busy worker holds a million of them: no copies
 * of the key's ids, one time field; in the store it is one short string per (uid, conv_id)
 * (window-codec.ts).
 */
import type { Mention, PushCandidate } from '../model/records.ts';

/** What a trailing update needs of the newest pending trigger (the ids are in the store key). */
export type CarriedTrigger = Omit<PushCandidate, 'kind' | 'uid' | 'device_id' | 'conv_id' | 'decided_at'>;

export interface DeviceWindow {
  /** True while the window is open; a closed window is kept a while to remember `pushed_seq`. */
  open: boolean;
  /** Open: when the window closes (its start is `until - windowMs`). Closed: when its memory may go. */
  until: number;
  /** Highest seq already carried by a push to this device; -1 when none. */
  pushed_seq: number;
  /** The newest trigger not yet pushed: what a trailing update will carry. */
  carried: CarriedTrigger | null;
  /** Triggers the pending trailing notification stands for. */
  count: number;
  /** Strongest mention among those triggers. */
  mention: Mention;
  /** Highest seq the user has read in this conversation; -1 when none. */
  read_seq: number;
}

/** deviceId → its window, for one (uid, conv_id) (the store key). */
export type ConvWindows = Map<string, DeviceWindow>;

/** The earliest `until` of a (uid, conv_id)'s windows: when its timer is due; Infinity when none. */
export function earliestUntil(conv: ConvWindows): number {
  let due = Infinity;
  for (const w of conv.values()) due = Math.min(due, w.until);
  return due;
}

const MENTION_RANK: Record<Mention, number> = { NONE: 0, ALL: 1, DIRECT: 2 };

export function strongerMention(a: Mention, b: Mention): Mention {
  return MENTION_RANK[b] > MENTION_RANK[a] ? b : a;
}

/** The highest seq this device has been (or is about to be) notified about. */
/** The window's device was already pushed, or is carrying, exactly this message. */
export function isRepeat(w: DeviceWindow, c: PushCandidate): boolean {
  return c.seq === w.pushed_seq || c.seq === w.carried?.seq;
}

export function coveredSeq(w: DeviceWindow): number {
  return Math.max(w.pushed_seq, w.carried?.seq ?? -1);
}

/** What a window carries of a trigger. Literals field by field, here and below (common/objects.ts says why). */
export function carry(c: PushCandidate): CarriedTrigger {
  const t: CarriedTrigger = {
    seq: c.seq,
    msg_id: c.msg_id,
    conv_type: c.conv_type,
    sender_uid: c.sender_uid,
    unread_cnt: c.unread_cnt,
    title: c.title,
    summary: c.summary,
    sensitive: c.sensitive,
    mention: c.mention,
    persisted_at: c.persisted_at,
    app_id: c.app_id,
    presence: c.presence,
  };
  if (c.hb !== null && c.hb !== undefined) t.hb = c.hb;
  return t;
}

/** The candidate again, from what was carried and the key's ids. */
export function uncarry(t: CarriedTrigger, uid: string, deviceId: string, convId: string, at: number): PushCandidate {
  const c: PushCandidate = {
    kind: 'TRIGGER',
    uid,
    device_id: deviceId,
    conv_id: convId,
    seq: t.seq,
    msg_id: t.msg_id,
    conv_type: t.conv_type,
    sender_uid: t.sender_uid,
    unread_cnt: t.unread_cnt,
    title: t.title,
    summary: t.summary,
    sensitive: t.sensitive,
    mention: t.mention,
    persisted_at: t.persisted_at,
    app_id: t.app_id,
    presence: t.presence,
    decided_at: at,
  };
  if (t.hb !== null && t.hb !== undefined) c.hb = t.hb;
  return c;
}
