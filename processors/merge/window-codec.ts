/**
 * How the merge windows of one (uid, conv_id) are kept in the windows store and its changelog: one
 * short string, because a busy worker holds a million of them. The stored string is also the
 * changelog value, so restoring a window costs a UTF-8 decode and nothing else, and the timer of
 * the (uid, conv_id) is read from its first digits without parsing the rest.
 *
 * Format: `<due><json>`, where `due` is the earliest `until` of the windows (decimal epoch ms) and
 * `json` an array with one tuple per device,
 * `[device_id, open (1|0), until - due, pushed_seq, count, mention, read_seq, carried]`, `carried`
 * being null or `[seq, msg_id, conv_type, sender_uid, unread_cnt, title, summary, sensitive (1|0),
 * mention, persisted_at - due, app_id, presence]`. Enum values are stored as their index in the
 * lists below (a value not in a list, from a newer schema, is stored as its string). A leading-mode
 * window is ~50 characters.
 */
import type { StoreSerde } from '../../topology/stores.ts';
import type { ConvType, Mention, PresenceDecision } from '../shared/records.ts';
import { earliestUntil, type CarriedTrigger, type ConvWindows, type DeviceWindow } from './window.ts';

/** A (uid, conv_id)'s windows as stored (see the file comment). */
export type EncodedConvWindows = string;

type Code = number | string;
type CarriedTuple = [number, string, Code, string, number, string, string, 0 | 1, Code, number, string, Code];
type WindowTuple = [string, 0 | 1, number, number, number, Code, number, CarriedTuple | null];

const CONV_TYPES: readonly ConvType[] = ['SINGLE', 'GROUP', 'CHANNEL', 'SYSTEM'];
const MENTIONS: readonly Mention[] = ['NONE', 'DIRECT', 'ALL'];
const PRESENCE: readonly PresenceDecision[] = ['OFFLINE', 'HALF_OPEN', 'SUSPECT', 'BACKGROUND', 'READ'];

function code<T extends string>(list: readonly T[], value: T): Code {
  const i = list.indexOf(value);
  return i >= 0 ? i : value;
}

function uncode<T extends string>(list: readonly T[], c: Code): T {
  return typeof c === 'number' ? list[c]! : (c as T);
}

/** Encodes non-empty windows (the caller deletes the key of a (uid, conv_id) without any). */
export function encodeConvWindows(conv: ConvWindows): EncodedConvWindows {
  const due = earliestUntil(conv);
  if (!Number.isSafeInteger(due)) throw new RangeError(`merge windows: due time ${due} is not an integer epoch ms`);
  const tuples: WindowTuple[] = [];
  for (const [deviceId, w] of conv) {
    const t = w.carried;
    const carried: CarriedTuple | null = t && [
      t.seq, t.msg_id, code(CONV_TYPES, t.conv_type), t.sender_uid, t.unread_cnt, t.title, t.summary, t.sensitive ? 1 : 0, code(MENTIONS, t.mention), t.persisted_at - due, t.app_id, code(PRESENCE, t.presence),
    ];
    tuples.push([deviceId, w.open ? 1 : 0, w.until - due, w.pushed_seq, w.count, code(MENTIONS, w.mention), w.read_seq, carried]);
  }
  return `${due}${JSON.stringify(tuples)}`;
}

/** When the earliest window of an encoded (uid, conv_id) is due: its leading digits. */
export function dueOfEncoded(encoded: EncodedConvWindows): number {
  return isLegacy(encoded) ? earliestUntil(decodeConvWindows(encoded)) : Number.parseInt(encoded, 10);
}

/**
 * Changelogs written before this format hold the windows as a JSON object (deviceId → window);
 * they are still read, so a worker upgraded over existing state restores it.
 */
const isLegacy = (encoded: string) => encoded.startsWith('{');

export function decodeConvWindows(encoded: EncodedConvWindows): ConvWindows {
  if (isLegacy(encoded)) return new Map(Object.entries(JSON.parse(encoded) as Record<string, DeviceWindow>));
  const start = encoded.indexOf('[');
  const due = Number(encoded.slice(0, start));
  const conv: ConvWindows = new Map();
  for (const [deviceId, open, untilOffset, pushedSeq, count, mention, readSeq, c] of JSON.parse(encoded.slice(start)) as WindowTuple[]) {
    const carried: CarriedTrigger | null = c && {
      seq: c[0], msg_id: c[1], conv_type: uncode(CONV_TYPES, c[2]), sender_uid: c[3], unread_cnt: c[4], title: c[5], summary: c[6], sensitive: c[7] === 1,
      mention: uncode(MENTIONS, c[8]), persisted_at: due + c[9], app_id: c[10], presence: uncode(PRESENCE, c[11]),
    };
    conv.set(deviceId, { open: open === 1, until: due + untilOffset, pushed_seq: pushedSeq, count, mention: uncode(MENTIONS, mention), read_seq: readSeq, carried });
  }
  return conv;
}

/** The windows store keeps the encoded string; the changelog carries its UTF-8 bytes. */
export const convWindowsStoreSerde: StoreSerde<EncodedConvWindows> = {
  serialize: (value) => Buffer.from(value, 'utf8'),
  deserialize: (data) => data.toString('utf8'),
};
