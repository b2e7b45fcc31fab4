import { withFields } from '../../common/objects.ts';
import { withStores, type Processor, type ProcessorContext, type ProcessorSupplier, type StreamRecord } from '../../topology/api.ts';
import { keyValueStore, timerStore, type KeyValueStore, type TimerStore } from '../../topology/stores.ts';
import type { HandOver } from '../model/inputs.ts';
import type { PresenceEvent, PushDispatch, PushOutcome, TokenReport } from '../model/records.ts';
import { SubmitPaths } from './batcher.ts';
import { CancelledCampaigns, cancelledAnswer, isWithdrawn } from './cancelled.ts';
import { DispatchLifecycle } from './dispatch-state.ts';
import { TASK_STATUS, TaskStoreUnavailableError, type ChannelAnswer, type PushTaskLedger, type StoredTask, type TaskResult, type TaskRow } from './ledger.ts';
import { fanOutConfig, type FanOutConfig, type FanOutListener, type FanOutOptions } from './options.ts';
import { ENDED, IN_FLIGHT, ParkedDispatches, parkedStoreSerde, type DispatchProgress, type ParkedValue } from './parked.ts';
import { acceptedAnswer, deadTokenOutput, isExpired, outcomeOutput, pushMessage, recordedOutputs, replayedAnswer, taskRowOf } from './records.ts';
import type { FanOutAnswer } from './records.ts';
import { DispatchesInFlight, type Output } from './release-queue.ts';
import { RetryingDispatches } from './retrying.ts';
import type { Vendor } from './vendor-port.ts';
import {
  allChannelsFailed,
  appRemovedAnswer,
  decide,
  evictedAnswer,
  lastAfter,
  pausedChannel,
  progressOf,
  readAnswer,
  takeOver,
  uncalledChannel,
  vendorAt,
} from './walk.ts';
import type { ChannelAt, Walk } from './walk.ts';

/**
 * Stores of the fan-out: dispatches waiting out a long backoff, when each is due, and (in memory
 * only, rebuilt from the parked store at init) their order by decision time for the cap.
 */
export const FAN_OUT_STORES = { parked: 'fan-out-parked', retryTimers: 'fan-out-retry-timers', parkedByAge: 'fan-out-parked-by-age' } as const;

export type { DispatchProgress, ParkedValue } from './parked.ts';

/**
 * Header of a dispatch an operator re-submits (`pushctl replay`, after setting the task back to
 * pending): the task's stored state is read from MySQL again instead of the recent-task cache.
 */
export const REPLAY_HEADER = 'push-replay';

/**
 * `waitingOn` of a dispatch parked unclaimed because its user's MySQL shard is down (ledger.ts
 * TaskStoreUnavailableError): resumed after STORE_WAIT_MS, it claims first. Not a vendor code.
 */
const STORE_UNAVAILABLE = 'TASK_STORE_UNAVAILABLE';
const STORE_WAIT_MS = 1_000;

/** Tasks this instance finished recently: a second dispatch of one is answered without asking MySQL. */
const RECENT_LIMIT = 100_000;

/**
 * The fan-out's input, tagged in the wiring (processors/model/inputs.ts): a dispatch, or an
 * im.presence event (only READs matter here).
 */
export type FanOutInput = HandOver<'dispatch', PushDispatch> | HandOver<'presence', PresenceEvent>;
type Out = PushOutcome | TokenReport;

/** How a walk leaves a channel: on to the next one, to no other channel, or done (accepted, failed or parked). */
type ChannelEnd = 'next-channel' | 'no-other-channel' | 'done';

/**
 * The fan-out stage (docs/design.md, "fan-out"): push.dispatch → vendor submissions → push.outcomes
 * (+ token invalidations to push.tokens). Returns the supplier of `FanOutProcessor`, which declares
 * its stores (FAN_OUT_STORES); options are validated here, once. The (vendor, app) gates and
 * batchers are made here too, so every task of the process shares them.
 */
