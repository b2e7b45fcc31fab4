import { backoffDelay } from '../../common/retry.ts';
import { withStores, type Processor, type ProcessorContext, type ProcessorSupplier, type StreamRecord } from '../../topology/api.ts';
import { keyValueStore, timerStore, type KeyValueStore, type TimerStore } from '../../topology/stores.ts';
import { isUnknownOutcome, type SubmitOutcome, type Vendor } from './vendor-port.ts';
import type { PresenceEvent, PushDispatch, PushOutcome, TokenReport } from '../model/records.ts';
import type { HandOver } from '../model/inputs.ts';
import { TASK_STATUS, TaskStoreUnavailableError, type ChannelAnswer, type PushTaskLedger } from './ledger.ts';
import { fanOutConfig, type FanOutConfig, type FanOutListener, type FanOutOptions } from './options.ts';
import { ENDED, IN_FLIGHT, ParkedDispatches, parkedStoreSerde, type DispatchProgress, type ParkedValue } from './parked.ts';
import { ACCEPTED_DISCRIMINATOR, isExpired, pushMessage, taskRowOf, type FanOutReason } from './records.ts';
import { CAMPAIGN_CANCELLED, CancelledCampaigns, cancelledAnswer, isWithdrawn } from './cancelled.ts';
import { DispatchesInFlight, type Output } from './release-queue.ts';
import { RetryingDispatches } from './retrying.ts';
import { SubmitPaths } from './submit-paths.ts';
import { FAILURE_REASON, readAnswer, TaskAnswers, UNREACHED_CODES } from './answers.ts';
import { progressOf, type ChannelAt, type Next, type Walk } from './walk.ts';
import { withFields } from '../../common/objects.ts';

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

/**
 * The fan-out's input, tagged in the wiring (processors/model/inputs.ts): a dispatch, or an
 * im.presence event (only READs matter here).
 */
export type FanOutInput = HandOver<'dispatch', PushDispatch> | HandOver<'presence', PresenceEvent>;
type Out = PushOutcome | TokenReport;

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
 * The fan-out processor of one task. Per dispatch: claim the task in im_push_task (status 0; a task
 * no longer pending is not submitted again, its stored verdict is re-emitted; one still pending goes
 * on after the answers its row recorded, each written as it came), then try the device's
 * channels in order through each (vendor, app)'s gate: accepted → 1; dead token → invalidate, next
 * channel, never retried; 429 → pause the vendor (Retry-After) and move to the next channel, else
 * retry after the pause; quota → next channel, never retried; 5xx → bounded retries with jitter;
 * payload / permanent / auth → next channel. All channels failed → 3. Short backoffs are waited in
 * place; longer ones park the dispatch in a changelogged store, resumed by a wall-clock punctuator,
 * so a commit never waits out a long Retry-After; over its cap the oldest parked push ends FAILED
 * parked_evicted (`evictOverCap`). A READ from im.presence ends the conversation's dispatches waiting
 * to retry (`onPresence`). Results are forwarded from `process`, punctuations and the flushes, in the
 * order the dispatches started; a periodic commit does not wait for dispatches in flight (their input
 * offsets stay out of it: `deferCompletion`; fused, they are held: `flushFinished`), `flush` does.
 */
export class FanOutProcessor implements Processor<string, FanOutInput, string, Out> {
  private ctx!: ProcessorContext<string, Out>;
  private parked!: ParkedDispatches;
  private running!: DispatchesInFlight;
  private readonly retrying = new RetryingDispatches();
  private readonly ledger: PushTaskLedger;
  private readonly answers: TaskAnswers;
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
    this.answers = new TaskAnswers(options.ledger, options.outputs, config.clock, options.listener);
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
   * for them and holds those still running in the parked store (`hold`).
   */
  async flushFinished(): Promise<void> {
    if (this.config.fused) {
      // What goes out now has its task's result in MySQL already (`start`): nothing to flush.
      await this.running.settleOrHold(this.config.commitWaitMs, (ms) => this.config.clock.sleep(ms));
      this.parked.writeHeld();
      this.reportParked();
      return;
    }
    await this.running.settle(false);
    this.reportParked();
    await this.ledger.flush();
  }

  async flush(): Promise<void> {
    await this.running.settle(true);
    this.parked.writeHeld();
    this.reportParked();
    await this.ledger.flush();
  }

