/**
 * The online-filter stage (docs/design.md, "online-filter"): per device of the recipient, decide
 * whether a persisted message must wake the device. Inputs (all keyed by uid): persisted messages,
 * gateway presence events, token reports. Outputs: push candidates (one per device to wake, plus
 * READ markers for the merge stage) and outcomes for every message that is not pushed.
 *
 * | condition                                   | decision        | action                                      |
 * | heartbeat ≤ 90 s, last downlink ACK fine     | online          | hold ≤ hold window; ACK/READ seq ≥ cancels  |
 * | heartbeat fine, no ACK within hold window    | half-open       | push, mark suspicious until a fresh ACK     |
 * | no connection                               | offline         | push                                        |
 * | client reported BACKGROUND / EXIT            | offline         | push; no second push within 10 s            |
 *
 * Changelog writes: a device's presence is written only when it changes (an event that moves it, a
 * half-open suspicion, a push to a background device starting its cooldown), never because a
 * message passed; a hold is one record per (uid, device, conv) and commit (holds.ts). An ACK that
 * confirms a message held here (the usual path of an online device) raises the device's ACK mark in
 * memory only: the hold's removal is what a restart needs, and it is changelogged. The mark reaches
 * the changelog with the device's next written change; a restore before that has the older mark,
 * which matters only to a second copy of that same persisted record (it would be held, then pushed
 * as half-open, instead of suppressed). An ACK ahead of its message (the gateway delivered before
 * the persisted record got here, or this task read the presence partition first) is what suppresses
 * that message, so its mark must survive a restart until the message has been seen: it is written
 * at the next commit (`flush`) unless its message came and was suppressed before then.
 */
import { withStores, type Processor, type ProcessorContext, type ProcessorSupplier, type StreamRecord } from '../../topology/api.ts';
import { keyValueStore, timerStore, type KeyValueStore, type TimerStore } from '../../topology/stores.ts';
import { compositeKey } from '../model/keys.ts';
import type { Ingested } from '../model/inputs.ts';
import { decisionOutcome, detailString, type DecisionReason } from '../model/outcomes.ts';
import type { MessagePersisted, PresenceDecision, PresenceEvent, PushCandidate, PushOutcome } from '../model/records.ts';
import { applyTokenReport, pushableDevices, type UserDevices } from './devices.ts';
import { Holds, type HoldEntry } from './holds.ts';
import { compileOnlineFilterOptions, type OnlineFilterConfig, type OnlineFilterOptions } from './options.ts';
import { ackedSeq, applyPresence, decide, emptyPresence, inBackground, NEVER_SEEN, presenceStoreSerde, type DevicePresence } from './presence.ts';
import { withFields } from '../../common/objects.ts';

export type { HoldEntry } from './holds.ts';

type Out = PushCandidate | PushOutcome;

/**
 * Creates the online-filter processor supplier, which declares the stage's stores (devices,
 * presence, holds and their timers, named by `options.stores`). Options are validated here, once;
 * an invalid value throws a ConfigError naming its PUSH_* key.
 */
export function onlineFilter(options: OnlineFilterOptions = {}): ProcessorSupplier<string, Ingested, string, Out> {
  const config = compileOnlineFilterOptions(options);
  const names = config.stores;
  return withStores(
    () => new OnlineFilterProcessor(config),
    [
      keyValueStore(names.devices),
      keyValueStore(names.presence, presenceStoreSerde),
      keyValueStore(names.holds),
      timerStore(names.holdTimers, { changelog: false }),
    ],
  );
}

class OnlineFilterProcessor implements Processor<string, Ingested, string, Out> {
  private ctx!: ProcessorContext<string, Out>;
  private devices!: KeyValueStore<UserDevices>;
  private presence!: KeyValueStore<DevicePresence>;
  private holds!: Holds;
  /** Set by every change to the presence being decided; `savePresence` writes it only then. */
  private presenceChanged = false;
  /**
   * ACK marks raised ahead of their message since the last commit and not written yet: presence key
   * → conversation → the ACKed seq. `flush` writes the presence of every key still here.
   */
  private readonly marksAhead = new Map<string, Map<string, number>>();

  constructor(private readonly config: OnlineFilterConfig) {}

