/**
 * Deterministic identifiers of the push domain. Each is a pure function of its inputs, so a replay
 * or a restarted task derives the same ids: the fan-out's idempotency (docs/design.md,
 * "At most one visible notification"), the device's collapse (replace, not stack) and ClickHouse's
 * dedupe all rest on that.
 */
import { hash } from 'node:crypto';

const SEP = '\u001f'; // unit separator: cannot occur in ids, so ('a|b','c') and ('a','b|c') differ

function digest(parts: readonly (string | number)[]): Buffer {
  return hash('sha256', parts.join(SEP), 'buffer');
}

/** Formats the first 16 bytes of a fresh digest as a name-based (version 5 layout) UUID, setting its version and variant bits in place. */
function uuidFrom(b: Buffer): string {
  b[6] = (b[6]! & 0x0f) | 0x50;
  b[8] = (b[8]! & 0x3f) | 0x80;
  const h = b.toString('hex', 0, 16);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/**
 * The task id of (uid, conv_id, seq, device_id): the idempotency key of one push to one device.
 * UUID-shaped, so it can serve as APNs `apns-id` and as vendor request ids (≤ 64 characters).
 */
export function taskId(uid: string, convId: string, seq: number, deviceId: string): string {
  return uuidFrom(digest(['task', uid, convId, seq, deviceId]));
}

/**
 * The collapse id of a (uid, conv_id): every push about the conversation carries it, so the device
 * replaces the earlier notification. 32 hex characters (APNs allows 64 bytes).
 */
export function collapseId(uid: string, convId: string): string {
  return digest(['collapse', uid, convId]).toString('hex', 0, 16);
}

/**
 * The collapse id of a sender's pushes under one key (its collapse key, or a campaign of it), with
 * no uid in it: the same for every recipient. That is right on the device, which only ever shows
 * the pushes sent to it: a newer push of the same campaign (or collapse key) replaces the older one
 * there, as a per-user id would make it. Being the same for every recipient, it lets a campaign's
 * vendor payloads be identical apart from the token, so the batch vendors send them as one
 * multi-token request (sinks/vendors/batching.ts). 32 hex characters, like `collapseId`.
 */
export function senderCollapseId(sender: string, key: string): string {
  return digest(['sender-collapse', sender, key]).toString('hex', 0, 16);
}

/**
 * The notify id of a collapse id, for vendors whose replace key is a number (vivo `notifyId`, HMS,
 * Xiaomi and OPPO `notify_id`): 1..max, the same collapse id always giving the same number (FNV-1a
 * of its UTF-8 bytes, as every notification sent so far carries it; changing it would stack a
 * device's notifications once instead of replacing them).
 */
export function notifyId(collapseId: string, max = 2_147_483_647): number {
  let h = 2166136261;
  for (const byte of Buffer.from(collapseId, 'utf8')) {
    h ^= byte;
    h = Math.imul(h, 16777619) >>> 0;
  }
  return (h % max) + 1;
}

/**
 * The hash of a device token that records carry instead of the token (push.outcomes and
 * push.receipts.by-message `token_hash`, the receipt-join's stores, the online-filter's devices):
 * the first 32 hex characters of its SHA-256.
 */
export function tokenHash(token: string): string {
  return hash('sha256', token, 'hex').slice(0, 32);
}

/** Deterministic id of one receipt status of one submission: duplicates and replays share it. */
export function receiptEventId(vendor: string, vendorMessageId: string, taskId: string, deviceId: string, status: string): string {
  return digest(['receipt', vendor, vendorMessageId, taskId, deviceId, status]).toString('hex', 0, 16);
}

/**
 * The event id of an outcome: the same (stage, status, task, discriminator) always gives the same
 * id, so replayed outcomes dedupe in ClickHouse. `discriminator` separates distinct outcomes of one
 * task in one stage (for example a merge window's start).
 */
export function outcomeEventId(stage: string, status: string, task: string, discriminator: string | number = ''): string {
  return uuidFrom(digest(['outcome', stage, status, task, discriminator]));
}
