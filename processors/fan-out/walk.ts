/**
 * The fan-out's walk over a dispatch's channels (fan-out.ts): its state, what each vendor answer
 * decides (`decide`), and where a walk stands after the answers its task row recorded.
 */
import { backoffDelay } from '../../common/retry.ts';
import type { DispatchLifecycle } from './dispatch-state.ts';
import type { ChannelAnswer, StoredTask, TaskRow } from './ledger.ts';
import type { FanOutConfig } from './options.ts';
import type { DispatchProgress, LastFailure } from './parked.ts';
import type { FanOutReason } from './records.ts';
import type { Output } from './release-queue.ts';
import type { PushDispatch } from '../model/records.ts';
import { isUnknownOutcome, type SubmitOutcome } from './vendor-port.ts';

/** A dispatch's walk over its channels, after its claim: where it is, which the processor updates as it applies each decision. */
export interface Walk {
  /** Where the walk started (a fresh dispatch, or one resumed from the parked store). */
  readonly progress: DispatchProgress;
  readonly dispatch: PushDispatch;
  readonly task: TaskRow;
  readonly life: DispatchLifecycle;
  readonly conversation: string;
  /** The dispatch's outputs so far, released in start order (ReleaseQueue). */
  readonly ready: Output[];
  /** Every answer of the task but ACCEPTED, in order; recorded with its result, re-emitted by a replay. */
  readonly trail: ChannelAnswer[];
  /** Vendor calls made so far, all channels. */
  attempts: number;
  last: LastFailure;
  /** The channel and call being made (or next): where a checkpointed walk resumes after a restart. */
  channel: number;
  call: number;
  /** The walk took over a task claimed before: its next call is a re-send (counted, then cleared). */
  resending: boolean;
}

/** The channel a walk is on. */
export interface ChannelAt {
  readonly index: number;
  readonly vendor: string;
  /** Another channel follows this one. */
  readonly hasNext: boolean;
}

/** Retryable codes of calls the vendor never processed; a push that ends on one was not submitted. */
const UNREACHED_CODES = new Set(['CONNECTION_LOST']);

/** The reason of a channel given up on a final vendor answer, by answer kind. */
const FAILURE_REASON: Readonly<Record<'payload-too-large' | 'payload-rejected' | 'permanent' | 'unknown-code' | 'auth-failed', FanOutReason>> = {
  'payload-too-large': 'payload_too_large',
  'payload-rejected': 'payload_rejected',
  permanent: 'permanent',
  'unknown-code': 'unknown_code',
  'auth-failed': 'auth_failed',
};

/**
 * What a vendor answer decides, for the processor to apply: `answer` enters the task's trail
 * (emitted, and recorded on its row before the next call), `pauseUntil` pauses the (vendor, app)
 * for every task, `deadToken` reports the token invalid (push.tokens); then the walk accepts, moves
 * to the next channel, stops trying other channels (the vendor may have the push), or calls the
 * same channel again after `waitMs` (parked, waiting on `code`, when longer than the in-place wait;
 * with `readCancels`, a READ of the conversation meanwhile ends it).
 */
export type Decision =
  | { readonly next: 'accept'; readonly vendorMessageId: string }
  | (Effects & { readonly next: 'next-channel' | 'no-other-channel' })
  | (Effects & { readonly next: 'retry'; readonly waitMs: number; readonly code: string; readonly readCancels: boolean });

interface Effects {
  readonly answer?: ChannelAnswer;
  readonly pauseUntil?: number;
  readonly deadToken?: boolean;
}

/**
 * What the answer to call `call` on channel `at` decides (docs/design.md, "fan-out"), `attempts`
 * calls made in all, at `now`:
 * - accepted: the task is submitted.
 * - dead token: the channel fails, never retried, and the token is reported invalid.
 * - 429 or quota: THROTTLED. A 429 (unless it names the token only) pauses the (vendor, app), for
 *   its Retry-After or the default. Quota moves to the next channel, never retried; a 429 does too
 *   when another channel is left, else it is called again after the pause, up to
 *   `maxThrottledAttempts` calls.
 * - retryable: written but unanswered (ANSWER_LOST), the vendor may have it: another channel could
 *   show the user a second notification, so only this channel is tried again (the collapse id makes
 *   a resend harmless). A known failure (5xx, refused connection) gets the retry budget, then the
 *   next channel; on the last channel it is retried for as long as the push is worth sending
 *   (`retryMaxAgeMs`). A READ of the conversation during the wait ends it.
 * - payload, permanent, auth, unknown code: the channel fails, the next one is tried.
 */
