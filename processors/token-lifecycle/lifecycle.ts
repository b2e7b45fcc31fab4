import type { Processor, ProcessorContext, ProcessorSupplier, StreamRecord } from '../../topology/api.ts';
import { keyValueStore, timerStore, type KeyValueStore, type StoreDefinition, type TimerStore } from '../../topology/stores.ts';
import { compositeKey } from '../shared/keys.ts';
import type { PushOutcome, TokenReport, TokenSource } from '../shared/records.ts';
import type { PushReceipt } from '../receipt-join/records.ts';

/**
 * Token health per (device_id, vendor) (DESIGN §2.5), keyed by uid like every input it reads:
 * push.tokens (client reports and invalidations fed back), push.receipts (matched receipts) and
 * push.outcomes (synchronous vendor answers).
 *
 * Rules:
 * - a dead-token receipt or outcome invalidates at once;
 * - `maxConsecutiveFailures` (3) failures in a row invalidate; a success resets the count;
 * - a wall-clock sweep invalidates tokens not refreshed for `staleAfterMs` (30 days);
 * - a newer client report for the same (device_id, vendor) revives (and replaces) the token;
 * - evidence older than the current token's report (`at` < reported_at) is ignored, so a receipt
 *   about a replaced token never invalidates its successor.
 * Every change of a token's stored fields goes to MySQL (`TokenRecordWriter`, upsert on
 * device_id + vendor) and, for invalidations, to push.tokens as an INVALID report so the policy
 * stage stops choosing it. Unchanged reports write nothing.
 */
export interface TokenRow {
  readonly uid: string;
  readonly device_id: string;
  readonly vendor: string;
  readonly platform: string;
  readonly app_id: string;
  /** The vendor token: a secret, never logged. */
  readonly token: string;
  readonly manufacturer: string | null;
  readonly state: 'VALID' | 'INVALID';
  /** Why INVALID: dead_token | consecutive_failures | stale | the reporter's reason. */
  readonly reason: string | null;
  /** Epoch ms of the client report this token came from. */
  readonly reported_at: number;
  /** Epoch ms of this change. */
  readonly changed_at: number;
}

/** Stores token rows (im_push_token). `upsert` buffers; `flush` resolves once they are stored. */
export interface TokenRecordWriter {
  upsert(row: TokenRow): void;
  flush(): Promise<void>;
}

export interface TokenLifecycleListener {
  invalidated?(vendor: string, reason: string): void;
  revived?(vendor: string): void;
}

export interface TokenLifecycleOptions {
  readonly tokens: TokenRecordWriter;
  /** Failures in a row that invalidate a token. Default 3. */
  readonly maxConsecutiveFailures?: number;
  /** A token not reported again for this long is invalidated, ms. Default 30 days. */
  readonly staleAfterMs?: number;
  /** Wall-clock interval of the staleness sweep, ms. Default 1 hour. */
  readonly sweepIntervalMs?: number;
  /**
   * Vendors that send delivery receipts: for them only receipts count as success or failure.
   * For the others (APNs, FCM) a vendor acceptance is the success signal. Default hms, xiaomi, oppo, vivo.
   */
  readonly receiptVendors?: readonly string[];
  /** Which FAILED outcomes count against the token (not auth, quota or throttling). Default: reason `permanent`. */
  readonly isTokenFailure?: (outcome: PushOutcome) => boolean;
  readonly listener?: TokenLifecycleListener;
}

export const TOKEN_LIFECYCLE_STORES = { tokens: 'token-lifecycle-tokens', stale: 'token-lifecycle-stale' } as const;

export function tokenLifecycleStores(): StoreDefinition[] {
  return [keyValueStore<TokenHealth>(TOKEN_LIFECYCLE_STORES.tokens), timerStore(TOKEN_LIFECYCLE_STORES.stale)];
}

/** What the processor keeps per (device_id, vendor). */
export interface TokenHealth extends TokenRow {
  /** Consecutive failures since the last success or report. */
  failures: number;
}

export type TokenLifecycleInput = TokenReport | PushReceipt | PushOutcome;

const isReport = (v: TokenLifecycleInput): v is TokenReport => 'token' in v && 'reported_at' in v;
const isReceipt = (v: TokenLifecycleInput): v is PushReceipt => 'matched' in v && !('stage' in v);

