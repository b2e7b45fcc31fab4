import { withStores, type Processor, type ProcessorContext, type ProcessorSupplier, type StreamRecord } from '../../topology/api.ts';
import { keyValueStore, timerStore, type KeyValueStore, type TimerStore } from '../../topology/stores.ts';
import { compositeKey } from '../model/keys.ts';
import type { PushOutcome, TokenReport, TokenSource } from '../model/records.ts';
import type { PushReceipt } from '../receipt-join/records.ts';
import { withFields } from '../../common/objects.ts';

/**
 * Token health per (device_id, vendor) (docs/design.md, "receipts and tokens"), keyed by uid like
 * every input it reads: push.tokens (client reports and invalidations fed back), push.receipts
 * (matched receipts) and push.outcomes (synchronous vendor answers).
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
 * stage stops choosing it. Unchanged reports write nothing. The store (and its changelog) is
 * written only when a token's health really changes: a success with no failures to reset, a
 * replayed report or evidence about an invalid token writes nothing.
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
  /** Which FAILED outcomes count against the token (not auth, quota or throttling). Default: reason `permanent`. */
  readonly isTokenFailure?: (outcome: PushOutcome) => boolean;
  readonly listener?: TokenLifecycleListener;
}

/**
 * `tokens` holds each token's health (changelogged); `stale` indexes when each valid token goes
 * stale (reported_at + staleAfterMs) for the sweep. `stale` is not changelogged: its due times
 * follow from `tokens`, and it is rebuilt from them after a restore. The store
 * `token-lifecycle-stale` of earlier versions (a changelogged timer store) is no longer read.
 */
export const TOKEN_LIFECYCLE_STORES = { tokens: 'token-lifecycle-tokens', stale: 'token-lifecycle-stale-due' } as const;

/** What the processor keeps per (device_id, vendor). */
export interface TokenHealth extends TokenRow {
  /** Consecutive failures since the last success or report. */
  failures: number;
}

export type TokenLifecycleInput = TokenReport | PushReceipt | PushOutcome;

type Signal = 'success' | 'failure' | 'dead';

const isReport = (v: TokenLifecycleInput): v is TokenReport => 'token' in v && 'reported_at' in v;
const isReceipt = (v: TokenLifecycleInput): v is PushReceipt => 'matched' in v && !('stage' in v);

/**
 * The token-lifecycle processor supplier; it declares both stores (TOKEN_LIFECYCLE_STORES).
 * `receiptVendors`: the vendors that send delivery receipts (the wiring's list, from the vendors'
 * modules); for them only receipts count as success or failure. For the others (APNs, FCM) a vendor
 * acceptance is the success signal.
 */
export function tokenLifecycleProcessor(
  options: TokenLifecycleOptions & { readonly receiptVendors: readonly string[] },
): ProcessorSupplier<string, TokenLifecycleInput | null, string, TokenReport> {
  return withStores(
    () => new TokenLifecycleProcessor(options),
    [keyValueStore<TokenHealth>(TOKEN_LIFECYCLE_STORES.tokens), timerStore(TOKEN_LIFECYCLE_STORES.stale, { changelog: false })],
  );
}

class TokenLifecycleProcessor implements Processor<string, TokenLifecycleInput | null, string, TokenReport> {
  private ctx!: ProcessorContext<string, TokenReport>;
  private tokens!: KeyValueStore<TokenHealth>;
  private stale!: TimerStore;
  private readonly maxFailures: number;
  private readonly staleAfterMs: number;
  private readonly receiptVendors: ReadonlySet<string>;
  private readonly isTokenFailure: (outcome: PushOutcome) => boolean;
  private readonly listener: TokenLifecycleListener;

  constructor(private readonly options: TokenLifecycleOptions & { readonly receiptVendors: readonly string[] }) {
    this.maxFailures = options.maxConsecutiveFailures ?? 3;
    this.staleAfterMs = options.staleAfterMs ?? 30 * 24 * 3_600_000;
    this.receiptVendors = new Set(options.receiptVendors);
    this.isTokenFailure = options.isTokenFailure ?? ((o: PushOutcome) => o.reason === 'permanent');
    this.listener = options.listener ?? {};
  }

  init(ctx: ProcessorContext<string, TokenReport>): void {
    this.ctx = ctx;
    this.tokens = ctx.getStateStore(TOKEN_LIFECYCLE_STORES.tokens);
    this.stale = ctx.getStateStore(TOKEN_LIFECYCLE_STORES.stale);
    if (this.stale.size === 0)
      for (const [key, health] of this.tokens.entries()) if (health.state === 'VALID') this.stale.set(key, health.reported_at + this.staleAfterMs);
    ctx.schedule(this.options.sweepIntervalMs ?? 3_600_000, 'wall-clock', (now) => this.sweep(now));
  }

