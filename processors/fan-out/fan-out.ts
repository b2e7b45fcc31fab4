import { backoffDelay } from '../../common/retry.ts';
import type { ProcessorContext, ProcessorSupplier, StreamRecord } from '../../topology/api.ts';
import type { PushMessage, SubmitOutcome, Vendor } from '../../sinks/vendors/types.ts';
import { VENDORS } from '../../sinks/vendors/types.ts';
import type { PushDispatch, PushOutcome, TokenReport } from '../shared/records.ts';
import { SubmitBatcher } from './batcher.ts';
import { TASK_STATUS, type StoredTask, type TaskRow } from './ledger.ts';
import { fanOutConfig, type FanOutOptions } from './options.ts';
import { deadTokenReport, fanOutOutcome, taskRowOf, type FanOutAnswer, type FanOutReason } from './records.ts';
import { VendorGate } from './vendor-gate.ts';

type Output = { child: string; record: StreamRecord<string, PushOutcome | TokenReport> };

/** Tasks this instance finished recently: a second dispatch of one is skipped without asking MySQL. */
const RECENT_LIMIT = 100_000;

const FAILURE_REASON: Readonly<Record<'payload-too-large' | 'permanent' | 'auth-failed', FanOutReason>> = {
  'payload-too-large': 'payload_too_large',
  permanent: 'permanent',
  'auth-failed': 'auth_failed',
};

/**
 * The fan-out stage (DESIGN §2.4): push.dispatch → vendor submissions → push.outcomes (+ token
 * invalidations to push.tokens). Per dispatch: claim the task in im_push_task (status 0; skip if
 * already submitted or final), then try the device's channels in order through each (vendor, app)'s
 * gate: accepted → 1; dead token → invalidate, next channel, never retried; 429 / quota → pause the
 * vendor (honouring Retry-After) and move to the next channel, else back off and retry (429 only);
 * 5xx → bounded retries with jitter; payload / permanent / auth → next channel. All channels
 * failed → 3. Dispatches run concurrently (up to `maxInFlight`); results are forwarded from
 * `process` and `flush`, and `flush` waits for every in-flight dispatch and the ledger.
 */