  init(ctx: ProcessorContext<string, Out>): void {
    this.ctx = ctx;
    this.devices = ctx.getStateStore(this.config.stores.devices);
    this.presence = ctx.getStateStore(this.config.stores.presence);
    this.holds = new Holds(ctx.getStateStore(this.config.stores.holds), ctx.getStateStore<TimerStore>(this.config.stores.holdTimers));
    this.holds.rebuild();
    ctx.schedule(this.config.punctuateIntervalMs, 'wall-clock', (now) => this.releaseDue(now), { nextDueMs: () => this.holds.nextDueMs() });
  }

  /** Before a commit: every ACK mark still ahead of its message goes to the changelog with its presence. */
  flush(): Promise<void> {
    for (const key of this.marksAhead.keys()) {
      const p = this.presence.get(key);
      if (p) this.presence.put(key, p);
    }
    this.marksAhead.clear();
    return Promise.resolve();
  }

  process(record: StreamRecord<string, Ingested>): void {
    const input = record.value;
    switch (input.kind) {
      case 'token': {
        const devices = this.devices.get(input.value.uid) ?? {};
        if (!applyTokenReport(devices, input.value)) return;
        if (Object.keys(devices).length === 0) this.devices.delete(input.value.uid);
        else this.devices.put(input.value.uid, devices);
        return;
      }
      case 'tombstone':
        // The user's tokens are gone (push.tokens, keyed by uid): no devices to wake any more.
        if (input.table === 'token' && this.devices.get(input.uid)) this.devices.delete(input.uid);
        return;
      case 'presence':
        return this.onPresence(input.value);
      case 'message':
        return this.onMessage(input.value);
      default:
        throw new Error(`online-filter: unexpected ${input.kind} record`);
    }
  }

  /** Releases every hold window due by the wall clock; false when none was (the runtime then has nothing to commit for it). */
  private releaseDue(now: number): boolean {
    const due = this.holds.popDue(now);
    for (const { key } of due) this.releaseHold(key, now);
    return due.length > 0;
  }

  private onMessage(message: MessagePersisted): void {
    const at = message.persisted_at;
    const targets = pushableDevices(this.devices.get(message.uid), message.app_id);
    if (targets.length === 0) {
      this.outcome('DROPPED', 'no_token', message, null, at);
      return;
    }
    for (const deviceId of targets) {
      const key = compositeKey(message.uid, deviceId);
      // A device never seen is read, never changed: only a presence event creates one (and a hold
      // needs an online device, so a device without presence has no holds to release either).
      const p = this.presence.get(key) ?? NEVER_SEEN;
      this.presenceChanged = false;
      this.releaseDeviceHolds(message.uid, deviceId, key, p, at);
      this.decide(message, deviceId, key, p, at);
      this.savePresence(key, p);
    }
  }

  private decide(message: MessagePersisted, deviceId: string, key: string, p: DevicePresence, at: number): void {
    if (ackedSeq(p, message.conv_id) >= message.seq) {
      // The gateway delivered (or the user read) this message before its persisted record got here.
      this.outcome('SUPPRESSED', 'online_ack', message, deviceId, at, detailString({ hb: heartbeatAge(p, at), ack: 'before' }));
      this.markSeen(key, message.conv_id, message.seq);
      return;
    }
    switch (decide(p, at, this.config.heartbeatTimeoutMs)) {
      case 'background':
        if (p.lastPushAt !== null && at - p.lastPushAt < this.config.backgroundCooldownMs) {
          this.outcome('SUPPRESSED', 'background_cooldown', message, deviceId, at);
        } else {
          this.push(message, deviceId, 'BACKGROUND', p, at);
        }
        return;
      case 'offline':
        return this.push(message, deviceId, 'OFFLINE', p, at);
      case 'suspect':
        return this.push(message, deviceId, 'SUSPECT', p, at);
      case 'online':
        return this.hold(message, deviceId, heartbeatAge(p, at), at);
    }
  }

