import { backoffDelay } from '../../common/retry.ts';
import { withStores, type Processor, type ProcessorContext, type ProcessorSupplier, type StreamRecord } from '../../topology/api.ts';
import { keyValueStore, timerStore, type KeyValueStore, type TimerStore } from '../../topology/stores.ts';
import { VENDORS, isUnknownOutcome, type SubmitOutcome, type Vendor } from './vendor-port.ts';
import type { PresenceEvent, PushDispatch, PushOutcome, TokenReport } from '../shared/records.ts';
import { SubmitBatcher } from './batcher.ts';
import { TASK_STATUS, type ChannelAnswer, type StoredTask } from './ledger.ts';
import { fanOutConfig, type FanOutOptions } from './options.ts';
import { ParkedDispatches, parkedStoreSerde, type DispatchProgress, type ParkedValue } from './parked.ts';
import {
  ACCEPTED_DISCRIMINATOR,
  deadTokenReport,
  fanOutOutcome,
  pushMessage,
  replayedAnswer,
  taskRowOf,
  type FanOutAnswer,
  type FanOutReason,
} from './records.ts';
import { RetryingDispatches } from './retrying.ts';
import { VendorGate } from './vendor-gate.ts';

type Output = { child: string; record: StreamRecord<string, PushOutcome | TokenReport> };

/** One dispatch on its way: its outputs, released in start order once it has finished. */
interface Job {
  readonly outputs: Output[];
  finished: boolean;
  /** What stopped this dispatch (not a vendor answer: a record MySQL refuses, a bug); set when finished. */
  error?: unknown;
  /**
   * Lets the record's input offset into commits (a no-op for a dispatch resumed from the parked
   * store); with an error, the runtime sends that record — not a later one — to the DLQ.
   */
  readonly done: (error?: unknown) => void;
}

/** Stores of the fan-out: dispatches waiting out a long backoff, and when each is due. */
export const FAN_OUT_STORES = { parked: 'fan-out-parked', retryTimers: 'fan-out-retry-timers' } as const;

export type { DispatchProgress, ParkedValue } from './parked.ts';

/** Tasks this instance finished recently: a second dispatch of one is answered without asking MySQL. */
const RECENT_LIMIT = 100_000;

/**
 * Header of a dispatch an operator re-submits (`pushctl replay`, after setting the task back to
 * pending): the task's stored state is read from MySQL again instead of the recent-task cache.
 */
export const REPLAY_HEADER = 'push-replay';

/** Retryable codes of calls the vendor never processed; a push that ends on one was not submitted. */
const UNREACHED_CODES = new Set(['CONNECTION_LOST']);

const FAILURE_REASON: Readonly<Record<'payload-too-large' | 'payload-rejected' | 'permanent' | 'unknown-code' | 'auth-failed', FanOutReason>> = {
  'payload-too-large': 'payload_too_large',
  'payload-rejected': 'payload_rejected',
  permanent: 'permanent',
  'unknown-code': 'unknown_code',
  'auth-failed': 'auth_failed',
};

/**
 * The fan-out stage (docs/design.md §2.4): push.dispatch → vendor submissions → push.outcomes (+ token
 * invalidations to push.tokens). Per dispatch: claim the task in im_push_task (status 0; a task no
 * longer pending is not submitted again, its stored verdict is re-emitted), then try the device's
 * channels in order through each (vendor, app)'s gate: accepted → 1; dead token → invalidate, next
 * channel, never retried; 429 → pause the vendor (Retry-After) and move to the next channel, else
 * retry after the pause; quota → next channel, never retried; 5xx → bounded retries with jitter;
 * payload / permanent / auth → next channel. All channels failed → 3. Short backoffs are waited in
 * place; longer ones park the dispatch in a changelogged store, resumed by a wall-clock punctuator,
 * so a commit never waits out a long Retry-After; over its cap the oldest parked push ends FAILED
 * parked_evicted (`evictOverCap`). Results are forwarded from `process`,
 * punctuations and the flushes, in the order the dispatches started; a periodic commit does not wait
 * for dispatches in flight (their input offsets stay out of it: `deferCompletion`), `flush` does.
 */