export function decide(outcome: SubmitOutcome, at: ChannelAt, call: number, attempts: number, decidedAt: number, config: FanOutConfig, now: number): Decision {
  const { index: ci, vendor } = at;
  const failed = (status: 'FAILED' | 'DEAD_TOKEN', reason: FanOutReason, code: string): ChannelAnswer => {
    return { channel: ci, status, vendor, reason, code, attempts, discriminator: `${ci}:${vendor}:${status}` };
  };
  switch (outcome.kind) {
    case 'accepted':
      return { next: 'accept', vendorMessageId: outcome.vendorMessageId };
    case 'dead-token':
      return { next: 'next-channel', answer: failed('DEAD_TOKEN', 'dead_token', outcome.code), deadToken: true };
    case 'rate-limited':
    case 'quota-exhausted': {
      const quota = outcome.kind === 'quota-exhausted';
      const hint = outcome.kind === 'rate-limited' ? outcome.retryAfterMs : undefined;
      const perToken = outcome.kind === 'rate-limited' && outcome.perToken === true;
      const pauseUntil = quota || perToken ? undefined : now + (hint ?? config.defaultThrottleMs);
      const { code } = outcome;
      const discriminator = `${ci}:${vendor}:throttled:${call}`;
      const answer: ChannelAnswer = { channel: ci, status: 'THROTTLED', vendor, reason: quota ? 'quota' : 'rate_limited', code, attempts, discriminator };
      if (quota || at.hasNext || call >= config.maxThrottledAttempts) return { next: 'next-channel', answer, pauseUntil };
      const waitMs = Math.max(hint ?? config.defaultThrottleMs, backoffDelay(call, config.backoffInitialMs, config.backoffMaxMs));
      return { next: 'retry', answer, pauseUntil, waitMs, code, readCancels: false };
    }
    case 'retryable': {
      const unknown = isUnknownOutcome(outcome);
      const young = now - decidedAt < config.retryMaxAgeMs;
      if (call < config.maxRetryableAttempts || (young && (unknown || !at.hasNext))) {
        const waitMs = Math.max(outcome.retryAfterMs ?? 0, backoffDelay(call, config.backoffInitialMs, config.backoffMaxMs));
        return { next: 'retry', waitMs, code: outcome.code, readCancels: true };
      }
      const expired = config.retryMaxAgeMs > 0 && !young && (unknown || !at.hasNext);
      const reason = UNREACHED_CODES.has(outcome.code) ? 'vendor_unreachable' : expired ? 'max_age_exceeded' : 'retries_exhausted';
      // The vendor may have it: no other channel.
      return { next: unknown ? 'no-other-channel' : 'next-channel', answer: failed('FAILED', reason, outcome.code) };
    }
    default:
      return { next: 'next-channel', answer: failed('FAILED', FAILURE_REASON[outcome.kind], outcome.code) };
  }
}

/** Channel `ci` fails before any call: no adapter serves it, or the payload is over the vendor's limit. */
export function uncalledChannel(ci: number, vendor: string, attempts: number, reason: 'no_adapter' | 'payload_too_large'): ChannelAnswer {
  const code = reason === 'no_adapter' ? 'NO_ADAPTER' : 'PAYLOAD_TOO_LARGE';
  return { channel: ci, status: 'FAILED', vendor, reason, code, attempts, discriminator: `${ci}:${vendor}:FAILED` };
}

/** The vendor is paused (an earlier 429) for longer than the walk waits in place, and another channel is left: THROTTLED, no call. */
export function pausedChannel(ci: number, vendor: string, attempts: number): ChannelAnswer {
  return { channel: ci, status: 'THROTTLED', vendor, reason: 'rate_limited', code: 'VENDOR_PAUSED', attempts, discriminator: `${ci}:${vendor}:paused` };
}

/**
 * The final answer when every channel failed: quota on every channel is a drop, a 429 on the last
 * one a failure; otherwise there is none (the last channel's answer is the task's last).
 */
export function allChannelsFailed(last: LastFailure, attempts: number): ChannelAnswer | undefined {
  if (last.quotaOnly) return { channel: -1, status: 'DROPPED', vendor: last.vendor, reason: 'quota', code: last.code, attempts, discriminator: 'quota' };
  if (last.throttled) return { channel: -1, status: 'FAILED', vendor: last.vendor, reason: 'rate_limited', code: last.code, attempts, discriminator: 'final' };
  return undefined;
}

/**
 * The final answer of a dispatch whose app left the apps file (a reload): DROPPED app_removed, on
 * the channel it was at, no vendor called. Not the token's fault: nothing counts against it.
 */
export function appRemovedAnswer(vendor: string, attempts: number): ChannelAnswer {
  return { channel: -1, status: 'DROPPED', vendor, reason: 'app_removed', code: 'APP_REMOVED', attempts, discriminator: 'app_removed' };
}