export function fanOut(options: FanOutOptions): ProcessorSupplier<string, FanOutInput, string, Out> {
  const config = fanOutConfig(options);
  const cancelled = options.cancellations && new CancelledCampaigns(options.cancellations);
  const paths = new SubmitPaths(options.vendors, config.defaultLimits, config.clock, cancelled);
  return withStores(
    () => new FanOutProcessor(options, config, paths, cancelled),
    [
      keyValueStore<ParkedValue>(FAN_OUT_STORES.parked, parkedStoreSerde),
      timerStore(FAN_OUT_STORES.retryTimers),
      timerStore(FAN_OUT_STORES.parkedByAge, { changelog: false }),
    ],
  );
}

/**
 * The fan-out processor of one task. Per dispatch (`run`; its states: dispatch-state.ts): claim the
 * task in im_push_task (status 0; a task no longer pending is not submitted again, its stored
 * verdict is re-emitted; one still pending goes on after the answers its row recorded, each written
 * as it came), then try the device's channels in order through each (vendor, app)'s gate, each
 * vendor answer deciding what comes next (walk.ts `decide`). All channels failed → 3. Short backoffs
 * are waited in place; longer ones park the dispatch in a changelogged store, resumed by a
 * wall-clock punctuator, so a commit never waits out a long Retry-After; over its cap the oldest
 * parked push ends FAILED parked_evicted (`evictOverCap`). A READ from im.presence ends the
 * conversation's dispatches waiting to retry (`onPresence`). Results are forwarded from `process`,
 * punctuations and the flushes, in the order the dispatches started; a periodic commit does not
 * wait for dispatches in flight (their input offsets stay out of it: `pinOffset`; fused, they are
 * checkpointed: `flushFinished`), `flush` does.
 */
export class FanOutProcessor implements Processor<string, FanOutInput, string, Out> {
  private ctx!: ProcessorContext<string, Out>;
  private parked!: ParkedDispatches;
  private running!: DispatchesInFlight;
  private readonly retrying = new RetryingDispatches();
  /** Final results of the tasks this instance finished recently, oldest first (RECENT_LIMIT). */
  private readonly recent = new Map<string, StoredTask>();
  private readonly ledger: PushTaskLedger;
  private readonly listener: FanOutListener | undefined;

  constructor(
    private readonly options: FanOutOptions,
    private readonly config: FanOutConfig,
    private readonly paths: SubmitPaths,
    /** The business lane's campaign cancellations (cancelled.ts); undefined on IM's lane. */
    private readonly cancelled?: CancelledCampaigns,
  ) {
    this.ledger = options.ledger;
    this.listener = options.listener;
  }

  init(context: ProcessorContext<string, Out>): void {
    this.ctx = context;
    this.running = new DispatchesInFlight(this.config.maxInFlight, (o) => context.forward(o.record, o.child));
    this.parked = new ParkedDispatches(
      context.getStateStore<KeyValueStore<ParkedValue>>(FAN_OUT_STORES.parked),
      context.getStateStore<TimerStore>(FAN_OUT_STORES.retryTimers),
      context.getStateStore<TimerStore>(FAN_OUT_STORES.parkedByAge),
      this.config.maxParked,
    );
    this.parked.restore((taskId, p) => this.retrying.add(RetryingDispatches.conversation(p.dispatch.uid, p.dispatch.conv_id), taskId, p.dispatch.seq));
    context.schedule(this.config.retryPollMs, 'wall-clock', (now) => this.resumeDue(now), { nextDueMs: () => this.parked.nextDueMs() });
  }

  async process(record: StreamRecord<string, FanOutInput>): Promise<void> {
    const input = record.value;
    return input.kind === 'presence' ? this.onPresence(input.value) : this.onDispatch(record, input.value);
  }

  /**
   * Before a periodic commit: what has finished goes out; dispatches in flight stay out of it. Fused
   * behind the decisions, where the commit must carry every input offset, it waits `commitWaitMs`
   * for them and checkpoints those still running in the parked store (`checkpoint`).
   */
  async flushFinished(): Promise<void> {
    if (this.config.fused) {
      // What goes out now has its task's result in MySQL already (`start`): nothing to flush.
      await this.running.settleOrCheckpoint(this.config.commitWaitMs, (ms) => this.config.clock.sleep(ms));
      this.parked.writeCheckpoints();
      this.reportParked();
      return;
    }
    await this.running.settle(false);
    this.reportParked();
    await this.ledger.flush();
  }

