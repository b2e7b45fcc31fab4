/**
 * The business stage (docs/entry.md): push.requests → transfer (processors/business/transfer.ts) →
 * the common strategies → push.dispatch.business, with an outcome on push.outcomes for every
 * request that ends here. Inputs, keyed by uid and co-partitioned: requests, token reports and user
 * settings (both read as tables, like the policy stage's; settings carry the opt-outs).
 *
 * The strategies, in order: expiry, the sender's idempotency key, a cancelled campaign, the user's
 * opt-outs, the night (per the category's rule: deliver, keep until it ends, or drop), the per-user
 * daily frequency cap, the sender's rate (a request past it is kept until its turn; a HIGH one goes
 * ahead of the kept ones), then the
 * business share of the vendors' daily quota and the device's valid tokens. A kept request is
 * decided again when released: expiry and cancellation always, the later strategies after a night.
 */
import { withStores, type Processor, type ProcessorContext, type ProcessorSupplier, type StreamRecord } from '../../topology/api.ts';
import { keyValueStore, timerStore, type KeyValueStore, type TimerStore } from '../../topology/stores.ts';
import type { HandOver, Ingested } from '../model/inputs.ts';
import { canonicalZone } from '../model/ingest.ts';
import type { DispatchKind, PushDispatch, PushOutcome, UserSettings } from '../model/records.ts';
import { orderVendors, type VendorChannels } from '../policy/channels.ts';
import { QuotaLedger } from '../policy/quota.ts';
import { applyTokenReport, validTokens, type UserTokens } from '../policy/tokens.ts';
import type { PushRequestRecord } from '../campaigns/records.ts';
import { compileBusinessOptions, strategiesFor, type BusinessConfig, type BusinessOptions, type StrategySet } from './options.ts';
import { FrequencyCaps, IdempotencyKeys, nightEnd, nightOf, optedOut, SenderRate } from './strategies.ts';
import { transfer, type BusinessPush } from './transfer.ts';
import { businessDispatch, businessOutcome, type BusinessReason } from './dispatch.ts';

type Out = PushDispatch | PushOutcome;

/** The business lane's input: a request (tagged in the wiring; `transfer` checks it), or a checked token or settings record. */
export type BusinessInput = HandOver<'request', PushRequestRecord> | Ingested;

/** Where a kept request resumes: after the night (the strategies after it), or after its rate slot (the dispatch). */
type Resume = 'night' | 'rate';

interface KeptPush {
  push: BusinessPush;
  resume: Resume;
  /** The kind its dispatch gets (a request kept for its rate slot after a night stays DEFERRED). */
  kind: DispatchKind;
}

/** Creates the business processor supplier; options are validated here, once. `vendors`: the channel facts (sinks/vendors/channels.ts). */
export function business(vendors: VendorChannels, options: BusinessOptions = {}): ProcessorSupplier<string, BusinessInput, string, Out> {
  const config = compileBusinessOptions(options);
  const s = config.stores;
  return withStores(
    () => new BusinessProcessor(config, vendors),
    [
      keyValueStore(s.tokens),
      keyValueStore(s.settings),
      timerStore(s.idempotency),
      keyValueStore(s.frequency),
      keyValueStore(s.senderRate),
      keyValueStore(s.deferred),
      timerStore(s.deferredTimers),
      keyValueStore(s.quotaLedger),
    ],
  );
}

class BusinessProcessor implements Processor<string, BusinessInput, string, Out> {
  private ctx!: ProcessorContext<string, Out>;
  private tokens!: KeyValueStore<UserTokens>;
  private settings!: KeyValueStore<UserSettings>;
  private idempotency!: IdempotencyKeys;
  private caps!: FrequencyCaps;
  private rate!: SenderRate;
  private deferred!: KeyValueStore<KeptPush>;
  private timers!: TimerStore;
  private ledger!: QuotaLedger;
  /** Strategy sets by (sender, app), computed once each. */
  private readonly sets = new Map<string, StrategySet>();

  constructor(
    private readonly config: BusinessConfig,
    private readonly vendors: VendorChannels,
  ) {}

