/**
 * How the merge windows of one (uid, conv_id) are kept in the windows store and its changelog: one
 * short string, because a busy worker holds a million of them. The stored string is also the
 * changelog value, so restoring a window costs a UTF-8 decode and nothing else, and the due time of
 * the (uid, conv_id) is read from its first digits without parsing the rest.
 *
 * Format: `<due>` then, for each device, `US` and its fields separated by `US`, the devices
 * separated by `RS` (US = \u001f, RS = \u001e); `due` is the earliest `until` of the windows
 * (decimal epoch ms). The fields are `device_id, open (1|0), until - due, pushed_seq, count,
 * mention, read_seq`, followed, when a trigger is carried, by `seq, msg_id, conv_type, sender_uid,
 * unread_cnt, title, summary, sensitive (1|0), mention, persisted_at - due, app_id, presence` and,
 * when the trigger has one, its heartbeat age `hb` (windows stored before it have 12 carried fields).
 * Enum values are stored as their index in the lists below (a value not in a list, from a newer
 * schema, as a JSON string). A text field is stored as it is unless it holds US or RS or starts
 * with `"`: then as a JSON string, which escapes every control character, so US and RS only ever
 * separate. Separators instead of JSON save the brackets and quotes: a leading-mode window is ~45
 * characters, a carried trigger ~30 characters above its texts.
 *
 * Older forms are still read, so a worker upgraded over existing state restores it: `<due><json>`
 * (an array of per-device tuples in the order above, the carried trigger a nested array) and a
 * JSON object (deviceId → window).
 */
import type { StoreSerde } from '../../topology/stores.ts';
import type { ConvType, Mention, PresenceDecision } from '../model/records.ts';
import { earliestUntil, type CarriedTrigger, type ConvWindows, type DeviceWindow } from './window.ts';

/** A (uid, conv_id)'s windows as stored (see the file comment). */
export type EncodedConvWindows = string;

/** The leading due time of the current and the `<due><json>` forms. */
const DUE = /^-?\d*/;
const US = '\u001f';
const RS = '\u001e';
const WINDOW_FIELDS = 7;
const CARRIED_FIELDS = 12;

const CONV_TYPES: readonly ConvType[] = ['SINGLE', 'GROUP', 'CHANNEL', 'SYSTEM'];
const MENTIONS: readonly Mention[] = ['NONE', 'DIRECT', 'ALL'];
const PRESENCE: readonly PresenceDecision[] = ['OFFLINE', 'HALF_OPEN', 'SUSPECT', 'BACKGROUND', 'READ'];

/** Encodes non-empty windows (the caller deletes the key of a (uid, conv_id) without any). */
export function encodeConvWindows(conv: ConvWindows): EncodedConvWindows {
  const due = earliestUntil(conv);
  if (!Number.isSafeInteger(due)) throw new RangeError(`merge windows: due time ${due} is not an integer epoch ms`);
  const devices: string[] = [];
  for (const [deviceId, w] of conv) devices.push(encodeWindow(deviceId, w, due));
  // join, not concatenation: the stored value is one flat string, not a rope of its parts.
  return [due, devices.join(RS)].join(US);
}

function encodeWindow(deviceId: string, w: DeviceWindow, due: number): string {
  const fields: Array<string | number> = [text(deviceId), w.open ? 1 : 0, w.until - due, w.pushed_seq, w.count, code(MENTIONS, w.mention), w.read_seq];
  const t = w.carried;
  if (t) {
    fields.push(
      t.seq,
      text(t.msg_id),
      code(CONV_TYPES, t.conv_type),
      text(t.sender_uid),
      t.unread_cnt,
      text(t.title),
      text(t.summary),
      t.sensitive ? 1 : 0,
      code(MENTIONS, t.mention),
      t.persisted_at - due,
      text(t.app_id),
      code(PRESENCE, t.presence),
    );
    if (t.hb !== null && t.hb !== undefined) fields.push(t.hb);
  }
  return fields.join(US);
}

/** When the earliest window of an encoded (uid, conv_id) is due: its leading digits. */
export function dueOfEncoded(encoded: EncodedConvWindows): number {
  return isLegacy(encoded) ? earliestUntil(decodeConvWindows(encoded)) : Number.parseInt(encoded, 10);
}

