import { PushError } from '../../common/errors.ts';

/**
 * Where one push is in the fan-out (docs/design.md, "fan-out"); `FanOutProcessor.run` (fan-out.ts)
 * drives it. A record from push.dispatch starts `received`; a dispatch taken out of the parked
 * store starts `parked`. The life of a dispatch:
 *
 *   received ─┬─ expired (a business push), or no channel ─────────────→ dropped
 *             ├─ its task already parked: that dispatch finishes it ──→ skipped
 *             └──────────────────────────────────────────────────────→ claiming
 *   claiming ─┬─ the row is final: its answers are emitted again ─────→ replayed
 *             ├─ the user's MySQL shard is down ──────────────────────→ parked
 *             └─ pending: on after the answers the row recorded ──────→ calling
 *   calling  ─┬─ a short backoff, waited in place ────────────────────→ waiting ─┬─ over ───→ calling
 *             │                                                                  └─ a READ ─→ failed
 *             ├─ a long backoff, or the vendor paused on the last channel → parked
 *             ├─ a vendor accepted ───────────────────────────────────→ accepted
 *             └─ every channel failed, a READ, its campaign cancelled ─→ failed
 *   parked   ─┬─ due ─────────────────────────────────────────────────→ calling
 *             ├─ unclaimed (its shard down), checkpointed in flight ──→ claiming
 *             ├─ expired ─────────────────────────────────────────────→ dropped
 *             └─ a READ, evicted over the cap, checkpointed ended ────→ failed
 *
 * - `received`: a dispatch record, not looked at yet.
 * - `parked`: in the `fan-out-parked` store, waiting out a long backoff, the vendor's pause or its
 *   user's MySQL shard.
 * - `claiming`: claiming its task in im_push_task.
 * - `calling`: on the device's channels: a vendor call is being made, or is next.
 * - `waiting`: waiting out a short backoff before calling the same channel again.
 * - Final: `accepted` (the task submitted, 1), `failed` (the task failed, 3, its final answer in its
 *   trail), `dropped` (no row), `replayed` (nothing called), `skipped` (nothing emitted).
 *
 * Whatever state a run leaves the dispatch in (final, or parked), its outputs (outcomes, token
 * invalidations) and, for a record, its input offset are released in the order the dispatches
 * started (release-queue.ts), and committed only once its task's result is in MySQL (fan-out.ts
 * `start`, `endParked`). Checkpointing is not a state: a fused commit keeps a copy of a dispatch
 * still running (`IN_FLIGHT`), or of one ended while its failed row is not yet written (`ENDED`),
 * in the parked store (a checkpoint), read only after a restart, where it comes back `parked`. An
 * error (a row MySQL refuses) stops a dispatch in any state: its record goes to the DLQ (a resumed
 * dispatch's error fails the task).
 */
export type DispatchState = 'received' | 'parked' | 'claiming' | 'calling' | 'waiting' | 'accepted' | 'failed' | 'dropped' | 'replayed' | 'skipped';

/** The transitions a dispatch may make; anything else is a bug in the fan-out. */
export const DISPATCH_TRANSITIONS: Readonly<Record<DispatchState, readonly DispatchState[]>> = Object.freeze({
  received: ['claiming', 'dropped', 'skipped'],
  parked: ['claiming', 'calling', 'dropped', 'failed'],
  claiming: ['calling', 'replayed', 'parked'],
  calling: ['waiting', 'parked', 'accepted', 'failed'],
  waiting: ['calling', 'failed'],
  accepted: [],
  failed: [],
  dropped: [],
  replayed: [],
  skipped: [],
});

/** One dispatch's state, changed only along DISPATCH_TRANSITIONS. */
export class DispatchLifecycle {
  private current: DispatchState;

  /** A dispatch `received` from push.dispatch, or taken out of the store `parked`; `taskId` names it in refused transitions. */
  constructor(
    readonly taskId: string,
    start: 'received' | 'parked',
  ) {
    this.current = start;
  }

  /** The current state. */
  get state(): DispatchState {
    return this.current;
  }

  /** Moves to `next`; throws ILLEGAL_DISPATCH_STATE (naming the task and both states) when the table does not allow it. */
  to(next: DispatchState): void {
    if (!DISPATCH_TRANSITIONS[this.current].includes(next)) {
      throw new PushError('ILLEGAL_DISPATCH_STATE', `dispatch of task ${this.taskId} cannot go from ${this.current} to ${next}`);
    }
    this.current = next;
  }
}