  process(record: StreamRecord<string, TokenLifecycleInput | null>): void {
    const v = record.value;
    // A tombstone on push.tokens (the user's tokens deleted; the decisions drop them) carries no
    // evidence about a token's health: the rows it leaves valid go stale and are swept.
    if (v === null) return;
    if (isReport(v)) return this.onReport(v);
    if (isReceipt(v)) return this.onReceipt(v);
    this.onOutcome(v);
  }

  flush(): Promise<void> {
    return this.options.tokens.flush();
  }

  private onReport(r: TokenReport): void {
    const key = compositeKey(r.device_id, r.vendor);
    const current = this.tokens.get(key);
    if (r.state === 'INVALID') {
      // An invalidation fed back (fan-out dead token, our own records): applies to the token it names only.
      if (current && current.state === 'VALID' && current.token === r.token)
        this.invalidate(key, current, r.reason ?? 'reported_invalid', r.source, r.reported_at);
      return;
    }
    if (current && r.reported_at < current.reported_at) return;
    const revived = current?.state === 'INVALID';
    const changed =
      !current ||
      revived ||
      current.token !== r.token ||
      current.app_id !== r.app_id ||
      current.platform !== r.platform ||
      current.manufacturer !== (r.manufacturer ?? null) ||
      current.uid !== r.uid;
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
    this.store(key, current, next, changed);
    this.stale.set(key, r.reported_at + this.staleAfterMs);
    if (revived) this.listener.revived?.(r.vendor);
  }

  private onReceipt(v: PushReceipt): void {
    if (!v.matched || !v.device_id) return;
    const signal: Signal = v.status === 'DELIVERED' ? 'success' : v.status === 'DEAD_TOKEN' ? 'dead' : 'failure';
    this.onSignal(v.device_id, v.vendor, v.at, signal, 'RECEIPT');
  }

  private onOutcome(o: PushOutcome): void {
    if (!o.device_id || !o.vendor) return;
    if (o.status === 'DEAD_TOKEN') return this.onSignal(o.device_id, o.vendor, o.at, 'dead', 'FAN_OUT');
    const tokenFailure = o.status === 'FAILED' && this.isTokenFailure(o);
    // Receipt vendors: acceptance is not delivery; only a synchronous token failure counts.
    if (o.status === 'ACCEPTED' && !this.receiptVendors.has(o.vendor)) this.onSignal(o.device_id, o.vendor, o.at, 'success', 'FAN_OUT');
    else if (tokenFailure) this.onSignal(o.device_id, o.vendor, o.at, 'failure', 'FAN_OUT');
  }

  /** Applies one success or failure signal about (device, vendor) at time `at`. */
  private onSignal(deviceId: string, vendor: string, at: number, signal: Signal, source: TokenSource): void {
    const key = compositeKey(deviceId, vendor);
    const health = this.tokens.get(key);
    if (!health || health.state === 'INVALID' || at < health.reported_at) return;
    if (signal === 'dead') return this.invalidate(key, health, 'dead_token', source, at);
    const failures = signal === 'success' ? 0 : health.failures + 1;
    if (failures >= this.maxFailures) return this.invalidate(key, withFields(health, { failures }), 'consecutive_failures', source, at);
    this.store(key, health, withFields(health, { failures }), false);
  }

  private invalidate(key: string, health: TokenHealth, reason: string, source: TokenSource, at: number): void {
    if (health.state === 'INVALID') return;
    this.store(key, health, withFields(health, { state: 'INVALID' as const, reason, changed_at: at }), true);
    this.stale.cancel(key);
    this.listener.invalidated?.(health.vendor, reason);
    this.ctx.forward({
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
  }

  /** Writes the health only when it differs from what is stored; `rowChanged` also upserts the MySQL row. */
  private store(key: string, current: TokenHealth | undefined, next: TokenHealth, rowChanged: boolean): void {
    if (!current || !sameHealth(current, next)) this.tokens.put(key, next);
    if (rowChanged) this.options.tokens.upsert(rowOf(next));
  }

  private sweep(now: number): void {
    for (const { key } of this.stale.popDue(now)) {
      const health = this.tokens.get(key);
      if (health && health.state === 'VALID' && health.reported_at + this.staleAfterMs <= now) this.invalidate(key, health, 'stale', 'SWEEP', now);
    }
  }
}

function sameHealth(a: TokenHealth, b: TokenHealth): boolean {
  return (Object.keys(b) as Array<keyof TokenHealth>).every((k) => a[k] === b[k]) && Object.keys(a).length === Object.keys(b).length;
}

function rowOf(h: TokenHealth): TokenRow {
  const { failures: _failures, ...row } = h;
  return row;
}