  async flush(): Promise<void> {
    await this.running.settle(true);
    this.parked.writeCheckpoints();
    this.reportParked();
    await this.ledger.flush();
  }

  async close(): Promise<void> {
    await this.running.close();
    this.listener?.onParked?.(this.ctx.taskId, 0);
  }

  /** A dispatch from push.dispatch: started now (its input offset pinned until it is released), then back pressure. */
  private async onDispatch(record: StreamRecord<string, FanOutInput>, d: PushDispatch): Promise<void> {
    this.listener?.onDispatchReceived?.(d);
    if (this.options.cancellationsRead) await this.options.cancellationsRead; // the business lane: every earlier cancellation known first
    this.running.drain();
    const replayed = record.headers?.[REPLAY_HEADER] !== undefined;
    if (replayed) this.recent.delete(d.task_id); // re-submitted by an operator: its task's state is read from MySQL again
    const fresh: DispatchProgress = {
      dispatch: d,
      key: record.key,
      timestamp: record.timestamp,
      channel: 0,
      call: 1,
      attempts: 0,
      last: { vendor: '', code: '', quotaOnly: true, throttled: false },
    };
    this.start(fresh, true, replayed);
    await this.running.backpressure();
    this.running.drain();
  }

  /**
   * The parked gauge: at each punctuation and at each commit once the dispatches in flight have
   * settled (those that failed again are parked by then), so the figure a commit leaves is the
   * parked store as committed. The punctuation runs only when a parked dispatch is due, and whatever
   * parks or unparks one is work a commit follows.
   */
  private reportParked(): void {
    this.listener?.onParked?.(this.ctx.taskId, this.parked.size);
  }

  /**
   * The retry punctuator, called only once a parked dispatch is due or the store is over its cap
   * (`ParkedDispatches.nextDueMs`): ends what is over the cap, resumes the parked dispatches now due.
   */
  private async resumeDue(now: number): Promise<void> {
    if (this.options.cancellationsRead) await this.options.cancellationsRead;
    this.evictOverCap(); // a cap lowered since the store was written
    for (const p of this.parked.takeDue(now, this.config.maxInFlight)) this.start(p, false);
    this.reportParked();
    await this.running.backpressure();
    this.running.drain();
  }

  /**
   * Starts a dispatch: fresh (a record, whose input offset it pins; `replayed` when an operator
   * re-submits it) or resumed from the parked store. It runs behind any dispatch of the same task
   * still in flight (a replayed record waits for the first one's verdict), and its outputs are
   * released in start order (`drain`). It ends only once its task's result is in MySQL, so its
   * outputs never go out before it.
   */
  private start(p: DispatchProgress, fresh: boolean, replayed = false): void {
    const taskId = p.dispatch.task_id;
    const live: { walk?: Walk } = {};
    this.running.start(
      taskId,
      fresh ? this.ctx.pinOffset() : undefined,
      async (outputs) => {
        await this.run(p, fresh, replayed, outputs, live);
        await this.ledger.written(taskId);
      },
      () => {
        if (!this.parked.has(taskId)) this.retrying.remove(taskId);
      },
      () => this.parked.checkpoint(live.walk ? progressOf(live.walk, live.walk.channel, live.walk.call, IN_FLIGHT) : p),
    );
  }

