/**
 * The business application on the TopologyTestDriver (real topology, raw Avro serdes of schemas/):
 * users with tokens and settings, requests from senders, and what comes out on the business lane
 * (push.dispatch.business), push.outcomes and push.dlq. The driver's wall clock is the stage's now.
 */
import { TopologyTestDriver } from '../../../topology/test-driver.ts';
import { DLQ_HEADERS } from '../../../topology/dlq.ts';
import { rawAvroValueSerdes } from '../../../pipeline/serdes.ts';
import { buildBusinessTopology, type BusinessTopologyOptions } from '../../../pipeline/apps/business.ts';
import { TOPICS } from '../../../pipeline/topics.ts';
import type { PushDispatch, PushOutcome, TokenReport, UserSettings } from '../../../processors/model/records.ts';
import type { PushRequestRecord } from '../../../processors/campaigns/records.ts';
import { campaignRequest } from '../../../bench/campaign-phase.ts';

export const APP = 'im.demo';

export class BusinessHarness {
  private constructor(readonly driver: TopologyTestDriver) {}

  /** The sender rate is off unless `business` sets it (the driver's clock stands still between inputs). */
  static create(startMs: number, business: BusinessTopologyOptions['business'] = {}): BusinessHarness {
    const options = { releaseCheckIntervalMs: 10, strategies: { senderRatePerSecond: 0 }, ...business };
    const topology = buildBusinessTopology({ valueSerdes: rawAvroValueSerdes(), business: options });
    return new BusinessHarness(new TopologyTestDriver(topology, { startWallClockMs: startMs, dlqTopic: TOPICS.dlq.name }));
  }

  get now(): number {
    return this.driver.wallClockTimeMs();
  }

  /** Moves the wall clock to epoch ms `at` in steps of `step` ms, firing the release checks. */
  async advanceTo(at: number, step = 60_000): Promise<void> {
    while (this.now < at) await this.driver.advanceWallClockTime(Math.min(step, at - this.now));
  }

  /** A device with one valid token of `vendor` for APP. */
  async device(uid: string, device = `${uid}-phone`, vendor = 'fcm'): Promise<void> {
    const value: TokenReport = {
      uid,
      device_id: device,
      platform: 'android',
      vendor,
      app_id: APP,
      token: `${vendor}-token-${device}`,
      reported_at: this.now,
      state: 'VALID',
      source: 'CLIENT',
      reason: null,
      manufacturer: null,
    };
    await this.driver.pipeInput(TOPICS.tokens.name, uid, value, { timestamp: this.now });
  }

  async settings(uid: string, extra: Partial<UserSettings> = {}): Promise<void> {
    const value: UserSettings = {
      uid,
      time_zone: 'UTC',
      quiet_hours: null,
      muted_conversations: [],
      private_mode: false,
      updated_at: this.now,
      opted_out_categories: [],
      muted_senders: [],
      ...extra,
    };
    await this.driver.pipeInput(TOPICS.settings.name, uid, value, { timestamp: this.now });
  }

  /** A request with title and body; `extra` overrides any field. */
  async request(uid: string, idempotencyKey: string, extra: Partial<PushRequestRecord> = {}, key: string = extra.uid ?? uid): Promise<void> {
    const value = campaignRequest(uid, {
      sender: 'order-service',
      app_id: APP,
      idempotency_key: idempotencyKey,
      category: 'NOTICE',
      priority: 'NORMAL',
      title: 'Your order',
      body: 'has shipped',
      requested_at: this.now,
      ...extra,
    });
    await this.driver.pipeInput(TOPICS.requests.name, key, value, { timestamp: this.now });
  }

  dispatches(): PushDispatch[] {
    return this.driver.readAllOutputs<string, PushDispatch>(TOPICS.dispatchBusiness.name).map((r) => plain(r.value));
  }

  outcomes(): PushOutcome[] {
    return this.driver.readAllOutputs<string, PushOutcome>(TOPICS.outcomes.name).map((r) => plain(r.value));
  }

  /** The DLQ records' error messages. */
  dlq(): string[] {
    return this.driver.readAllOutputs(TOPICS.dlq.name).map((r) => r.headers[DLQ_HEADERS.errorMessage]!);
  }

  async close(): Promise<void> {
    await this.driver.close();
  }
}

export function plain<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

/** `uid STATUS reason` of an outcome. */
export function briefOutcome(o: PushOutcome): string {
  return `${o.uid} ${o.status} ${o.reason}`;
}
