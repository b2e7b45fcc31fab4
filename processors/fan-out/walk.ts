/** The fan-out's walk over a dispatch's channels (fan-out.ts): its state, and that state as the parked store keeps it. */
import type { ChannelAnswer, TaskRow } from './ledger.ts';
import type { DispatchProgress, LastFailure } from './parked.ts';
import type { Output } from './release-queue.ts';
import type { SubmitPath } from './submit-paths.ts';
import type { PushDispatch } from '../model/records.ts';
import type { Vendor } from './vendor-port.ts';

/** A dispatch's walk over its channels, after its claim: what the decisions along it read and update. */
export interface Walk {
  /** Where the walk started (a fresh dispatch, or one resumed from the parked store). */
  readonly progress: DispatchProgress;
  readonly dispatch: PushDispatch;
  readonly task: TaskRow;
  readonly conversation: string;
  /** The dispatch's outputs so far, released in start order (ReleaseQueue). */
  readonly ready: Output[];
  /** Every answer of the task but ACCEPTED, in order; recorded with its result, re-emitted by a replay. */
  readonly trail: ChannelAnswer[];
  /** Vendor calls made so far, all channels. */
  attempts: number;
  last: LastFailure;
  /** The channel and call being made (or next): where a held walk resumes after a restart. */
  channel: number;
  call: number;
  /** The walk took over a task claimed before: its next call is a re-send (counted, then cleared). */
  resending: boolean;
}

/** The channel a walk is on. */
export interface ChannelAt {
  readonly index: number;
  readonly vendor: Vendor;
  readonly token: string;
  /** Another channel follows this one. */
  readonly hasNext: boolean;
  readonly path: SubmitPath;
}

/** What a vendor answer leaves the walk to do. */
export type Next = 'call-again' | 'next-channel' | 'no-other-channel' | 'done';

/** Where a walk is, to store: about to make call `call` on channel `ci`, waiting on `waitingOn`. */
export function progressOf(walk: Walk, ci: number, call: number, waitingOn: string): DispatchProgress {
  // Every field written out (one per push, so a literal; common/objects.ts says why).
  const { dispatch, key, timestamp } = walk.progress;
  return { dispatch, key, timestamp, channel: ci, call, attempts: walk.attempts, last: walk.last, trail: [...walk.trail], waitingOn };
}

/**
 * Where a walk stands after the answers its task row recorded (docs/design.md, "Takeover"): the
 * channel and call after the last recorded answer, and the last failure those answers leave, by the
 * rules the walk itself follows (fan-out.ts): a failure, a dead token, a quota answer or a 429 with
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
    const quota = a.status === 'THROTTLED' && a.reason === 'quota';
    const throttled = a.status === 'THROTTLED' && !quota;
    last = { vendor: a.vendor, code: a.code, quotaOnly: quota && last.quotaOnly, throttled };
    if (throttled && a.channel === lastChannel) {
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

/** The task row recorded more of the walk than `p` holds (more calls answered, or as many and more answers). */
export function recordedBeyond(p: DispatchProgress, attempts: number, trail: readonly ChannelAnswer[]): boolean {
  return attempts > p.attempts || (attempts === p.attempts && trail.length > (p.trail?.length ?? 0));
}