/** The final answer of a retrying dispatch whose conversation was read: SUPPRESSED read. */
export function readAnswer(vendor: string, attempts: number): ChannelAnswer {
  return { channel: -1, status: 'SUPPRESSED', vendor, reason: 'read', code: 'READ', attempts, discriminator: 'read' };
}

/**
 * The final answer of a parked push evicted over the cap: FAILED on the channel it waited on with
 * the vendor's last code, reason `parked_evicted`, or `vendor_unreachable` when that last call never
 * reached the vendor (not a submission, as for the maximum age).
 */
export function evictedAnswer(p: DispatchProgress): ChannelAnswer {
  const vendor = vendorAt(p);
  const code = p.waitingOn ?? 'PARKED_EVICTED';
  const reason = UNREACHED_CODES.has(code) ? 'vendor_unreachable' : 'parked_evicted';
  return { channel: p.channel, status: 'FAILED', vendor, reason, code, attempts: p.attempts, discriminator: `${p.channel}:${vendor}:FAILED` };
}

/** The vendor of the channel a dispatch is at (that of its last answer once past the last channel). */
export function vendorAt(p: DispatchProgress): string {
  return p.dispatch.channels[p.channel]?.vendor ?? p.last.vendor;
}

/**
 * The last failure after answer `a` (decides the final outcome when every channel fails): a
 * failure, a dead token, a quota answer or a 429 ends its channel; quota keeps "quota only" as it
 * was. An answer about the whole task (channel -1) changes nothing.
 */
export function lastAfter(last: LastFailure, a: ChannelAnswer): LastFailure {
  if (a.channel < 0) return last;
  const quota = a.status === 'THROTTLED' && a.reason === 'quota';
  return { vendor: a.vendor, code: a.code, quotaOnly: quota && last.quotaOnly, throttled: a.status === 'THROTTLED' && !quota };
}

/** Where a walk is, to store: about to make call `call` on channel `ci`, waiting on `waitingOn`. */
export function progressOf(walk: Walk, ci: number, call: number, waitingOn: string): DispatchProgress {
  // Every field written out (one per push, so a literal; common/objects.ts says why).
  const { dispatch, key, timestamp } = walk.progress;
  return { dispatch, key, timestamp, channel: ci, call, attempts: walk.attempts, last: walk.last, trail: [...walk.trail], waitingOn };
}

/**
 * A pending task's claim (docs/design.md, "Takeover"): when its row recorded more of the walk than
 * `p` keeps (an earlier owner's answers), the walk resumes after them (`resumedFrom`), and `unseen`
 * lists those `p` does not keep (a checkpointed dispatch's went out with the commit that
 * checkpointed it; a fresh
 * dispatch's never went out), to emit again with their event ids.
 */
export function takeOver(p: DispatchProgress, known: StoredTask): { progress: DispatchProgress; unseen: readonly ChannelAnswer[] } {
  if (!recordedBeyond(p, known.attempts, known.trail)) return { progress: p, unseen: [] };
  const had = new Set((p.trail ?? []).map((a) => a.discriminator));
  return { progress: resumedFrom(p, known.trail, known.attempts), unseen: known.trail.filter((a) => !had.has(a.discriminator)) };
}

/**
 * Where a walk stands after the answers its task row recorded (docs/design.md, "Takeover"): the
 * channel and call after the last recorded answer, and the last failure those answers leave, by the
 * rules the walk itself follows (`decide`): a failure, a dead token, a quota answer or a 429 with
 * another channel left ends its channel; a 429 on the last channel calls it again. Retryable
 * answers (5xx, lost connections) are not recorded: the call after them is a retry anyway.
 */
export function resumedFrom(p: DispatchProgress, trail: readonly ChannelAnswer[], attempts: number): DispatchProgress {
  const lastChannel = p.dispatch.channels.length - 1;
  let channel = 0;
  let call = 1;
  let last: LastFailure = { vendor: '', code: '', quotaOnly: true, throttled: false };
  for (const a of trail) {
    if (a.channel < 0) continue; // an answer about the whole task: only a final row has one
    last = lastAfter(last, a);
    if (last.throttled && a.channel === lastChannel) {
      call = channel === a.channel ? call + 1 : 2;
      channel = a.channel;
    } else {
      channel = a.channel + 1;
      call = 1;
    }
  }
  const { dispatch, key, timestamp } = p;
  return { dispatch, key, timestamp, channel, call, attempts, last, trail: [...trail] };
}

/** The task row recorded more of the walk than `p` keeps (more calls answered, or as many and more answers). */
export function recordedBeyond(p: DispatchProgress, attempts: number, trail: readonly ChannelAnswer[]): boolean {
  return attempts > p.attempts || (attempts === p.attempts && trail.length > (p.trail?.length ?? 0));
}