  /**
   * Takes a dispatch as far as it goes now, its outputs into `ready`, `live.walk` showing where it
   * is (for a commit that checkpoints it):
   * 1. One checkpointed ENDED (a READ or an eviction ended it parked) writes its failed row and
   *    emits its final answer again; an expired business push is dropped.
   * 2. Fresh, or parked unclaimed or checkpointed in flight: claimed (without channel, dropped; its
   *    task parked by an earlier dispatch, skipped). A task no longer pending re-emits its answers;
   *    one claimed before and still pending is taken over: it resumes after the answers its row
   *    recorded, and its first call is a re-send (the earlier owner's call may have reached the
   *    vendor; docs/design.md, "Takeover").
   * 3. Over the device's channels from where it is, until a vendor accepts, it parks, or every
   *    channel failed. A READ of the conversation while it was parked, or its campaign's
   *    cancellation, ends it first.
   */
  private async run(start: DispatchProgress, fresh: boolean, replayed: boolean, ready: Output[], live: { walk?: Walk }): Promise<void> {
    const d = start.dispatch;
    const task = taskRowOf(d);
    const life = new DispatchLifecycle(d.task_id, fresh ? 'received' : 'parked');
    if (start.waitingOn === ENDED) return this.endWithTrail(life, start, task, ready);
    if (isExpired(d, this.config.clock.now())) return this.drop(life, start, ready, 'expired');

    let p = start;
    let resending = false;
    if (fresh || start.waitingOn === STORE_UNAVAILABLE || start.waitingOn === IN_FLIGHT) {
      if (d.channels.length === 0) return this.drop(life, start, ready, 'no_token');
      if (fresh && this.parked.has(d.task_id)) return life.to('skipped'); // already waiting out a backoff: that one finishes it
      life.to('claiming');
      const known = await this.claim(d, task);
      if (known === undefined) {
        // The user's shard is down: park unclaimed (the input offset commits with the parked entry) and claim again later.
        life.to('parked');
        return this.parked.park(withFields(p, { waitingOn: STORE_UNAVAILABLE }), this.ctx.wallClockTimeMs() + STORE_WAIT_MS);
      }
      if (known.status !== TASK_STATUS.pending) {
        life.to('replayed');
        return this.replay(p, known, ready);
      }
      const { progress, unseen } = takeOver(p, known);
      ready.push(...recordedOutputs(p, unseen, this.config.clock.now(), this.options.outputs));
      p = progress;
      resending = (known.claims ?? 1) > 1 && !replayed;
    }

    life.to('calling');
    const walk: Walk = {
      progress: p,
      dispatch: d,
      task,
      life,
      conversation: RetryingDispatches.conversation(d.uid, d.conv_id),
      ready,
      trail: [...(p.trail ?? [])],
      attempts: p.attempts,
      last: p.last,
      channel: p.channel,
      call: p.call,
      resending,
    };
    live.walk = walk;
    const vendor = vendorAt(p);
    if (!fresh && this.retrying.isRead(walk.conversation, d.seq)) return void this.fail(walk, readAnswer(vendor, walk.attempts));
    if (this.cancelled?.isCancelled(d)) return void this.fail(walk, cancelledAnswer(vendor, walk.attempts));
    if (!this.appListed(d.app_id)) return void this.fail(walk, appRemovedAnswer(vendor, walk.attempts));
    for (let ci = p.channel; ci < d.channels.length; ci++) {
      const end = await this.callChannel(walk, ci);
      if (end === 'done') return;
      if (end === 'no-other-channel') break;
    }
    this.fail(walk, allChannelsFailed(walk.last, walk.attempts));
  }

  /** Whether the apps file lists the app now (VendorDirectory.hasApp; a reload may remove one while its pushes are under way). */
  private appListed(appId: string): boolean {
    return this.options.vendors.hasApp?.(appId) ?? true;
  }

  /** Dropped unsent, without a task row: a business push past its expiry, or a dispatch without channel. */
  private drop(life: DispatchLifecycle, p: DispatchProgress, ready: Output[], reason: 'expired' | 'no_token'): void {
    life.to('dropped');
    this.emit(p, ready, { status: 'DROPPED', vendor: null, reason, code: null, attempts: 0, discriminator: reason });
  }

  /**
   * Claims the task in the ledger (status 0 unless a row exists), or answers from the tasks this
   * instance finished; undefined when the user's MySQL shard is down (TaskStoreUnavailableError).
   */
  private async claim(d: PushDispatch, task: TaskRow): Promise<StoredTask | undefined> {
    const started = this.config.clock.now();
    try {
      const known = this.recent.get(d.task_id) ?? (await this.ledger.claim(task));
      this.listener?.onClaimed?.(d, this.config.clock.now() - started);
      return known;
    } catch (error) {
      if (error instanceof TaskStoreUnavailableError) return undefined;
      throw error;
    }
  }