export function decodeConvWindows(encoded: EncodedConvWindows): ConvWindows {
  if (isLegacy(encoded)) return new Map(Object.entries(JSON.parse(encoded) as Record<string, DeviceWindow>));
  const start = DUE.exec(encoded)![0].length;
  const due = Number(encoded.slice(0, start));
  if (encoded[start] === '[') return decodeTuples(encoded.slice(start), due);
  const conv: ConvWindows = new Map();
  for (const device of encoded.slice(start + 1).split(RS)) {
    const f = device.split(US);
    if (f.length !== WINDOW_FIELDS && f.length !== WINDOW_FIELDS + CARRIED_FIELDS && f.length !== WINDOW_FIELDS + CARRIED_FIELDS + 1)
      throw new RangeError(`merge windows: a device has ${f.length} fields`);
    conv.set(untext(f[0]!), {
      open: f[1] === '1',
      until: due + Number(f[2]),
      pushed_seq: Number(f[3]),
      count: Number(f[4]),
      mention: uncode(MENTIONS, f[5]!),
      read_seq: Number(f[6]),
      carried: f.length === WINDOW_FIELDS ? null : decodeCarried(f, WINDOW_FIELDS, due),
    });
  }
  return conv;
}

function decodeCarried(f: string[], i: number, due: number): CarriedTrigger {
  return {
    seq: Number(f[i]),
    msg_id: untext(f[i + 1]!),
    conv_type: uncode(CONV_TYPES, f[i + 2]!),
    sender_uid: untext(f[i + 3]!),
    unread_cnt: Number(f[i + 4]),
    title: untext(f[i + 5]!),
    summary: untext(f[i + 6]!),
    sensitive: f[i + 7] === '1',
    mention: uncode(MENTIONS, f[i + 8]!),
    persisted_at: due + Number(f[i + 9]),
    app_id: untext(f[i + 10]!),
    presence: uncode(PRESENCE, f[i + 11]!),
    ...(f.length > i + CARRIED_FIELDS ? { hb: Number(f[i + CARRIED_FIELDS]) } : {}),
  };
}

/** A text field: as it is, or as a JSON string when it could be taken for a separator or a quoted field. */
function text(value: string): string {
  return value.includes(US) || value.includes(RS) || value.startsWith('"') ? JSON.stringify(value) : value;
}

function untext(field: string): string {
  return field.startsWith('"') ? (JSON.parse(field) as string) : field;
}

function code<T extends string>(list: readonly T[], value: T): string | number {
  const i = list.indexOf(value);
  return i >= 0 ? i : JSON.stringify(value);
}

function uncode<T extends string>(list: readonly T[], field: string): T {
  return field.startsWith('"') ? (JSON.parse(field) as T) : list[Number(field)]!;
}

/**
 * Changelogs written before `<due><json>` hold the windows as a JSON object (deviceId → window).
 */
const isLegacy = (encoded: string) => encoded.startsWith('{');

type Code = number | string;
type CarriedTuple = [number, string, Code, string, number, string, string, 0 | 1, Code, number, string, Code];
type WindowTuple = [string, 0 | 1, number, number, number, Code, number, CarriedTuple | null];

/** The `<due><json>` form (see the file comment): enum codes are indexes, or the value itself. */
function decodeTuples(json: string, due: number): ConvWindows {
  const un = <T extends string>(list: readonly T[], c: Code): T => (typeof c === 'number' ? list[c]! : (c as T));
  const conv: ConvWindows = new Map();
  for (const [deviceId, open, untilOffset, pushedSeq, count, mention, readSeq, c] of JSON.parse(json) as WindowTuple[]) {
    const carried: CarriedTrigger | null = c && {
      seq: c[0],
      msg_id: c[1],
      conv_type: un(CONV_TYPES, c[2]),
      sender_uid: c[3],
      unread_cnt: c[4],
      title: c[5],
      summary: c[6],
      sensitive: c[7] === 1,
      mention: un(MENTIONS, c[8]),
      persisted_at: due + c[9],
      app_id: c[10],
      presence: un(PRESENCE, c[11]),
    };
    conv.set(deviceId, {
      open: open === 1,
      until: due + untilOffset,
      pushed_seq: pushedSeq,
      count,
      mention: un(MENTIONS, mention),
      read_seq: readSeq,
      carried,
    });
  }
  return conv;
}

/** The windows store keeps the encoded string; the changelog carries its UTF-8 bytes. */
export const convWindowsStoreSerde: StoreSerde<EncodedConvWindows> = {
  serialize: (value) => Buffer.from(value, 'utf8'),
  deserialize: (data) => data.toString('utf8'),
};
