/**
 * The policy stage (docs/design.md, "policy"): per merged notification and device, apply the user's
 * filters (conversation mute, night quiet hours, with the configured @mention rule), render the
 * payload (generic text for private mode and sensitive conversations: the summary never leaves),
 * and choose the device's channels (valid tokens in fallback order, skipping vendors over their
 * daily quota). Inputs, keyed by uid: merged notifications, token reports, user settings. Outputs:
 * dispatch records, and an outcome for every suppression or drop.
 */
import { withStores, type Processor, type ProcessorContext, type ProcessorSupplier, type StreamRecord } from '../../topology/api.ts';
import { keyValueStore, timerStore, type KeyValueStore, type TimerStore } from '../../topology/stores.ts';
import { firstGraphemes } from '../../common/graphemes.ts';
import { taskId } from '../model/ids.ts';
import type { HandOver, Ingested } from '../model/inputs.ts';
import { canonicalZone } from '../model/ingest.ts';
import { decisionOutcome, detailString, type DecisionReason } from '../model/outcomes.ts';
import type { DispatchKind, PresenceEvent, PushDispatch, PushMerged, PushOutcome, UserSettings } from '../model/records.ts';
import { DeferredReleases, type DeferredPush } from './deferred.ts';
import { orderVendors, type VendorChannels } from './channels.ts';
import { compilePolicyOptions, type PolicyConfig, type PolicyOptions } from './options.ts';
import { inQuietHours, quietDetail, quietHoursEnd } from './quiet-hours.ts';
import { QuotaLedger } from './quota.ts';
import { applyTokenReport, validTokens, type UserTokens } from './tokens.ts';
import { withFields } from '../../common/objects.ts';

type Out = PushDispatch | PushOutcome;

/** The policy's input: the merge's notification (tagged in the wiring), or a checked table or presence record. */
export type PolicyInput = HandOver<'merged', PushMerged> | Ingested;

/**
 * Creates the policy processor supplier, which declares the stage's stores (tokens, settings, quota
 * ledger, deferred pushes and their timers, named by `options.stores`); options are validated here,
 * once (ConfigError naming the key). `vendors` supplies the vendor facts of the channel choice
 * (sinks/vendors/channels.ts).
 */
export function policy(vendors: VendorChannels, options: PolicyOptions = {}): ProcessorSupplier<string, PolicyInput, string, Out> {
  const config = compilePolicyOptions(options);
  const names = config.stores;
  return withStores(
    () => new PolicyProcessor(config, vendors),
    [
      keyValueStore(names.tokens),
      keyValueStore(names.settings),
      keyValueStore(names.quotaLedger),
      keyValueStore(names.deferred),
      timerStore(names.deferredTimers),
    ],
  );
}

/** Cuts a summary to `max` characters, counted as grapheme clusters, so no emoji, flag or accented letter is split. */
export function cutSummary(summary: string, max: number): string {
  return firstGraphemes(summary, max);
}

class PolicyProcessor implements Processor<string, PolicyInput, string, Out> {
  private ctx!: ProcessorContext<string, Out>;
  private tokens!: KeyValueStore<UserTokens>;
  private settings!: KeyValueStore<UserSettings>;
  private ledger!: QuotaLedger;
  private deferred!: DeferredReleases;

  constructor(
    private readonly config: PolicyConfig,
    private readonly vendors: VendorChannels,
  ) {}

  init(ctx: ProcessorContext<string, Out>): void {
    this.ctx = ctx;
    this.tokens = ctx.getStateStore(this.config.stores.tokens);
    this.settings = ctx.getStateStore(this.config.stores.settings);
    this.ledger = new QuotaLedger(ctx.getStateStore(this.config.stores.quotaLedger), this.config.quotas, this.config.partitionCount, this.config.quotaTimeZone);
    this.deferred = new DeferredReleases(
      ctx.getStateStore<KeyValueStore<DeferredPush>>(this.config.stores.deferred),
      ctx.getStateStore<TimerStore>(this.config.stores.deferredTimers),
    );
    if (this.config.deferredRelease) ctx.schedule(this.config.releaseCheckIntervalMs, 'wall-clock', (now) => this.release(now));
  }

  process(record: StreamRecord<string, PolicyInput>): void {
    const input = record.value;
    switch (input.kind) {
      case 'token': {
        const user = this.tokens.get(input.value.uid) ?? {};
        applyTokenReport(user, input.value, this.latestPlausibleStamp());
        this.tokens.put(input.value.uid, user);
        return;
      }
      case 'settings': {
        const current = this.settings.get(input.value.uid);
        if (!current || current.updated_at <= input.value.updated_at || current.updated_at > this.latestPlausibleStamp()) {
          this.settings.put(input.value.uid, plainSettings(input.value));
        }
        return;
      }
      case 'merged':
        return this.decide(input.value);
      case 'presence':
        return this.onPresence(input.value);
      case 'tombstone':
        return this.onTombstone(input.table, input.uid);
      default:
        throw new Error(`policy: unexpected ${input.kind} record`);
    }
  }

  /**
   * The latest version stamp ingest accepts now. A stored one beyond it was kept before ingest
   * refused future stamps and must not outrank a correct update.
   */
  private latestPlausibleStamp(): number {
    return this.ctx.wallClockTimeMs() + this.config.ingest.maxFutureSkewMs;
  }

  /**
   * A tombstone on a table topic (both keyed by uid): the user deleted their settings (later
   * notifications are decided with the defaults), or all of the user's tokens are gone.
   */
  private onTombstone(table: 'token' | 'settings', uid: string): void {
    const store = table === 'settings' ? this.settings : this.tokens;
    if (store.get(uid) !== undefined) store.delete(uid);
  }