export function tokenLifecycleProcessor(options: TokenLifecycleOptions): ProcessorSupplier<string, TokenLifecycleInput, string, TokenReport> {
  const maxFailures = options.maxConsecutiveFailures ?? 3;
  const staleAfterMs = options.staleAfterMs ?? 30 * 24 * 3_600_000;
  const receiptVendors = new Set(options.receiptVendors ?? ['hms', 'xiaomi', 'oppo', 'vivo']);
  const isTokenFailure = options.isTokenFailure ?? ((o: PushOutcome) => o.reason === 'permanent');
  const listener = options.listener ?? {};

  return () => {
    let ctx: ProcessorContext<string, TokenReport>;
    let tokens: KeyValueStore<TokenHealth>;
    let stale: TimerStore;

    const store = (key: string, health: TokenHealth, changed: boolean) => {
      tokens.put(key, health);
      if (changed) options.tokens.upsert(rowOf(health));
    };

    const invalidate = (key: string, health: TokenHealth, reason: string, source: TokenSource, at: number) => {
      if (health.state === 'INVALID') return;
      const next: TokenHealth = { ...health, state: 'INVALID', reason, changed_at: at };
      store(key, next, true);
      stale.cancel(key);
      listener.invalidated?.(health.vendor, reason);
      ctx.forward({
        key: health.uid,
        value: {
          uid: health.uid,
          device_id: health.device_id,
          platform: health.platform,
          vendor: health.vendor,
          app_id: health.app_id,
          token: health.token,
          reported_at: at,
          state: 'INVALID',
          source,
          reason,
          manufacturer: health.manufacturer,
        },
        timestamp: at,
      });
    };

    const onReport = (r: TokenReport) => {
      const key = compositeKey(r.device_id, r.vendor);
      const current = tokens.get(key);
      if (r.state === 'INVALID') {
        // An invalidation fed back (fan-out dead token, our own records): applies to the token it names only.
        if (current && current.state === 'VALID' && current.token === r.token) invalidate(key, current, r.reason ?? 'reported_invalid', r.source, r.reported_at);
        return;
      }
      if (current && r.reported_at < current.reported_at) return;
      const revived = current?.state === 'INVALID';
      const changed =
        !current || revived || current.token !== r.token || current.app_id !== r.app_id || current.platform !== r.platform || current.manufacturer !== (r.manufacturer ?? null) || current.uid !== r.uid;
      const next: TokenHealth = {
        uid: r.uid,
        device_id: r.device_id,
        vendor: r.vendor,
        platform: r.platform,
        app_id: r.app_id,
        token: r.token,
        manufacturer: r.manufacturer ?? null,
        state: 'VALID',
        reason: null,
        reported_at: r.reported_at,
        changed_at: changed ? r.reported_at : current!.changed_at,
        failures: current && !revived && current.token === r.token ? current.failures : 0,
      };
      store(key, next, changed);
      stale.set(key, r.reported_at + staleAfterMs);
      if (revived) listener.revived?.(r.vendor);
    };

    /** Applies one success or failure signal about (device, vendor) at time `at`. */
    const onSignal = (deviceId: string, vendor: string, at: number, signal: 'success' | 'failure' | 'dead', source: TokenSource) => {
      const key = compositeKey(deviceId, vendor);
      const health = tokens.get(key);
      if (!health || health.state === 'INVALID' || at < health.reported_at) return;
      if (signal === 'dead') return invalidate(key, health, 'dead_token', source, at);
      if (signal === 'success') {
        if (health.failures !== 0) tokens.put(key, { ...health, failures: 0 });
        return;
      }
      const failures = health.failures + 1;
      if (failures >= maxFailures) return invalidate(key, { ...health, failures }, 'consecutive_failures', source, at);
      tokens.put(key, { ...health, failures });
    };

    const processor: Processor<string, TokenLifecycleInput, string, TokenReport> = {
      init(context) {
        ctx = context;
        tokens = context.getStateStore<KeyValueStore<TokenHealth>>(TOKEN_LIFECYCLE_STORES.tokens);
        stale = context.getStateStore<TimerStore>(TOKEN_LIFECYCLE_STORES.stale);
        context.schedule(options.sweepIntervalMs ?? 3_600_000, 'wall-clock', (now) => {
          for (const { key } of stale.popDue(now)) {
            const health = tokens.get(key);
            if (health && health.state === 'VALID' && health.reported_at + staleAfterMs <= now) invalidate(key, health, 'stale', 'SWEEP', now);
          }
        });
      },

      process(record: StreamRecord<string, TokenLifecycleInput>) {
        const v = record.value;
        if (isReport(v)) return onReport(v);
        if (isReceipt(v)) {
          if (!v.matched || !v.device_id) return;
          const signal = v.status === 'DELIVERED' ? 'success' : v.status === 'DEAD_TOKEN' ? 'dead' : 'failure';
          return onSignal(v.device_id, v.vendor, v.at, signal, 'RECEIPT');
        }
        const o = v;
        if (!o.device_id || !o.vendor) return;
        if (o.status === 'DEAD_TOKEN') return onSignal(o.device_id, o.vendor, o.at, 'dead', 'FAN_OUT');
        if (receiptVendors.has(o.vendor)) {
          // Receipt vendors: acceptance is not delivery; only a synchronous token failure counts.
          if (o.status === 'FAILED' && isTokenFailure(o)) onSignal(o.device_id, o.vendor, o.at, 'failure', 'FAN_OUT');
          return;
        }
        if (o.status === 'ACCEPTED') onSignal(o.device_id, o.vendor, o.at, 'success', 'FAN_OUT');
        else if (o.status === 'FAILED' && isTokenFailure(o)) onSignal(o.device_id, o.vendor, o.at, 'failure', 'FAN_OUT');
      },

      flush: () => options.tokens.flush(),
    };
    return processor;
  };
}

function rowOf(h: TokenHealth): TokenRow {
  const { failures: _failures, ...row } = h;
  return row;
}