  /**
   * A task already final (a replayed or re-delivered dispatch): every answer it gave, from the
   * row, with the same event ids, and the invalidation of each dead token again. So a crash
   * between the vendor's answers and the commit of their outcomes loses none of them.
   */
  private replay(p: DispatchProgress, known: StoredTask, ready: Output[]): void {
    ready.push(...recordedOutputs(p, known.trail, this.config.clock.now(), this.options.outputs));
    // A failed task's trail keeps every outcome it had, its final one included: nothing else is
    // emitted (a made-up "duplicate" outcome would be counted as a second ending). Rows without a
    // trail (written before trails existed) re-emit their stored verdict.
    if (known.status !== TASK_STATUS.failed || known.trail.length === 0) this.emit(p, ready, replayedAnswer(known));
  }

  /**
   * Calls channel `ci` until the vendor accepts, the channel is given up, or the dispatch parks or
   * ends; each answer's decision (`decide`) is applied here. A channel without adapter, or whose
   * payload is over the vendor's limit, fails without a call. While the vendor is paused for this
   * app (an earlier 429) for longer than the walk waits in place, no call is made: the walk moves on
   * to the next channel (THROTTLED), or parks until the pause ends.
   */
  private async callChannel(walk: Walk, ci: number): Promise<ChannelEnd> {
    const d = walk.dispatch;
    const channel = d.channels[ci]!;
    const vendor = channel.vendor as Vendor;
    if (!this.appListed(d.app_id)) return this.fail(walk, appRemovedAnswer(vendor, walk.attempts));
    let path = this.paths.get(vendor, d.app_id);
    if (!path) {
      this.enterTrail(walk, uncalledChannel(ci, vendor, walk.attempts, 'no_adapter'));
      return 'next-channel';
    }
    const message = pushMessage(d, channel.token, channel.classification, this.config.ttlSeconds);
    if (path.adapter.payloadBytes(message) > path.adapter.maxPayloadBytes) {
      this.enterTrail(walk, uncalledChannel(ci, vendor, walk.attempts, 'payload_too_large'));
      return 'next-channel';
    }
    const at: ChannelAt = { index: ci, vendor, hasNext: ci < d.channels.length - 1 };
    this.cancelled?.follow(message, d);
    for (let call = ci === walk.progress.channel ? walk.progress.call : 1; ; call++) {
      // A reload of the apps file may have removed the app, or rebuilt its adapters, since the last call.
      if (!this.appListed(d.app_id)) return this.fail(walk, appRemovedAnswer(vendor, walk.attempts));
      path = this.paths.get(vendor, d.app_id);
      if (!path) {
        this.enterTrail(walk, uncalledChannel(ci, vendor, walk.attempts, 'no_adapter'));
        return 'next-channel';
      }
      const paused = path.gate.pausedUntil - this.config.clock.now();
      if (paused > this.config.inlineBackoffMaxMs) {
        if (!at.hasNext) return this.park(walk, ci, call, paused, 'VENDOR_PAUSED');
        this.enterTrail(walk, pausedChannel(ci, vendor, walk.attempts));
        return 'next-channel';
      }
      walk.channel = ci;
      walk.call = call;
      // Every earlier answer of the task is on its row before the next call (recorded as it came:
      // enterTrail). A walk with no answer yet has nothing to wait for: no await on a push's first call.
      if (walk.trail.length > 0) await this.ledger.written(d.task_id);
      if (walk.resending) {
        walk.resending = false;
        this.listener?.onTakeoverResend?.(vendor, d.app_id);
      }
      const outcome = await path.batcher.submit(message);
      if (isWithdrawn(outcome)) return this.fail(walk, cancelledAnswer(vendor, walk.attempts));
      walk.attempts++;
      const now = this.config.clock.now();
      const decision = decide(outcome, at, call, walk.attempts, d.decided_at, this.config, now);
      if (decision.next === 'accept') return this.accept(walk, vendor, decision.vendorMessageId);
      if (decision.pauseUntil !== undefined) path.gate.pause(decision.pauseUntil);
      if (decision.answer) this.enterTrail(walk, decision.answer);
      if (decision.deadToken) walk.ready.push(deadTokenOutput(walk.progress, vendor, channel.token, now, this.options.outputs.tokens));
      if (decision.next !== 'retry') return decision.next;
      // Called again after the wait: in place if short, else parked (a READ meanwhile ends a retryable wait).
      if (decision.readCancels) this.retrying.add(walk.conversation, d.task_id, d.seq);
      if (decision.waitMs > this.config.inlineBackoffMaxMs) return this.park(walk, ci, call + 1, decision.waitMs, decision.code);
      walk.life.to('waiting');
      await this.config.clock.sleep(decision.waitMs);
      if (decision.readCancels && this.retrying.isRead(walk.conversation, d.seq)) return this.fail(walk, readAnswer(vendor, walk.attempts));
      walk.life.to('calling');
    }
  }

