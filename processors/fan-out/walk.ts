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