  async close(): Promise<void> {
    await this.running.close();
    this.listener?.onParked?.(this.ctx.taskId, 0);
  }

  /** A dispatch from push.dispatch: started now (its input offset held until it is released), then back pressure. */
  private async onDispatch(record: StreamRecord<string, FanOutInput>, d: PushDispatch): Promise<void> {
    this.listener?.onDispatchReceived?.(d);
    if (this.options.cancellationsRead) await this.options.cancellationsRead; // the business lane: every earlier cancellation known first
    this.running.drain();
    const replayed = record.headers?.[REPLAY_HEADER] !== undefined;
    if (replayed) this.answers.forget(d.task_id);
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
   * Starts a dispatch: fresh (a record, whose input offset it holds; `replayed` when an operator
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
      fresh ? this.ctx.deferCompletion() : undefined,
      async (outputs) => {
        await this.run(p, fresh, replayed, outputs, live);
        await this.ledger.written(taskId);
      },
      () => {
        if (!this.parked.has(taskId)) this.retrying.remove(taskId);
      },
      () => this.parked.hold(live.walk ? progressOf(live.walk, live.walk.channel, live.walk.call, IN_FLIGHT) : p),
    );
  }

  /**
   * Takes a dispatch as far as it goes now: claimed (when fresh, or held when a process stopped),
   * then over its channels until it ends or parks. A task claimed before and still pending is taken
   * over: it resumes after the answers its row recorded, and its first call is a re-send (the
   * earlier owner's call may have reached the vendor; docs/design.md, "Takeover"). `live.walk`
   * shows where it is.
   */
  private async run(start: DispatchProgress, fresh: boolean, replayed: boolean, ready: Output[], live: { walk?: Walk }): Promise<void> {
    let p = start;
    let resending = false;
    const d = p.dispatch;
    const task = taskRowOf(d);
    if (p.waitingOn === ENDED) return this.answers.end(p, task, ready);
    if (isExpired(d, this.config.clock.now()))
      return this.answers.emit(p, ready, { status: 'DROPPED', vendor: null, reason: 'expired', code: null, attempts: 0, discriminator: 'expired' });
    if (fresh || p.waitingOn === STORE_UNAVAILABLE || p.waitingOn === IN_FLIGHT) {
      if (d.channels.length === 0)
        return this.answers.emit(p, ready, { status: 'DROPPED', vendor: null, reason: 'no_token', code: null, attempts: 0, discriminator: 'no_token' });
      if (fresh && this.parked.has(d.task_id)) return; // already waiting out a backoff: that one finishes it
      const known = await this.answers.claim(d, task).catch((error: unknown) => {
        if (error instanceof TaskStoreUnavailableError) return undefined;
        throw error;
      });
      // The user's shard is down: park unclaimed (the input offset commits with the parked entry) and claim again later.
      if (known === undefined) return this.parked.park(withFields(p, { waitingOn: STORE_UNAVAILABLE }), this.ctx.wallClockTimeMs() + STORE_WAIT_MS);
      if (known.status !== TASK_STATUS.pending) return this.answers.replay(p, known, ready);
      p = this.answers.resume(p, known, ready);
      resending = (known.claims ?? 1) > 1 && !replayed;
    }
    const walk: Walk = {
      progress: p,
      dispatch: d,
      task,
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
    if (!fresh && this.retrying.isRead(walk.conversation, d.seq)) return this.endRead(walk, d.channels[p.channel]?.vendor ?? p.last.vendor);
    if (this.cancelled?.isCancelled(d)) return this.endCancelled(walk, d.channels[p.channel]?.vendor ?? p.last.vendor);
    for (let ci = p.channel; ci < d.channels.length; ci++) {
      const next = await this.submitOnChannel(walk, ci);
      if (next === 'done') return;
      if (next === 'no-other-channel') break;
    }
    this.endAllChannelsFailed(walk);
  }

  /**
   * Calls channel `ci` until the vendor accepts, the channel is given up, or the dispatch parks. A
   * channel without adapter, or whose payload is over the vendor's limit, fails without a call.
   */
  private async submitOnChannel(walk: Walk, ci: number): Promise<Next> {
    const d = walk.dispatch;
    const channel = d.channels[ci]!;
    const vendor = channel.vendor as Vendor;
    const path = this.paths.get(vendor, d.app_id);
    if (!path) {
      this.failChannel(walk, ci, vendor, 'FAILED', 'no_adapter', 'NO_ADAPTER');
      return 'next-channel';
    }
    const adapter = this.options.vendors.adapter(vendor, d.app_id)!;
    const message = pushMessage(d, channel.token, channel.classification, this.config.ttlSeconds);
    if (adapter.payloadBytes(message) > adapter.maxPayloadBytes) {
      this.failChannel(walk, ci, vendor, 'FAILED', 'payload_too_large', 'PAYLOAD_TOO_LARGE');
      return 'next-channel';
    }
    const at: ChannelAt = { index: ci, vendor, token: channel.token, hasNext: ci < d.channels.length - 1, path };
    this.cancelled?.follow(message, d);
    for (let call = ci === walk.progress.channel ? walk.progress.call : 1; ; call++) {
      const paused = path.gate.pausedUntil - this.config.clock.now();
      if (paused > this.config.inlineBackoffMaxMs) return this.onVendorPaused(walk, at, call, paused);
      walk.channel = ci;
      walk.call = call;
      // Every earlier answer of the task is on its row before the next call (recorded as it came:
      // emitChannel). A walk with no answer yet has nothing to wait for: no await on a push's first call.
      if (walk.trail.length > 0) await this.ledger.written(d.task_id);
      if (walk.resending) {
        walk.resending = false;
        this.listener?.onTakeoverResend?.(vendor, d.app_id);
      }
      const outcome: SubmitOutcome = await path.batcher.submit(message);
      if (isWithdrawn(outcome)) {
        this.endCancelled(walk, vendor);
        return 'done';
      }
      walk.attempts++;
      const next = await this.classify(walk, at, call, outcome);
      if (next !== 'call-again') return next;
    }
  }

  /**
   * The vendor is paused for this app (an earlier 429) for longer than we wait in place: move on to
   * the next channel (THROTTLED), or park until the pause ends. No call is made.
   */
  private onVendorPaused(walk: Walk, at: ChannelAt, call: number, pausedMs: number): Next {
    if (!at.hasNext) {
      this.park(walk, at.index, call, pausedMs, 'VENDOR_PAUSED');
      return 'done';
    }
    const { index: ci, vendor } = at;
    this.emitChannel(walk, {
      channel: ci,
      status: 'THROTTLED',
      vendor,
      reason: 'rate_limited',
      code: 'VENDOR_PAUSED',
      attempts: walk.attempts,
      discriminator: `${ci}:${vendor}:paused`,
    });
    walk.last = { vendor, code: 'VENDOR_PAUSED', quotaOnly: false, throttled: true };
    return 'next-channel';
  }

  /** What the vendor's answer to call `call` decides. */
  private async classify(walk: Walk, at: ChannelAt, call: number, outcome: SubmitOutcome): Promise<Next> {
    const now = this.config.clock.now();
    switch (outcome.kind) {
      case 'accepted':
        this.accept(walk, at, outcome.vendorMessageId);
        return 'done';
      case 'dead-token':
        this.onDeadToken(walk, at, outcome.code, now);
        return 'next-channel';
      case 'rate-limited':
      case 'quota-exhausted':
        return this.onThrottled(walk, at, call, outcome, now);
      case 'retryable':
        return this.onRetryable(walk, at, call, outcome, now);
      default:
        this.failChannel(walk, at.index, at.vendor, 'FAILED', FAILURE_REASON[outcome.kind], outcome.code);
        return 'next-channel';
    }
  }

  /** Accepted: the task is submitted (1), recorded in the ledger, and its ACCEPTED outcome emitted. */
  private accept(walk: Walk, at: ChannelAt, vendorMessageId: string): void {
    const answer = {
      status: 'ACCEPTED',
      vendor: at.vendor,
      reason: null,
      code: null,
      vendorMessageId,
      attempts: walk.attempts,
      discriminator: ACCEPTED_DISCRIMINATOR,
    } as const;
    this.answers.accepted(walk.progress, walk.ready, walk.task, answer, walk.trail);
  }

  /** A dead token: the channel fails, never retried, and the token is reported invalid (push.tokens). */
  private onDeadToken(walk: Walk, at: ChannelAt, code: string, now: number): void {
    this.failChannel(walk, at.index, at.vendor, 'DEAD_TOKEN', 'dead_token', code);
    this.answers.deadToken(walk.progress, walk.ready, at.vendor, at.token, now);
  }

  /**
   * A 429 or an exhausted quota. A 429 (unless it names the token only) pauses the (vendor, app)
   * for every task, for its Retry-After or the default. Quota moves to the next channel, never
   * retried; a 429 does too when another channel is left, else it is called again after the pause,
   * up to `maxThrottledAttempts` calls.
   */
  private async onThrottled(
    walk: Walk,
    at: ChannelAt,
    call: number,
    outcome: Extract<SubmitOutcome, { kind: 'rate-limited' | 'quota-exhausted' }>,
    now: number,
  ): Promise<Next> {
    const { index: ci, vendor } = at;
    const quota = outcome.kind === 'quota-exhausted';
    const hint = outcome.kind === 'rate-limited' ? outcome.retryAfterMs : undefined;
    const perToken = outcome.kind === 'rate-limited' && outcome.perToken === true;
    if (!quota && !perToken) at.path.gate.pause(now + (hint ?? this.config.defaultThrottleMs));
    this.emitChannel(walk, {
      channel: ci,
      status: 'THROTTLED',
      vendor,
      reason: quota ? 'quota' : 'rate_limited',
      code: outcome.code,
      attempts: walk.attempts,
      discriminator: `${ci}:${vendor}:throttled:${call}`,
    });
    walk.last = { vendor, code: outcome.code, quotaOnly: quota && walk.last.quotaOnly, throttled: !quota };
    if (quota || at.hasNext || call >= this.config.maxThrottledAttempts) return 'next-channel';
    const wait = Math.max(hint ?? this.config.defaultThrottleMs, backoffDelay(call, this.config.backoffInitialMs, this.config.backoffMaxMs));
    return (await this.backOff(walk, ci, call, wait, outcome.code)) ? 'done' : 'call-again';
  }

  /**
   * A retryable answer. Written but unanswered (ANSWER_LOST): the vendor may have it. Another
   * channel could show the user a second notification, so only this channel is tried again (the
   * collapse id makes a resend harmless). A known failure (5xx, refused connection) gets the retry
   * budget, then the next channel; on the last channel it is retried, parked between calls, for as
   * long as the push is worth sending (docs/design.md, "fan-out"). A READ of the conversation
   * during the wait ends it.
   */
  private async onRetryable(walk: Walk, at: ChannelAt, call: number, outcome: Extract<SubmitOutcome, { kind: 'retryable' }>, now: number): Promise<Next> {
    const d = walk.dispatch;
    const unknown = isUnknownOutcome(outcome);
    const young = now - d.decided_at < this.config.retryMaxAgeMs;
    if (call < this.config.maxRetryableAttempts || (young && (unknown || !at.hasNext))) {
      this.retrying.add(walk.conversation, d.task_id, d.seq);
      const wait = Math.max(outcome.retryAfterMs ?? 0, backoffDelay(call, this.config.backoffInitialMs, this.config.backoffMaxMs));
      if (await this.backOff(walk, at.index, call, wait, outcome.code)) return 'done';
      if (this.retrying.isRead(walk.conversation, d.seq)) {
        this.endRead(walk, at.vendor);
        return 'done';
      }
      return 'call-again';
    }
    const unreached = UNREACHED_CODES.has(outcome.code);
    const expired = this.config.retryMaxAgeMs > 0 && !young && (unknown || !at.hasNext);
    this.failChannel(walk, at.index, at.vendor, 'FAILED', unreached ? 'vendor_unreachable' : expired ? 'max_age_exceeded' : 'retries_exhausted', outcome.code);
    return unknown ? 'no-other-channel' : 'next-channel'; // the vendor may have it: no other channel
  }

  /** Waits `ms` before the next call: in place if short, else parked (returns true: the walk stops here). */
  private async backOff(walk: Walk, ci: number, call: number, ms: number, code: string): Promise<boolean> {
    if (ms <= this.config.inlineBackoffMaxMs) {
      await this.config.clock.sleep(ms);
      return false;
    }
    this.park(walk, ci, call + 1, ms, code);
    return true;
  }

  /** Parks the dispatch until call `call` on channel `ci`, waiting out the answer `code`; over the cap, the oldest parked push ends. */
  private park(walk: Walk, ci: number, call: number, ms: number, code: string): void {
    const d = walk.dispatch;
    this.parked.park(progressOf(walk, ci, call, code), this.ctx.wallClockTimeMs() + ms);
    this.retrying.add(walk.conversation, d.task_id, d.seq);
    this.evictOverCap();
  }

  /** Channel `ci` is given up (FAILED or DEAD_TOKEN); the walk goes on with the next channel, if any. */
  private failChannel(walk: Walk, ci: number, vendor: string, status: 'FAILED' | 'DEAD_TOKEN', reason: FanOutReason, code: string): void {
    this.emitChannel(walk, { channel: ci, status, vendor, reason, code, attempts: walk.attempts, discriminator: `${ci}:${vendor}:${status}` });
    walk.last = { vendor, code, quotaOnly: false, throttled: false };
  }

  /** Every channel failed: the task is final (3). Quota on every channel is a drop, never retried. */
  private endAllChannelsFailed(walk: Walk): void {
    const { last, attempts } = walk;
    if (last.quotaOnly)
      this.emitChannel(walk, { channel: -1, status: 'DROPPED', vendor: last.vendor, reason: 'quota', code: last.code, attempts, discriminator: 'quota' });
    else if (last.throttled)
      this.emitChannel(walk, { channel: -1, status: 'FAILED', vendor: last.vendor, reason: 'rate_limited', code: last.code, attempts, discriminator: 'final' });
    this.answers.failed(walk.task, walk.dispatch.task_id, last.vendor, last.code, attempts, walk.trail);
  }

  /** The conversation was read while this dispatch waited to retry: it ends here, unsent. */
  private endRead(walk: Walk, vendor: string): void {
    this.emitChannel(walk, readAnswer(vendor, walk.attempts));
    this.answers.failed(walk.task, walk.dispatch.task_id, vendor, 'READ', walk.attempts, walk.trail);
  }

  /** The dispatch's campaign was cancelled (cancelled.ts): it ends here, unsent, its task failed (3) with the cancellation in its trail. */
  private endCancelled(walk: Walk, vendor: string): void {
    this.emitChannel(walk, cancelledAnswer(vendor, walk.attempts));
    this.answers.failed(walk.task, walk.dispatch.task_id, vendor, CAMPAIGN_CANCELLED.code, walk.attempts, walk.trail);
  }

  /**
   * An answer of the task other than ACCEPTED: kept in the walk's trail, which a replay re-emits,
   * emitted, and recorded on the task's row at once (pending, until a final result replaces it).
   */
  private emitChannel(walk: Walk, a: ChannelAnswer): void {
    this.answers.channel(walk.progress, walk.ready, walk.trail, a);
    this.answers.progress(walk.task, a, walk.attempts, walk.trail);
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
      this.endParked(p, readAnswer(p.dispatch.channels[p.channel]?.vendor ?? p.last.vendor, p.attempts));
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
    this.answers.end(ended, taskRowOf(p.dispatch), outputs);
    // Released in start order behind the dispatches in flight, like any other outcome; fused, once
    // the task's result is in MySQL (held ENDED meanwhile: a restart writes the row and emits it again).
    if (!this.config.fused) return this.running.addFinished(outputs);
    this.running.addWhen(p.dispatch.task_id, this.ledger.written(p.dispatch.task_id), outputs, () => this.parked.hold(ended, ENDED));
  }

  /**
   * Over the cap (`maxParked`), the oldest parked pushes (smallest decided_at: the least likely
   * to matter still, and the first to reach the maximum age anyway) end now, FAILED on the channel
   * they waited on with the vendor's last code: reason `parked_evicted`, or `vendor_unreachable`
   * when that last call never reached the vendor (not a submission, as for the maximum age).
   * Parking happens only where no other channel may be tried, so this is the task's final outcome.
   */
  private evictOverCap(): void {
    for (const p of this.parked.takeOverCap()) {
      const vendor = p.dispatch.channels[p.channel]?.vendor ?? p.last.vendor;
      const code = p.waitingOn ?? 'PARKED_EVICTED';
      const reason: FanOutReason = UNREACHED_CODES.has(code) ? 'vendor_unreachable' : 'parked_evicted';
      this.endParked(p, { channel: p.channel, status: 'FAILED', vendor, reason, code, attempts: p.attempts, discriminator: `${p.channel}:${vendor}:FAILED` });
      this.listener?.onEvicted?.(vendor, p.dispatch.app_id);
    }
  }
}