  init(ctx: ProcessorContext<string, Out>): void {
    const s = this.config.stores;
    this.ctx = ctx;
    this.tokens = ctx.getStateStore(s.tokens);
    this.settings = ctx.getStateStore(s.settings);
    this.idempotency = new IdempotencyKeys(ctx.getStateStore(s.idempotency), this.config.idempotencyTtlMs);
    this.caps = new FrequencyCaps(ctx.getStateStore(s.frequency));
    this.rate = new SenderRate(ctx.getStateStore(s.senderRate), this.config.partitionCount);
    this.deferred = ctx.getStateStore(s.deferred);
    this.timers = ctx.getStateStore(s.deferredTimers);
    this.ledger = new QuotaLedger(ctx.getStateStore(s.quotaLedger), this.config.quotas, this.config.partitionCount, this.config.quotaTimeZone);
    ctx.schedule(this.config.releaseCheckIntervalMs, 'wall-clock', (now) => this.release(now), { nextDueMs: () => this.nextDueMs() });
  }

  process(record: StreamRecord<string, BusinessInput>): void {
    const now = this.ctx.wallClockTimeMs();
    const input = record.value;
    switch (input.kind) {
      case 'request':
        return this.onRequest(transfer(input.value, record.key, now, this.config.ingest, this.config.templates), now);
      case 'token': {
        const user = this.tokens.get(input.value.uid) ?? {};
        applyTokenReport(user, input.value, now + this.config.ingest.maxFutureSkewMs);
        this.tokens.put(input.value.uid, user);
        return;
      }
      case 'settings': {
        const current = this.settings.get(input.value.uid);
        if (!current || current.updated_at <= input.value.updated_at) this.settings.put(input.value.uid, plainSettings(input.value));
        return;
      }
      case 'tombstone':
        (input.table === 'settings' ? this.settings : this.tokens).delete(input.uid);
        return;
      default:
        throw new Error(`business: unexpected ${input.kind} record`);
    }
  }

  private strategies(p: BusinessPush): StrategySet {
    const key = `${p.sender}/${p.appId}`;
    let set = this.sets.get(key);
    if (!set) this.sets.set(key, (set = strategiesFor(this.config, p.sender, p.appId)));
    return set;
  }

  private zone(settings: UserSettings | undefined): string {
    return settings?.time_zone ?? this.config.defaultTimeZone;
  }

  private onRequest(p: BusinessPush, now: number): void {
    if (p.expireAt !== null && p.expireAt <= now) return this.end(p, 'DROPPED', 'expired', now);
    if (this.idempotency.seen(p.uid, p.sender, p.idempotencyKey, now))
      return this.end(p, 'SKIPPED_DUPLICATE', 'duplicate', now, null, `duplicate:${this.inputRecord()}`);
    this.afterIdempotency(p, now, 'IMMEDIATE');
  }

  /** The strategies after the idempotency key (also for a request released after the night). */
  private afterIdempotency(p: BusinessPush, now: number, kind: DispatchKind): void {
    if (p.campaignId !== null && this.config.cancelled(p.campaignId)) return this.end(p, 'SUPPRESSED', 'campaign_cancelled', now);
    const settings = this.settings.get(p.uid);
    if (optedOut(settings, p.category, p.sender)) return this.end(p, 'SUPPRESSED', 'opt_out', now);
    const set = this.strategies(p);
    const rule = set.categories[p.category];
    const zone = this.zone(settings);
    const morning = rule.night === 'deliver' ? undefined : nightEnd(now, zone, nightOf(settings, set));
    if (morning !== undefined) {
      if (rule.night === 'drop') return this.end(p, 'SUPPRESSED', 'dnd', now);
      if (p.expireAt !== null && p.expireAt <= morning) return this.end(p, 'DROPPED', 'expired', now);
      return this.keep(p, 'night', morning);
    }
    if (!this.caps.hasRoom(p.uid, p.category, rule.dailyCap, now, zone)) return this.end(p, 'DROPPED', 'frequency_cap', now);
    this.caps.charge(p.uid, p.category, now, zone);
    const slot = this.rate.take(p.sender, set.senderRatePerSecond, now);
    // HIGH goes ahead of the sender's kept requests; its slot is still taken, so the sender's rate holds over time.
    if (slot > now && p.priority !== 'HIGH') return this.keep(p, 'rate', slot, kind);
    this.dispatch(p, now, kind);
  }