export function fanOut(options: FanOutOptions): ProcessorSupplier<string, PushDispatch | PresenceEvent, string, PushOutcome | TokenReport> {
  const config = fanOutConfig(options);
  const { ledger, vendors, outputs } = options;
  // Gates and batchers are per (vendor, app) and shared by every task of this process, so a 429
  // seen by one partition's task pauses that vendor for all of them.
  const batchers = new Map<string, { batcher: SubmitBatcher; gate: VendorGate }>();
  const channelOf = (vendor: Vendor, appId: string) => {
    const key = `${vendor}/${appId}`;
    let entry = batchers.get(key);
    if (entry) return entry;
    const adapter = vendors.adapter(vendor, appId);
    if (!adapter) return undefined;
    const limits = vendors.limits(vendor, appId) ?? config.defaultLimits;
    const gate = new VendorGate(limits.ratePerSecond, limits.concurrency, config.clock);
    entry = { batcher: new SubmitBatcher(adapter, gate), gate };
    batchers.set(key, entry);
    return entry;
  };

  const processor = (): Processor<string, PushDispatch | PresenceEvent, string, PushOutcome | TokenReport> => {
    let ctx: ProcessorContext<string, PushOutcome | TokenReport>;
    let parked: ParkedDispatches;
    // Dispatches in the order they started; each releases its outputs (and, for a record, its
    // input offset) only once it and every earlier one have finished, so a commit never carries
    // the outcome of a dispatch whose input offset it does not also commit (see deferCompletion).
    let jobs: Job[] = [];
    let failure: unknown;
    const inFlight = new Set<Promise<void>>();
    /** Dispatches resumed from the parked store: a commit waits for them (their parked entry is gone). */
    const resumed = new Set<Promise<void>>();
    const activeTasks = new Map<string, Promise<void>>();
    const recent = new Map<string, StoredTask>();
    const retrying = new RetryingDispatches();

    const drain = () => {
      let released = 0;
      while (released < jobs.length && jobs[released]!.finished) {
        const job = jobs[released++]!;
        // A failed dispatch forwards nothing: its record goes to the DLQ as a whole.
        if (job.error === undefined) for (const o of job.outputs) ctx.forward(o.record, o.child);
        job.done(job.error);
      }
      if (released > 0) jobs = jobs.slice(released);
    };

    const finish = (taskId: string, stored: StoredTask) => {
      recent.set(taskId, stored);
      if (recent.size > RECENT_LIMIT) recent.delete(recent.keys().next().value!);
    };

    /**
     * A task already final (a replayed or re-delivered dispatch): every answer it gave, from the
     * row, with the same event ids, and the invalidation of each dead token again. So a crash
     * between the vendor's answers and the commit of their outcomes loses none of them.
     */
    function replay(p: DispatchProgress, known: StoredTask, ready: Output[]): void {
      const d = p.dispatch;
      const now = config.clock.now();
      for (const a of known.trail) {
        ready.push({
          child: outputs.outcomes,
          record: { key: p.key, value: fanOutOutcome(d, { ...a, reason: a.reason as FanOutReason }, now), timestamp: p.timestamp },
        });
        const token = d.channels[a.channel]?.token;
        if (a.status === 'DEAD_TOKEN' && token !== undefined)
          ready.push({ child: outputs.tokens, record: { key: p.key, value: deadTokenReport(d, a.vendor, token, now), timestamp: p.timestamp } });
      }
      // A failed task's trail holds every outcome it had, its final one included: nothing else is
      // emitted (a made-up "duplicate" outcome would be counted as a second ending). Rows without a
      // trail (written before trails existed) re-emit their stored verdict.
      if (known.status === TASK_STATUS.failed && known.trail.length > 0) return;
      const a = replayedAnswer(known);
      ready.push({ child: outputs.outcomes, record: { key: p.key, value: fanOutOutcome(d, a, now), timestamp: p.timestamp } });
      options.listener?.onAnswer?.(a.vendor ?? '', d.app_id, a.status, a.code);
    }

    /** Ends a task as failed (3); its trail, which a replay re-emits, already holds its final outcome. */
    function endFailed(
      task: ReturnType<typeof taskRowOf>,
      taskId: string,
      vendor: string,
      code: string,
      attempts: number,
      trail: readonly ChannelAnswer[],
    ): void {
      const result = { status: TASK_STATUS.failed, vendor, vendorMessageId: null, failCode: code, attempts, trail } as const;
      ledger.record(task, result);
      finish(taskId, result);
    }

    /** The outcome of a retrying dispatch whose conversation was read: SUPPRESSED read, final. */
    const readAnswer = (vendor: string, attempts: number): ChannelAnswer => ({
      channel: -1,
      status: 'SUPPRESSED',
      vendor,
      reason: 'read',
      code: 'READ',
      attempts,
      discriminator: 'read',
    });

    async function run(p: DispatchProgress, fresh: boolean, ready: Output[]): Promise<void> {
      const d = p.dispatch;
      const emit = (a: FanOutAnswer) => {
        ready.push({ child: outputs.outcomes, record: { key: p.key, value: fanOutOutcome(d, a, config.clock.now()), timestamp: p.timestamp } });
        options.listener?.onAnswer?.(a.vendor ?? '', d.app_id, a.status, a.code);
      };
      const task = taskRowOf(d);
      if (fresh) {
        if (d.channels.length === 0) return emit({ status: 'DROPPED', vendor: null, reason: 'no_token', code: null, attempts: 0, discriminator: 'no_token' });
        if (parked.has(d.task_id)) return; // already waiting out a backoff: that one finishes it
        const claimStarted = config.clock.now();
        const known = recent.get(d.task_id) ?? (await ledger.claim(task));
        options.listener?.onClaimed?.(d, config.clock.now() - claimStarted);
        if (known.status !== TASK_STATUS.pending) return replay(p, known, ready);
      }
      let { attempts, last } = p;
      const trail: ChannelAnswer[] = [...(p.trail ?? [])];
      /** An answer of the task (all but ACCEPTED): kept in the trail, which a replay re-emits. */
      const emitChannel = (a: ChannelAnswer) => {
        trail.push(a);
        emit({ ...a, reason: a.reason as FanOutReason });
      };
      const conversation = RetryingDispatches.conversation(d.uid, d.conv_id);
      /** The conversation was read while this dispatch waited to retry: it ends here, unsent. */
      const endRead = (vendor: string) => {
        emitChannel(readAnswer(vendor, attempts));
        endFailed(task, d.task_id, vendor, 'READ', attempts, trail);
      };
      if (!fresh && retrying.isRead(conversation, d.seq)) return endRead(d.channels[p.channel]?.vendor ?? last.vendor);
      channels: for (let ci = p.channel; ci < d.channels.length; ci++) {
        const channel = d.channels[ci]!;
        const vendor = channel.vendor as Vendor;
        const hasNext = ci < d.channels.length - 1;
        const entry = (VENDORS as readonly string[]).includes(vendor) ? channelOf(vendor, d.app_id) : undefined;
        const fail = (status: 'FAILED' | 'DEAD_TOKEN', reason: FanOutReason, code: string) => {
          emitChannel({ channel: ci, status, vendor, reason, code, attempts, discriminator: `${ci}:${vendor}:${status}` });
          last = { vendor, code, quotaOnly: false, throttled: false };
        };
        if (!entry) {
          fail('FAILED', 'no_adapter', 'NO_ADAPTER');
          continue;
        }
        const adapter = vendors.adapter(vendor, d.app_id)!;
        const message = pushMessage(d, channel.token, channel.classification, config.ttlSeconds);
        if (adapter.payloadBytes(message) > adapter.maxPayloadBytes) {
          fail('FAILED', 'payload_too_large', 'PAYLOAD_TOO_LARGE');
          continue;
        }
        /** Parks the dispatch until its next call, waiting out the answer `code`; over the cap, the oldest parked push ends. */
        const park = (call: number, ms: number, code: string) => {
          parked.park({ ...p, channel: ci, call, attempts, last, trail, waitingOn: code }, ctx.wallClockTimeMs() + ms);
          retrying.add(conversation, d.task_id, d.seq);
          evictOverCap();
        };
        for (let call = ci === p.channel ? p.call : 1; ; call++) {
          // The vendor is paused for this app (an earlier 429) for longer than we wait in place:
          // move on to the next channel, or park until the pause ends. No call is made.
          const paused = entry.gate.pausedUntil - config.clock.now();
          if (paused > config.inlineBackoffMaxMs) {
            if (hasNext) {
              emitChannel({
                channel: ci,
                status: 'THROTTLED',
                vendor,
                reason: 'rate_limited',
                code: 'VENDOR_PAUSED',
                attempts,
                discriminator: `${ci}:${vendor}:paused`,
              });
              last = { vendor, code: 'VENDOR_PAUSED', quotaOnly: false, throttled: true };
              break;
            }
            return park(call, paused, 'VENDOR_PAUSED');
          }
          attempts++;
          const outcome: SubmitOutcome = await entry.batcher.submit(message);
          const now = config.clock.now();
          /** Waits `ms` before the next call: in place if short, else parked (returns true: stop here). */
          const backOff = async (ms: number, code: string): Promise<boolean> => {
            if (ms <= config.inlineBackoffMaxMs) {
              await config.clock.sleep(ms);
              return false;
            }
            park(call + 1, ms, code);
            return true;
          };
          if (outcome.kind === 'accepted') {
            const result = { status: TASK_STATUS.submitted, vendor, vendorMessageId: outcome.vendorMessageId, failCode: null, attempts, trail } as const;
            ledger.record(task, result);
            finish(d.task_id, result);
            return emit({
              status: 'ACCEPTED',
              vendor,
              reason: null,
              code: null,
              vendorMessageId: outcome.vendorMessageId,
              attempts,
              discriminator: ACCEPTED_DISCRIMINATOR,
            });
          }
          if (outcome.kind === 'dead-token') {
            fail('DEAD_TOKEN', 'dead_token', outcome.code);
            ready.push({ child: outputs.tokens, record: { key: p.key, value: deadTokenReport(d, vendor, channel.token, now), timestamp: p.timestamp } });
            break;
          }
          if (outcome.kind === 'rate-limited' || outcome.kind === 'quota-exhausted') {
            const quota = outcome.kind === 'quota-exhausted';
            const hint = outcome.kind === 'rate-limited' ? outcome.retryAfterMs : undefined;
            const perToken = outcome.kind === 'rate-limited' && outcome.perToken === true;
            if (!quota && !perToken) entry.gate.pause(now + (hint ?? config.defaultThrottleMs));
            emitChannel({
              channel: ci,
              status: 'THROTTLED',
              vendor,
              reason: quota ? 'quota' : 'rate_limited',
              code: outcome.code,
              attempts,
              discriminator: `${ci}:${vendor}:throttled:${call}`,
            });
            last = { vendor, code: outcome.code, quotaOnly: quota && last.quotaOnly, throttled: !quota };
            if (quota || hasNext || call >= config.maxThrottledAttempts) break;
            if (await backOff(Math.max(hint ?? config.defaultThrottleMs, backoffDelay(call, config.backoffInitialMs, config.backoffMaxMs)), outcome.code))
              return;
            continue;
          }
          if (outcome.kind === 'retryable') {
            // Written but unanswered (ANSWER_LOST): the vendor may have it. Another channel could
            // show the user a second notification, so only this channel is tried again (the
            // collapse id makes a resend harmless). A known failure (5xx, refused connection) gets
            // the retry budget, then the next channel; on the last channel it is retried, parked
            // between calls, for as long as the push is worth sending (docs/design.md §2.4).
            const unknown = isUnknownOutcome(outcome);
            const young = now - d.decided_at < config.retryMaxAgeMs;
            if (call < config.maxRetryableAttempts || (young && (unknown || !hasNext))) {
              retrying.add(conversation, d.task_id, d.seq);
              if (await backOff(Math.max(outcome.retryAfterMs ?? 0, backoffDelay(call, config.backoffInitialMs, config.backoffMaxMs)), outcome.code)) return;
              if (retrying.isRead(conversation, d.seq)) return endRead(vendor);
              continue;
            }
            const unreached = UNREACHED_CODES.has(outcome.code);
            const expired = config.retryMaxAgeMs > 0 && !young && (unknown || !hasNext);
            fail('FAILED', unreached ? 'vendor_unreachable' : expired ? 'max_age_exceeded' : 'retries_exhausted', outcome.code);
            if (unknown) break channels; // the vendor may have it: no other channel
            break;
          }
          fail('FAILED', FAILURE_REASON[outcome.kind], outcome.code);
          break;
        }
      }
      // Every channel failed: the task is final (3). Quota on every channel is a drop, never retried.
      if (last.quotaOnly)
        emitChannel({ channel: -1, status: 'DROPPED', vendor: last.vendor, reason: 'quota', code: last.code, attempts, discriminator: 'quota' });
      else if (last.throttled)
        emitChannel({ channel: -1, status: 'FAILED', vendor: last.vendor, reason: 'rate_limited', code: last.code, attempts, discriminator: 'final' });
      endFailed(task, d.task_id, last.vendor, last.code, attempts, trail);
    }

    const start = (p: DispatchProgress, fresh: boolean) => {
      const taskId = p.dispatch.task_id;
      const entry: Job = { outputs: [], finished: false, done: fresh ? ctx.deferCompletion() : () => undefined };
      jobs.push(entry);
      // The same task twice in flight (a replayed record): the second waits for the first's verdict.
      const previous = activeTasks.get(taskId) ?? Promise.resolve();
      const job = previous
        .then(() => run(p, fresh, entry.outputs))
        .catch((error: unknown) => {
          // The error belongs to this dispatch: released with it, in start order (drain). A
          // resumed dispatch has no input record to dead-letter; its failure fails the task.
          if (fresh) entry.error = error;
          else failure ??= error;
        })
        .finally(() => {
          if (!parked.has(taskId)) retrying.remove(taskId);
          entry.finished = true;
          inFlight.delete(job);
          resumed.delete(job);
          if (activeTasks.get(taskId) === job) activeTasks.delete(taskId);
        });
      activeTasks.set(taskId, job);
      inFlight.add(job);
      if (!fresh) resumed.add(job);
    };

    const rethrow = () => {
      if (failure !== undefined) {
        const error = failure;
        failure = undefined;
        throw error;
      }
    };

    /**
     * A presence event (im.presence, co-partitioned by uid). Only a READ matters: it ends every
     * parked dispatch of the conversation up to its seq as SUPPRESSED read, and marks the
     * conversation for those waiting in place or in flight (they check before their next call).
     * Anything else costs one comparison.
     */
    const onPresence = (event: PresenceEvent): void => {
      if (event.kind !== 'READ' || event.conv_id === null || event.seq === null) return;
      const conversation = RetryingDispatches.conversation(event.uid, event.conv_id);
      for (const taskId of retrying.read(conversation, event.seq)) {
        const p = parked.take(taskId);
        if (!p) continue; // running: it sees the READ before its next call
        endParked(p, readAnswer(p.dispatch.channels[p.channel]?.vendor ?? p.last.vendor, p.attempts));
      }
      drain();
    };

    /**
     * Ends a dispatch taken out of the parked store with its final answer (a READ, an eviction):
     * the task row goes to failed (3) with the answer in its trail, so a re-dispatch re-emits
     * exactly it. Its input offset was committed when it was first parked; the outcome and the
     * store's tombstone go out in the same commit.
     */
    function endParked(p: DispatchProgress, answer: ChannelAnswer): void {
      const d = p.dispatch;
      retrying.remove(d.task_id);
      endFailed(taskRowOf(d), d.task_id, answer.vendor, answer.code, p.attempts, [...(p.trail ?? []), answer]);
      const record = { key: p.key, value: fanOutOutcome(d, { ...answer, reason: answer.reason as FanOutReason }, config.clock.now()), timestamp: p.timestamp };
      // Released in start order behind the dispatches in flight, like any other outcome.
      jobs.push({ outputs: [{ child: outputs.outcomes, record }], finished: true, done: () => undefined });
      options.listener?.onAnswer?.(answer.vendor, d.app_id, answer.status, answer.code);
    }

    /**
     * Over the cap (`maxParked`), the oldest parked pushes (smallest decided_at: the least likely
     * to matter still, and the first to reach the maximum age anyway) end now, FAILED on the channel
     * they waited on with the vendor's last code: reason `parked_evicted`, or `vendor_unreachable`
     * when that last call never reached the vendor (not a submission, as for the maximum age).
     * Parking happens only where no other channel may be tried, so this is the task's final outcome.
     */
    function evictOverCap(): void {
      for (const p of parked.takeOverCap()) {
        const vendor = p.dispatch.channels[p.channel]?.vendor ?? p.last.vendor;
        const code = p.waitingOn ?? 'PARKED_EVICTED';
        const reason: FanOutReason = UNREACHED_CODES.has(code) ? 'vendor_unreachable' : 'parked_evicted';
        endParked(p, { channel: p.channel, status: 'FAILED', vendor, reason, code, attempts: p.attempts, discriminator: `${p.channel}:${vendor}:FAILED` });
        options.listener?.onEvicted?.(vendor, p.dispatch.app_id);
      }
    }

    // Finished dispatches wait behind a slow earlier one: they count against the bound too.
    const backpressure = async () => {
      while (inFlight.size >= config.maxInFlight || jobs.length >= 4 * config.maxInFlight) {
        if (inFlight.size > 0) await Promise.race(inFlight);
        drain();
      }
    };

    return {
      init(context) {
        ctx = context;
        parked = new ParkedDispatches(
          ctx.getStateStore<KeyValueStore<ParkedValue>>(FAN_OUT_STORES.parked),
          ctx.getStateStore<TimerStore>(FAN_OUT_STORES.retryTimers),
          config.maxParked,
        );
        parked.restore((taskId, p) => retrying.add(RetryingDispatches.conversation(p.dispatch.uid, p.dispatch.conv_id), taskId, p.dispatch.seq));
        ctx.schedule(config.retryPollMs, 'wall-clock', async (now) => {
          evictOverCap(); // a cap lowered since the store was written
          for (const p of parked.takeDue(now, config.maxInFlight)) start(p, false);
          options.listener?.onParked?.(ctx.taskId, parked.size);
          await backpressure();
          drain();
        });
      },
      async process(record) {
        if (!('task_id' in record.value)) return onPresence(record.value);
        const d = record.value;
        options.listener?.onDispatchReceived?.(d);
        drain();
        if (record.headers?.[REPLAY_HEADER]) recent.delete(d.task_id);
        const fresh: DispatchProgress = {
          dispatch: d,
          key: record.key,
          timestamp: record.timestamp,
          channel: 0,
          call: 1,
          attempts: 0,
          last: { vendor: '', code: '', quotaOnly: true, throttled: false },
        };
        start(fresh, true);
        await backpressure();
        drain();
      },
      /** Before a periodic commit: what has finished goes out; dispatches in flight stay out of it. */
      async flushFinished() {
        while (resumed.size > 0) await Promise.all([...resumed]);
        drain();
        rethrow();
        await ledger.flush();
      },
      async flush() {
        while (inFlight.size > 0) await Promise.all([...inFlight]);
        drain();
        rethrow();
        await ledger.flush();
      },
      async close() {
        await Promise.all([...inFlight]);
        options.listener?.onParked?.(ctx.taskId, 0);
      },
    };
  };
  return withStores(processor, [keyValueStore<ParkedValue>(FAN_OUT_STORES.parked, parkedStoreSerde), timerStore(FAN_OUT_STORES.retryTimers)]);
}