  private onPresence(event: PresenceEvent): void {
    const key = compositeKey(event.uid, event.device_id);
    const stored = this.presence.get(key);
    const p = stored ?? emptyPresence();
    this.presenceChanged = false;
    this.releaseDeviceHolds(event.uid, event.device_id, key, p, event.at);
    const change = applyPresence(p, event);
    if (event.kind === 'ACK' && event.conv_id !== null && event.seq !== null) {
      const confirmsHeld = this.cancelHolds(event.uid, event.device_id, event.conv_id, event.seq, 'online_ack', event.at) === event.seq;
      if (change === 'mark' && stored && !confirmsHeld) this.markAhead(key, event.conv_id, event.seq);
      if (change === 'state' || (change === 'mark' && !stored)) this.presenceChanged = true;
    } else if (change !== 'none') {
      this.presenceChanged = true;
    }
    this.savePresence(key, p);
    if (event.kind === 'READ' && event.conv_id !== null && event.seq !== null) this.onRead(event, event.conv_id, event.seq);
  }

  /** A READ means the user has read the conversation: every device's holds up to seq are cancelled. */
  private onRead(event: PresenceEvent, convId: string, seq: number): void {
    const devices = this.devices.get(event.uid) ?? {};
    for (const deviceId of new Set([...Object.keys(devices), event.device_id])) {
      const key = compositeKey(event.uid, deviceId);
      const p = this.presence.get(key);
      if (!p) continue;
      this.presenceChanged = false;
      if (deviceId !== event.device_id) this.releaseDeviceHolds(event.uid, deviceId, key, p, event.at);
      this.cancelHolds(event.uid, deviceId, convId, seq, 'read', event.at);
      if (deviceId !== event.device_id && applyPresence(p, withFields(event, { device_id: deviceId })) !== 'none') this.presenceChanged = true;
      this.savePresence(key, p);
    }
    const read: PushCandidate = {
      kind: 'READ',
      uid: event.uid,
      device_id: event.device_id,
      conv_id: convId,
      seq,
      msg_id: '',
      conv_type: 'SINGLE',
      sender_uid: '',
      unread_cnt: 0,
      title: '',
      summary: '',
      sensitive: false,
      mention: 'NONE',
      persisted_at: 0,
      app_id: '',
      presence: 'READ',
      decided_at: event.at,
    };
    this.ctx.forward({ key: event.uid, value: read, timestamp: event.at }, this.config.outputs.candidates);
  }

  /** An ACK raised the device's mark for a message not seen yet: written at the next commit unless the message comes first. */
  private markAhead(key: string, convId: string, seq: number): void {
    const convs = this.marksAhead.get(key) ?? new Map<string, number>();
    convs.set(convId, seq);
    this.marksAhead.set(key, convs);
  }

  /** The message `seq` of the conversation was seen (and every earlier one, in partition order): its mark need not be written. */
  private markSeen(key: string, convId: string, seq: number): void {
    const convs = this.marksAhead.get(key);
    if (convs?.get(convId) !== seq) return;
    convs.delete(convId);
    if (convs.size === 0) this.marksAhead.delete(key);
  }

  private savePresence(key: string, p: DevicePresence): void {
    if (this.presenceChanged) this.presence.put(key, p);
    this.presenceChanged = false;
  }

  /** `hb`: the heartbeat's age when the device was judged online, kept for the outcome's detail. */
  private hold(message: MessagePersisted, deviceId: string, hb: number | null, at: number): void {
    const key = compositeKey(message.uid, deviceId, message.conv_id);
    const held = this.holds.get(key);
    if (held?.messages.some((h) => h.message.seq === message.seq)) return; // a redelivered input: already held
    // The hold runs from when the message is seen, not from when it was persisted: while the stage
    // catches up on a backlog, a message must not be released as half-open before its ACK (which
    // lags just as much) has been read.
    const dueAt = Math.max(at, this.ctx.wallClockTimeMs()) + this.config.holdWindowMs;
    const entry: HoldEntry = held ?? { uid: message.uid, device_id: deviceId, conv_id: message.conv_id, messages: [] };
    entry.messages.push(hb === null ? { message, due_at: dueAt } : { message, due_at: dueAt, hb });
    this.holds.put(key, entry);
  }