  private keep(p: BusinessPush, resume: Resume, until: number, kind: DispatchKind = 'DEFERRED'): void {
    this.deferred.put(p.requestId, { push: p, resume, kind });
    this.timers.set(p.requestId, until);
  }

  /** When a kept request is due again or a remembered idempotency key expires, whichever is first. */
  private nextDueMs(): number | undefined {
    const kept = this.timers.peekDueMs();
    const expiry = this.idempotency.nextExpiryMs();
    return kept === undefined || expiry === undefined ? (kept ?? expiry) : Math.min(kept, expiry);
  }

  /** Decides the kept requests that are due again (and forgets expired idempotency keys). */
  private release(now: number): void {
    this.idempotency.expire(now, this.config.releaseBatch);
    for (const { key } of this.timers.popDue(now, this.config.releaseBatch)) {
      const kept = this.deferred.get(key);
      if (!kept) continue;
      this.deferred.delete(key);
      const p = kept.push;
      if (p.expireAt !== null && p.expireAt <= now) this.end(p, 'DROPPED', 'expired', now);
      else if (kept.resume === 'night') this.afterIdempotency(p, now, 'DEFERRED');
      else if (p.campaignId !== null && this.config.cancelled(p.campaignId)) this.end(p, 'SUPPRESSED', 'campaign_cancelled', now);
      else this.dispatch(p, now, kept.kind);
    }
  }

  /** One dispatch per device with a valid token for the app (only the targeted device, when one is named). */
  private dispatch(p: BusinessPush, now: number, kind: DispatchKind): void {
    const user = this.tokens.get(p.uid) ?? {};
    const devices = p.deviceId === null ? Object.keys(user) : [p.deviceId];
    let sent = 0;
    let overQuota = false;
    for (const deviceId of devices) {
      const device = user[deviceId];
      const valid = validTokens(device, p.appId);
      if (!device || valid.size === 0) continue;
      const ordered = orderVendors([...valid.keys()], this.vendors.preferredVendor(device.platform, device.manufacturer), this.vendors.priority);
      const usable = ordered.filter((vendor) => this.ledger.hasRoom(vendor, p.appId, now));
      if (usable.length === 0) {
        overQuota = true;
        this.end(p, 'DROPPED', 'quota', now, deviceId);
        continue;
      }
      this.ledger.charge(usable[0]!, p.appId, now);
      const channels = usable.map((vendor) => ({ vendor, token: valid.get(vendor)!, classification: this.vendors.businessClassification(vendor, p.category) }));
      this.ctx.forward(
        { key: p.uid, value: businessDispatch(p, deviceId, device.platform, channels, kind, now), timestamp: now },
        this.config.outputs.dispatch,
      );
      sent++;
    }
    if (sent === 0 && !overQuota) this.end(p, 'DROPPED', 'no_token', now);
  }

  private end(
    p: BusinessPush,
    status: 'DROPPED' | 'SUPPRESSED' | 'SKIPPED_DUPLICATE',
    reason: BusinessReason,
    now: number,
    deviceId: string | null = null,
    discriminator: string = reason,
  ): void {
    this.ctx.forward({ key: p.uid, value: businessOutcome(p, status, reason, deviceId, now, discriminator), timestamp: now }, this.config.outputs.outcomes);
  }

  /**
   * The request being processed, by its place in push.requests: distinct for every request of one
   * idempotency key, and the same when a replay (after a crash or a rebalance) processes it again.
   */
  private inputRecord(): string {
    const m = this.ctx.recordMetadata();
    return `${m?.partition}@${m?.offset}`;
  }
}

/** Settings as a plain JSON-able object, the zone by its canonical name (checked at ingest), with the opt-outs. */
function plainSettings(s: UserSettings): UserSettings {
  return {
    uid: s.uid,
    time_zone: canonicalZone(s.time_zone) ?? s.time_zone,
    quiet_hours: s.quiet_hours ? { start_minute: s.quiet_hours.start_minute, end_minute: s.quiet_hours.end_minute } : null,
    muted_conversations: [],
    private_mode: s.private_mode,
    updated_at: s.updated_at,
    opted_out_categories: [...(s.opted_out_categories ?? [])],
    muted_senders: [...(s.muted_senders ?? [])],
  };
}