export function fanOut(options: FanOutOptions): ProcessorSupplier<string, PushDispatch, string, PushOutcome | TokenReport> {
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

  return () => {
    let ctx: ProcessorContext<string, PushOutcome | TokenReport>;
    let ready: Output[] = [];
    let failure: unknown;
    const inFlight = new Set<Promise<void>>();
    const activeTasks = new Map<string, Promise<void>>();
    const recent = new Map<string, StoredTask>();

    const drain = () => {
      const out = ready;
      ready = [];
      for (const o of out) ctx.forward(o.record, o.child);
    };

    const remember = (taskId: string, stored: StoredTask) => {
      recent.set(taskId, stored);
      if (recent.size > RECENT_LIMIT) recent.delete(recent.keys().next().value!);
    };

    async function handle(d: PushDispatch, key: string, timestamp: number): Promise<void> {
      const emit = (a: FanOutAnswer) => {
        ready.push({ child: outputs.outcomes, record: { key, value: fanOutOutcome(d, a, config.clock.now()), timestamp } });
        options.listener?.onAnswer?.(a.vendor ?? '', d.app_id, a.status, a.code);
      };
      if (d.channels.length === 0) return emit({ status: 'DROPPED', vendor: null, reason: 'no_token', code: null, attempts: 0, discriminator: 'no_token' });
      const task = taskRowOf(d);
      const known = recent.get(d.task_id) ?? (await ledger.claim(task));
      if (known.status !== TASK_STATUS.pending) return replayed(known, emit);
      let attempts = 0;
      let last: { vendor: string; code: string; quotaOnly: boolean } = { vendor: '', code: '', quotaOnly: true };
      for (let ci = 0; ci < d.channels.length; ci++) {
        const channel = d.channels[ci]!;
        const vendor = channel.vendor as Vendor;
        const hasNext = ci < d.channels.length - 1;
        const entry = (VENDORS as readonly string[]).includes(vendor) ? channelOf(vendor, d.app_id) : undefined;
        const fail = (status: 'FAILED' | 'DEAD_TOKEN', reason: FanOutReason, code: string) => {
          emit({ status, vendor, reason, code, attempts, discriminator: `${ci}:${vendor}:${status}` });
          last = { vendor, code, quotaOnly: false };
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
        for (let call = 1; ; call++) {
          attempts++;
          const outcome: SubmitOutcome = await entry.batcher.submit(message);
          const now = config.clock.now();
          if (outcome.kind === 'accepted') {
            const result = { status: TASK_STATUS.submitted, vendor, vendorMessageId: outcome.vendorMessageId, failCode: null, attempts } as const;
            ledger.record(task, result);
            remember(d.task_id, result);
            return emit({ status: 'ACCEPTED', vendor, reason: null, code: null, vendorMessageId: outcome.vendorMessageId, attempts, discriminator: ACCEPTED_DISCRIMINATOR });
          }
          if (outcome.kind === 'dead-token') {
            fail('DEAD_TOKEN', 'dead_token', outcome.code);
            ready.push({ child: outputs.tokens, record: { key, value: deadTokenReport(d, vendor, channel.token, now), timestamp } });
            break;
          }
          if (outcome.kind === 'rate-limited' || outcome.kind === 'quota-exhausted') {
            const quota = outcome.kind === 'quota-exhausted';
            const hint = outcome.kind === 'rate-limited' ? outcome.retryAfterMs : undefined;
            if (!quota) entry.gate.pause(now + (hint ?? config.defaultThrottleMs));
            emit({ status: 'THROTTLED', vendor, reason: quota ? 'quota' : 'rate_limited', code: outcome.code, attempts, discriminator: `${ci}:${vendor}:throttled:${call}` });
            last = { vendor, code: outcome.code, quotaOnly: quota && last.quotaOnly };
            if (quota || hasNext || call >= config.maxThrottledAttempts) break;
            await config.clock.sleep(Math.max(hint ?? 0, backoffDelay(call, config.backoffInitialMs, config.backoffMaxMs)));
            continue;
          }
          if (outcome.kind === 'retryable') {
            if (call < config.maxRetryableAttempts) {
              await config.clock.sleep(Math.max(outcome.retryAfterMs ?? 0, backoffDelay(call, config.backoffInitialMs, config.backoffMaxMs)));
              continue;
            }
            fail('FAILED', 'retries_exhausted', outcome.code);
            break;
          }
          fail('FAILED', FAILURE_REASON[outcome.kind], outcome.code);
          break;
        }
      }
      // Every channel failed: the task is final (3). Quota on every channel is a drop, never retried.
      const result = { status: TASK_STATUS.failed, vendor: last.vendor, vendorMessageId: null, failCode: last.code, attempts } as const;
      ledger.record(task, result);
      remember(d.task_id, result);
      if (last.quotaOnly) emit({ status: 'DROPPED', vendor: last.vendor, reason: 'quota', code: last.code, attempts, discriminator: 'quota' });
    }

    const start = (d: PushDispatch, key: string, timestamp: number) => {
      // The same task twice in flight (a replayed record): the second waits for the first's verdict.
      const previous = activeTasks.get(d.task_id) ?? Promise.resolve();
      const run = previous.then(() => handle(d, key, timestamp)).catch((error) => {
        failure ??= error;
      });
      activeTasks.set(d.task_id, run);
      inFlight.add(run);
      void run.finally(() => {
        inFlight.delete(run);
        if (activeTasks.get(d.task_id) === run) activeTasks.delete(d.task_id);
      });
    };

    const rethrow = () => {
      if (failure !== undefined) {
        const error = failure;
        failure = undefined;
        throw error;
      }
    };

    return {
      init(context) {
        ctx = context;
      },
      async process(record) {
        rethrow();
        drain();
        start(record.value, record.key, record.timestamp);
        while (inFlight.size >= config.maxInFlight) await Promise.race(inFlight);
        drain();
        rethrow();
      },
      async flush() {
        while (inFlight.size > 0) await Promise.all([...inFlight]);
        drain();
        rethrow();
        await ledger.flush();
      },
      async close() {
        await Promise.all([...inFlight]);
      },
    };
  };
}

/** One ACCEPTED outcome per task: a replay re-emits it with the same event id. */
const ACCEPTED_DISCRIMINATOR = 'accepted';

/**
 * A dispatch whose task is no longer pending (a replay after a crash or rebalance, or a duplicate
 * record): nothing is submitted; the stored verdict is emitted again so that an outcome lost with
 * an aborted transaction is not lost for good. ACCEPTED keeps its event id (ClickHouse dedupes).
 */
function replayed(stored: StoredTask, emit: (a: FanOutAnswer) => void): void {
  const vendor = stored.vendor;
  if ((stored.status === TASK_STATUS.submitted || stored.status === TASK_STATUS.delivered) && vendor) {
    return emit({ status: 'ACCEPTED', vendor, reason: null, code: null, vendorMessageId: stored.vendorMessageId, attempts: stored.attempts, discriminator: ACCEPTED_DISCRIMINATOR });
  }
  if (stored.status === TASK_STATUS.failed && vendor) {
    return emit({ status: 'FAILED', vendor, reason: 'duplicate', code: stored.failCode, attempts: stored.attempts, discriminator: 'final' });
  }
  emit({ status: 'SKIPPED_DUPLICATE', vendor: null, reason: 'duplicate', code: String(stored.status), attempts: 0, discriminator: `duplicate:${stored.status}` });
}

/** The vendor-neutral notification of one dispatch on one channel. */
export function pushMessage(d: PushDispatch, token: string, classification: Readonly<Record<string, string>> | undefined, ttlSeconds: number): PushMessage {
  return {
    taskId: d.task_id,
    appId: d.app_id,
    token,
    title: d.title,
    body: d.body,
    badge: d.badge,
    collapseId: d.collapse_id,
    silent: d.silent,
    data: { conv_id: d.conv_id, seq: String(d.seq), msg_id: d.msg_id },
    ttlSeconds,
    ...(classification && Object.keys(classification).length > 0 ? { classification } : {}),
  };
}

export type { TaskRow };