  /** Accepted: the task is submitted (1), recorded in the ledger, and its ACCEPTED outcome emitted. */
  private accept(walk: Walk, vendor: string, vendorMessageId: string): ChannelEnd {
    walk.life.to('accepted');
    const { attempts, trail } = walk;
    this.conclude(walk.task, { status: TASK_STATUS.submitted, vendor, vendorMessageId, failCode: null, attempts, trail });
    this.emit(walk.progress, walk.ready, acceptedAnswer(vendor, vendorMessageId, attempts));
    return 'done';
  }

  /**
   * The task fails (3), its row recording the last vendor and code: every channel failed, the
   * conversation was read, or the campaign cancelled. `final`, when there is one, is its final
   * answer, into its trail first (every channel on quota: DROPPED quota; a 429 last: FAILED).
   */
  private fail(walk: Walk, final: ChannelAnswer | undefined): ChannelEnd {
    walk.life.to('failed');
    const { vendor, code } = final ?? walk.last;
    if (final) this.enterTrail(walk, final);
    this.conclude(walk.task, failedResult(vendor, code, walk.attempts, walk.trail));
    return 'done';
  }

  /** Parks the dispatch until call `call` on channel `ci`, waiting out the answer `code`; over the cap, the oldest parked push ends. */
  private park(walk: Walk, ci: number, call: number, ms: number, code: string): ChannelEnd {
    walk.life.to('parked');
    const d = walk.dispatch;
    this.parked.park(progressOf(walk, ci, call, code), this.ctx.wallClockTimeMs() + ms);
    this.retrying.add(walk.conversation, d.task_id, d.seq);
    this.evictOverCap();
    return 'done';
  }

  /**
   * An answer of the task other than ACCEPTED: kept in the walk's trail, which a replay re-emits,
   * emitted, and recorded on the task's row at once (pending, until a final result replaces it): the
   * walk waits for that write (PushTaskLedger.written) before its next call, so a takeover resumes
   * after it.
   */
  private enterTrail(walk: Walk, a: ChannelAnswer): void {
    walk.trail.push(a);
    this.emit(walk.progress, walk.ready, a);
    // A copy: the walk's trail grows on, and the write must keep the trail these attempts go with.
    this.ledger.record(walk.task, pendingResult(a, walk.attempts, [...walk.trail]));
    walk.last = lastAfter(walk.last, a);
  }

  /** Queues the outcome of an answer with the dispatch's other outputs, and tells the listener. */
  private emit(p: DispatchProgress, ready: Output[], a: FanOutAnswer | ChannelAnswer): void {
    ready.push(outcomeOutput(p, a, this.config.clock.now(), this.options.outputs.outcomes));
    this.listener?.onAnswer?.(a.vendor ?? '', p.dispatch.app_id, a.status, a.code);
  }