  /** Only READs matter here: they cancel notifications kept for release after quiet hours. */
  private onPresence(event: PresenceEvent): void {
    if (!this.config.deferredRelease || event.kind !== 'READ' || event.conv_id === null || event.seq === null) return;
    const devices = Object.keys(this.tokens.get(event.uid) ?? {});
    for (const m of this.deferred.read(event.uid, event.conv_id, event.seq, devices)) {
      this.outcome('SUPPRESSED', 'read', m, this.tokens.get(m.uid)?.[m.device_id]?.platform ?? null, null, event.at);
    }
  }

  /** Quiet hours are over for these: decide them again, as DEFERRED pushes. */
  private release(now: number): void {
    for (const kept of this.deferred.due(now)) {
      this.decide(withFields(kept.merged, { decided_at: now, merged_count: kept.count, silent: false }), 'DEFERRED');
    }
  }

  private decide(m: PushMerged, kind: DispatchKind = m.kind): void {
    const at = m.decided_at;
    const settings = this.settings.get(m.uid);
    const device = this.tokens.get(m.uid)?.[m.device_id];
    const platform = device?.platform ?? null;
    const mentioned = m.mention === 'DIRECT' || (this.config.mentionAllCounts && m.mention === 'ALL');
    const rule = this.config.mentionRule;
    const mention = m.mention === 'NONE' ? null : m.mention;
    // What a mention overrode (mute, dnd), for the dispatch's detail.
    let over = '';

    if (settings?.muted_conversations.includes(m.conv_id)) {
      if (!(mentioned && rule !== 'none')) return this.outcome('SUPPRESSED', 'mute', m, platform, null, at, detailString({ mention }));
      over = 'mute';
    }
    if (settings?.quiet_hours && inQuietHours(at, settings.time_zone, settings.quiet_hours)) {
      if (!(mentioned && rule === 'mute-and-quiet-hours')) {
        const detail = quietDetail(settings.time_zone, settings.quiet_hours, at, mention);
        if (!this.config.deferredRelease) return this.outcome('SUPPRESSED', 'dnd', m, platform, null, at, detail);
        const superseded = this.deferred.defer(m, quietHoursEnd(at, settings.time_zone, settings.quiet_hours));
        if (superseded) this.outcome('SUPPRESSED', 'dnd', superseded, platform, null, at, detail);
        return;
      }
      over = over ? `${over},dnd` : 'dnd';
    }
    const valid = validTokens(device, m.app_id);
    if (!device || valid.size === 0) return this.outcome('DROPPED', 'no_token', m, platform, null, at);
    const preferred = this.vendors.preferredVendor(device.platform, device.manufacturer);
    const ordered = orderVendors([...valid.keys()], preferred, this.vendors.priority);
    const usable = ordered.filter((vendor) => this.ledger.hasRoom(vendor, m.app_id, at));
    if (usable.length === 0) return this.outcome('DROPPED', 'quota', m, platform, ordered[0]!, at, detailString({ skip: ordered.join(',') }));
    this.ledger.charge(usable[0]!, m.app_id, at);
    const skipped = ordered.slice(0, ordered.indexOf(usable[0]!));
    const why = skipped.length > 0 ? 'quota' : ordered.length === 1 ? 'only' : ordered[0] === preferred ? 'maker' : 'order';

    const generic = m.sensitive || settings?.private_mode === true;
    const dispatch: PushDispatch = {
      task_id: taskId(m.uid, m.conv_id, m.seq, m.device_id),
      uid: m.uid,
      device_id: m.device_id,
      conv_id: m.conv_id,
      seq: m.seq,
      msg_id: m.msg_id,
      app_id: m.app_id,
      platform: device.platform,
      channels: usable.map((vendor) => ({ vendor, token: valid.get(vendor)!, classification: this.vendors.imClassification(vendor) })),
      title: generic ? this.config.genericTitle : m.title,
      body: generic ? this.config.genericText : cutSummary(m.summary, this.config.summaryMaxChars),
      badge: m.unread_cnt,
      collapse_id: m.collapse_id,
      silent: m.silent,
      kind,
      merged_count: m.merged_count,
      persisted_at: m.persisted_at,
      decided_at: at,
      detail: detailString({
        on: m.presence,
        hb: m.hb,
        deferred: kind === 'DEFERRED' ? 1 : null,
        ch: usable[0],
        why,
        skip: skipped.join(','),
        mention: over ? mention : null,
        over,
        private: settings?.private_mode === true ? 1 : null,
        sensitive: m.sensitive ? 1 : null,
      }),
    };
    this.ctx.forward({ key: m.uid, value: dispatch, timestamp: at }, this.config.outputs.dispatch);
  }

  private outcome(
    status: 'SUPPRESSED' | 'DROPPED',
    reason: DecisionReason,
    m: PushMerged,
    platform: string | null,
    vendor: string | null,
    at: number,
    detail: string | null = null,
  ): void {
    const value = decisionOutcome('policy', status, reason, m, at, detail, { platform, vendor });
    this.ctx.forward({ key: m.uid, value, timestamp: at }, this.config.outputs.outcomes);
  }
}

/**
 * Settings as a plain JSON-able object (decoded Avro records are class instances), the zone by its
 * canonical name (checked at ingest), so differently spelled aliases share one cached formatter.
 */
function plainSettings(s: UserSettings): UserSettings {
  return {
    uid: s.uid,
    time_zone: canonicalZone(s.time_zone) ?? s.time_zone,
    quiet_hours: s.quiet_hours ? { start_minute: s.quiet_hours.start_minute, end_minute: s.quiet_hours.end_minute } : null,
    muted_conversations: [...s.muted_conversations],
    private_mode: s.private_mode,
    updated_at: s.updated_at,
  };
}
