/**
 * The receipt-join's state of one (vendor, vendor message id): the submissions the vendor accepted
 * under the id, which receipt went to which of them, what was already emitted, the receipts still
 * waiting for their submission, and when the entry expires. Pure functions on the entry; each
 * returns whether it changed the entry, so the join writes its store (and changelog) only then.
 */
import type { MessageReceipt, ReceiptStatus, SubmissionRef } from './records.ts';

/** State of one (vendor, vendor message id): the value of the `receipt-join-messages` store. */
export interface MessageEntry {
  /** Submissions the vendor accepted under this id (more than one only for batch sends). */
  subs: SubmissionRef[];
  /** Receipt token hash (or `*` without a token) → index in `subs`. */
  assigned: Record<string, number>;
  /** `${index}|${status}` already emitted: duplicate receipts are not emitted again. */
  emitted: string[];
  /** Receipts that arrived before their submission. */
  pending: MessageReceipt[];
  /**
   * Epoch ms (wall clock) at which the entry is forgotten and its pending receipts are emitted
   * unmatched. Kept in the entry so that one store (one changelog record per key and commit) holds
   * both; absent in values written before it existed (see `dueOf`).
   */
  due?: number;
}

/** A new entry, forgotten at `due` unless a submission extends it. */
export const emptyEntry = (due: number): MessageEntry => ({ subs: [], assigned: {}, emitted: [], pending: [], due });

/**
 * The entry's expiry. Values written before `due` existed had it in a separate timer store; for
 * them it is derived as that store set it: the latest acceptance plus the retention, or, with no
 * submission yet, the latest pending receipt plus the pending window.
 */
export function dueOf(entry: MessageEntry, retentionMs: number, pendingMs: number): number {
  if (entry.due !== undefined) return entry.due;
  if (entry.subs.length > 0) return Math.max(...entry.subs.map((s) => s.accepted_at)) + retentionMs;
  return Math.max(0, ...entry.pending.map((r) => r.received_at)) + pendingMs;
}

/** Adds a submission unless the same (task, device) is already there (a replayed outcome). */
export function addSubmission(entry: MessageEntry, sub: SubmissionRef): boolean {
  if (entry.subs.some((s) => s.task_id === sub.task_id && s.device_id === sub.device_id)) return false;
  entry.subs.push(sub);
  return true;
}

/** Keeps a receipt until its submission arrives; a second one with the same token and status is a duplicate. */
export function addPending(entry: MessageEntry, r: MessageReceipt): boolean {
  // The app is part of the identity: another app's receipt must not shadow this app's own.
  if (entry.pending.some((p) => p.token_hash === r.token_hash && p.status === r.status && p.app_id === r.app_id)) return false;
  entry.pending.push(r);
  return true;
}

/** Records that (submission, status) was emitted; false when it already was (a duplicate receipt). */
export function markEmitted(entry: MessageEntry, index: number, status: ReceiptStatus): boolean {
  const mark = `${index}|${status}`;
  if (entry.emitted.includes(mark)) return false;
  entry.emitted.push(mark);
  return true;
}

/**
 * Where a receipt goes: a submission (its index in `subs`; `assigned` when this receipt's token was
 * assigned to it just now, which changes the entry), the pending list, or out unmatched.
 */
export type ReceiptTarget =
  | { readonly kind: 'submission'; readonly index: number; readonly assigned: boolean }
  | { readonly kind: 'pending' }
  | { readonly kind: 'unmatched' }
  /** The receipt came through another app's receipt URL than the submission's app: it is ignored. */
  | { readonly kind: 'other-app' };

/**
 * A receipt applies only to submissions of the app in its receipt URL (the receiver stamps
 * `app_id` from it). A receipt without an app (written before the receiver stamped one) matches any.
 */
const sameApp = (s: SubmissionRef, r: MessageReceipt): boolean => r.app_id === null || s.app_id === r.app_id;

/**
 * Finds the receipt's submission (of the receipt's app only) and assigns the receipt's token to it: by token hash when the
 * receipt and a submission both carry one; otherwise the first submission not yet claimed by
 * another token (arrival order, for receipts or outcomes without a hash). A hashed receipt is never
 * given to a submission whose hash differs: until its own submission arrives (the outcomes of one
 * batch come from several uid partitions) it waits with the pending receipts.
 */
export function assignReceipt(entry: MessageEntry, r: MessageReceipt): ReceiptTarget {
  if (!entry.subs.some((s) => sameApp(s, r))) return { kind: 'other-app' };
  const slot = r.token_hash ?? '*';
  const assigned = entry.assigned[slot];
  if (assigned !== undefined) return sameApp(entry.subs[assigned]!, r) ? { kind: 'submission', index: assigned, assigned: false } : { kind: 'other-app' };
  const index = candidateIndex(entry, r);
  if (index < 0) return r.token_hash !== null && entry.subs.some(hashed) ? { kind: 'pending' } : { kind: 'unmatched' };
  entry.assigned[slot] = index;
  return { kind: 'submission', index, assigned: true };
}

function candidateIndex(entry: MessageEntry, r: MessageReceipt): number {
  const own = r.token_hash === null ? -1 : entry.subs.findIndex((s) => s.token_hash === r.token_hash && sameApp(s, r));
  if (own >= 0) return own;
  // Arrival order: a lone submission takes every receipt, else the first one not yet claimed.
  const taken = new Set(Object.values(entry.assigned));
  const mayTake = (s: SubmissionRef) => sameApp(s, r) && (r.token_hash === null || !hashed(s));
  if (entry.subs.length === 1 && mayTake(entry.subs[0]!)) return 0;
  return entry.subs.findIndex((s, i) => !taken.has(i) && mayTake(s));
}

const hashed = (s: SubmissionRef): boolean => typeof s.token_hash === 'string';