  /** Cancels this device's held messages of the conversation with seq ≤ `seq`; returns the highest seq cancelled, or -1. */
  private cancelHolds(uid: string, deviceId: string, convId: string, seq: number, reason: DecisionReason, at: number): number {
    const key = compositeKey(uid, deviceId, convId);
    const entry = this.holds.get(key);
    if (!entry) return -1;
    const keep = entry.messages.filter((h) => h.message.seq > seq);
    if (keep.length === entry.messages.length) return -1;
    let highest = -1;
    for (const h of entry.messages) {
      if (h.message.seq > seq) continue;
      highest = Math.max(highest, h.message.seq);
      const detail = detailString({ hb: h.hb, hold: this.config.holdWindowMs, ack: at - h.message.persisted_at });
      this.outcome('SUPPRESSED', reason, h.message, deviceId, at, detail);
    }
    this.storeHold(key, entry, keep);
    return highest;
  }

  /** Event-time consistency: before a device's next event, release its holds due by that event's time. */
  private releaseDeviceHolds(uid: string, deviceId: string, deviceKey: string, p: DevicePresence, at: number): void {
    const convs = this.holds.heldConvs(deviceKey);
    for (const convId of convs) {
      const key = compositeKey(uid, deviceId, convId);
      const due = this.holds.dueTime(key);
      if (due !== undefined && due <= at) this.releaseHoldOf(key, at, p);
    }
  }

  /** A timer fired: the hold's due messages found no ACK in time. */
  private releaseHold(key: string, now: number): void {
    const entry = this.holds.get(key);
    if (!entry) return;
    const pKey = compositeKey(entry.uid, entry.device_id);
    const p = this.presence.get(pKey) ?? emptyPresence();
    this.presenceChanged = false;
    this.releaseHoldOf(key, now, p);
    this.savePresence(pKey, p);
  }

  private releaseHoldOf(key: string, now: number, p: DevicePresence): void {
    const entry = this.holds.get(key);
    if (!entry) return;
    const due = entry.messages.filter((h) => h.due_at <= now).sort((a, b) => a.message.seq - b.message.seq);
    for (const h of due) {
      // Half-open: the connection looks alive but the ACK never came. Push, and push at once from now on.
      if (p.suspiciousSince === null) {
        p.suspiciousSince = h.due_at;
        this.presenceChanged = true;
      }
      this.push(h.message, entry.device_id, 'HALF_OPEN', p, h.due_at);
    }
    this.storeHold(
      key,
      entry,
      entry.messages.filter((h) => h.due_at > now),
    );
  }

  private storeHold(key: string, entry: HoldEntry, keep: HoldEntry['messages']): void {
    if (keep.length === 0) this.holds.delete(key, entry);
    else this.holds.put(key, withFields(entry, { messages: keep }));
  }

  private push(message: MessagePersisted, deviceId: string, presence: PresenceDecision, p: DevicePresence, at: number): void {
    if (inBackground(p) && p.lastPushAt !== at) {
      p.lastPushAt = at;
      this.presenceChanged = true;
    }
    const candidate: PushCandidate = {
      kind: 'TRIGGER',
      uid: message.uid,
      device_id: deviceId,
      conv_id: message.conv_id,
      seq: message.seq,
      msg_id: message.msg_id,
      conv_type: message.conv_type,
      sender_uid: message.sender_uid,
      unread_cnt: message.unread_cnt,
      title: message.title,
      summary: message.summary,
      sensitive: message.sensitive,
      mention: message.mention,
      persisted_at: message.persisted_at,
      app_id: message.app_id,
      presence,
      decided_at: at,
      hb: heartbeatAge(p, at),
    };
    this.ctx.forward({ key: message.uid, value: candidate, timestamp: at }, this.config.outputs.candidates);
  }

  private outcome(
    status: 'SUPPRESSED' | 'DROPPED',
    reason: DecisionReason,
    message: MessagePersisted,
    deviceId: string | null,
    at: number,
    detail: string | null = null,
  ): void {
    const value = decisionOutcome('online-filter', status, reason, message, at, detail, { device_id: deviceId });
    this.ctx.forward({ key: message.uid, value, timestamp: at }, this.config.outputs.outcomes);
  }
}

/** Ms since the device's last heartbeat (or CONNECT) at `at`; null when it never sent one. */
function heartbeatAge(p: DevicePresence, at: number): number | null {
  return p.lastHeartbeatAt === null ? null : Math.max(0, at - p.lastHeartbeatAt);
}
