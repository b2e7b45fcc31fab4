/**
 * A scripted user world for the decision stages, run through the TopologyTestDriver with the real
 * decisions topology and raw Avro serdes of schemas/. Times are milliseconds after T0; the driver's
 * wall clock and the records' event times move together.
 */
import { TopologyTestDriver } from '../../topology/test-driver.ts';
import { rawAvroValueSerdes } from '../../pipeline/serdes.ts';
import { buildDecisionsTopology, type DecisionsTopologyOptions } from '../../pipeline/apps/decisions.ts';
import { TOPICS } from '../../pipeline/topics.ts';
import type { MessagePersisted, Mention, PresenceKind, PushDispatch, PushOutcome, TokenReport, UserSettings } from '../../processors/model/records.ts';

/** 2026-01-15 12:00:00 UTC. */
export const T0 = Date.UTC(2026, 0, 15, 12, 0, 0);
export const APP = 'im.demo';

/** `commitEveryInput` false: inputs between two `driver.commit()` calls share one commit (default true). */
export type HarnessOptions = Omit<DecisionsTopologyOptions, 'valueSerdes' | 'topicPrefix'> & { startMs?: number; commitEveryInput?: boolean };

export class DecisionsHarness {
  private seqs = new Map<string, number>();
  private constructor(
    readonly driver: TopologyTestDriver,
    private readonly t0: number,
  ) {}

  static create(options: HarnessOptions = {}): DecisionsHarness {
    const start = options.startMs ?? T0;
    const topology = buildDecisionsTopology({ ...options, valueSerdes: rawAvroValueSerdes() });
    const commitEveryInput = options.commitEveryInput ?? true;
    return new DecisionsHarness(new TopologyTestDriver(topology, { startWallClockMs: start, dlqTopic: TOPICS.dlq.name, commitEveryInput }), start);
  }

  /** Current time, ms after the start. */
  get t(): number {
    return this.driver.wallClockTimeMs() - this.t0;
  }

  get now(): number {
    return this.driver.wallClockTimeMs();
  }

  /** Moves the wall clock to `t` ms after the start, firing punctuators (in steps of `step` ms). */
  async advanceTo(t: number, step = 100): Promise<void> {
    while (this.t < t) await this.driver.advanceWallClockTime(Math.min(step, t - this.t));
  }

  async token(uid: string, device: string, vendor: string, extra: Partial<TokenReport> = {}): Promise<void> {
    const value: TokenReport = {
      uid,
      device_id: device,
      platform: vendor === 'apns' ? 'ios' : 'android',
      vendor,
      app_id: APP,
      token: `${vendor}-token-${device}`,
      reported_at: this.now,
      state: 'VALID',
      source: 'CLIENT',
      reason: null,
      manufacturer: null,
      ...extra,
    };
    await this.driver.pipeInput(TOPICS.tokens.name, uid, value, { timestamp: this.now });
  }

  async presence(uid: string, device: string, kind: PresenceKind, conv: string | null = null, seq: number | null = null): Promise<void> {
    await this.driver.pipeInput(TOPICS.presence.name, uid, { uid, device_id: device, kind, conv_id: conv, seq, at: this.now }, { timestamp: this.now });
  }

  /** A device that is connected and heartbeating now. */
  async online(uid: string, device: string): Promise<void> {
    await this.presence(uid, device, 'CONNECT');
    await this.presence(uid, device, 'HEARTBEAT');
  }

  /** Persists the next message of (uid, conv); seq increases per (uid, conv) unless given. */
  async message(uid: string, conv: string, extra: Partial<MessagePersisted> & { mention?: Mention } = {}): Promise<MessagePersisted> {
    const key = `${uid}|${conv}`;
    const seq = extra.seq ?? (this.seqs.get(key) ?? 0) + 1;
    this.seqs.set(key, Math.max(seq, this.seqs.get(key) ?? 0));
    const value: MessagePersisted = {
      msg_id: `m-${conv}-${seq}`,
      conv_id: conv,
      conv_type: 'SINGLE',
      seq,
      sender_uid: 'sender',
      uid,
      unread_cnt: seq,
      title: `Chat ${conv}`,
      summary: `secret words ${seq}`,
      sensitive: false,
      mention: 'NONE',
      persisted_at: this.now,
      app_id: APP,
      ...extra,
    };
    await this.driver.pipeInput(TOPICS.persisted.name, uid, value, { timestamp: this.now });
    return value;
  }

  async settings(uid: string, extra: Partial<UserSettings> = {}): Promise<void> {
    const value: UserSettings = { uid, time_zone: 'UTC', quiet_hours: null, muted_conversations: [], private_mode: false, updated_at: this.now, ...extra };
    await this.driver.pipeInput(TOPICS.settings.name, uid, value, { timestamp: this.now });
  }

  /** Dispatch records produced since the last call, as plain objects. */
  dispatches(): PushDispatch[] {
    return this.driver.readAllOutputs<string, PushDispatch>(TOPICS.dispatch.name).map((r) => plain(r.value));
  }

  outcomes(): PushOutcome[] {
    return this.driver.readAllOutputs<string, PushOutcome>(TOPICS.outcomes.name).map((r) => plain(r.value));
  }

  /** Both, drained together. */
  drain(): { dispatches: PushDispatch[]; outcomes: PushOutcome[] } {
    return { dispatches: this.dispatches(), outcomes: this.outcomes() };
  }

  async close(): Promise<void> {
    await this.driver.close();
  }
}

/** Runs `body` on a fresh harness and closes it, whatever happens. */
export async function withHarness(options: HarnessOptions, body: (h: DecisionsHarness) => Promise<void>): Promise<void> {
  const h = DecisionsHarness.create(options);
  try {
    await body(h);
  } finally {
    await h.close();
  }
}

export function plain<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

/** A compact view of a dispatch for table assertions: `device:conv#seq kind badge`. */
export function brief(d: PushDispatch): string {
  return `${d.device_id}:${d.conv_id}#${d.seq} ${d.kind}${d.silent ? ' silent' : ''} badge=${d.badge}`;
}

/** A compact view of an outcome: `device:conv#seq STATUS reason`. */
export function briefOutcome(o: PushOutcome): string {
  return `${o.device_id ?? '-'}:${o.conv_id}#${o.seq} ${o.status} ${o.reason}`;
}