  /** Records a task's final result in the ledger and keeps it in `recent`, forgetting the oldest over RECENT_LIMIT. */
  private conclude(task: TaskRow, result: TaskResult): void {
    this.ledger.record(task, result);
    this.recent.set(task.taskId, result);
    if (this.recent.size > RECENT_LIMIT) this.recent.delete(this.recent.keys().next().value!);
  }

  /**
   * A presence event (im.presence, co-partitioned by uid). Only a READ matters: it ends every
   * parked dispatch of the conversation up to its seq as SUPPRESSED read, and marks the
   * conversation for those waiting in place or in flight (they check before their next call).
   * Anything else costs one comparison.
   */
  private onPresence(event: PresenceEvent): void {
    if (event.kind !== 'READ' || event.conv_id === null || event.seq === null) return;
    const conversation = RetryingDispatches.conversation(event.uid, event.conv_id);
    for (const taskId of this.retrying.read(conversation, event.seq)) {
      const p = this.parked.take(taskId);
      if (!p) continue; // running: it sees the READ before its next call
      this.endParked(p, readAnswer(vendorAt(p), p.attempts));
    }
    this.running.drain();
  }

  /**
   * Ends a dispatch taken out of the parked store with its final answer (a READ, an eviction):
   * the task row goes to failed (3) with the answer in its trail, so a re-dispatch re-emits
   * exactly it. Its input offset was committed when it was first parked; the outcome and the
   * store's tombstone go out in the same commit.
   */
  private endParked(p: DispatchProgress, answer: ChannelAnswer): void {
    const ended = withFields(p, { trail: [...(p.trail ?? []), answer] });
    const outputs: Output[] = [];
    this.retrying.remove(p.dispatch.task_id);
    this.endWithTrail(new DispatchLifecycle(p.dispatch.task_id, 'parked'), ended, taskRowOf(p.dispatch), outputs);
    // Released in start order behind the dispatches in flight, like any other outcome; fused, once
    // the task's result is in MySQL (checkpointed ENDED meanwhile: a restart writes the row and emits it again).
    if (!this.config.fused) return this.running.addFinished(outputs);
    this.running.addWhen(p.dispatch.task_id, this.ledger.written(p.dispatch.task_id), outputs, () => this.parked.checkpoint(ended, ENDED));
  }

  /**
   * Ends a parked dispatch with the last answer of its trail (a READ, an eviction): the task row
   * goes to failed (3) with that trail, and the answer is emitted. A parked push ended now
   * (`endParked`), or one checkpointed ENDED (parked.ts) and resumed after a restart.
   */
  private endWithTrail(life: DispatchLifecycle, p: DispatchProgress, task: TaskRow, ready: Output[]): void {
    life.to('failed');
    const trail = p.trail ?? [];
    const final = trail.at(-1)!;
    this.conclude(task, failedResult(final.vendor, final.code, p.attempts, trail));
    this.emit(p, ready, final);
  }

  /**
   * Over the cap (`maxParked`), the oldest parked pushes (smallest decided_at: the least likely
   * to matter still, and the first to reach the maximum age anyway) end now (`evictedAnswer`).
   * Parking happens only where no other channel may be tried, so this is the task's final outcome.
   */
  private evictOverCap(): void {
    for (const p of this.parked.takeOverCap()) {
      const answer = evictedAnswer(p);
      this.endParked(p, answer);
      this.listener?.onEvicted?.(answer.vendor, p.dispatch.app_id);
    }
  }
}

/** What a task row records of a failed task (3): the last vendor and its code, and the trail that ends with its final answer. */
function failedResult(vendor: string, code: string, attempts: number, trail: readonly ChannelAnswer[]): TaskResult {
  return { status: TASK_STATUS.failed, vendor, vendorMessageId: null, failCode: code, attempts, trail };
}

/** What a task row records of a task still going on (0): its answers so far, the latest one's vendor and code. */
function pendingResult(latest: ChannelAnswer, attempts: number, trail: readonly ChannelAnswer[]): TaskResult {
  return { status: TASK_STATUS.pending, vendor: latest.vendor, vendorMessageId: null, failCode: latest.code, attempts, trail };
}
