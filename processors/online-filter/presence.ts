/**
 * Per-device presence as the online-filter sees it, and the pure transitions the gateway's events
 * make. Online is judged by server heartbeats and downlink ACKs (docs/design.md,
 * "No push to a device that is online and ACKing"); the client's own BACKGROUND/EXIT report can
 * only make a push more likely, never suppress one.
 *
 * Every transition reports what it changed, so the stage writes a device's presence (one changelog
 * record) only on a real change of state, never just because a message passed; an ACK that only
 * confirms a message the stage already held is the stage's to keep in memory (online-filter.ts).
 */
import type { PresenceEvent } from '../model/records.ts';
import type { StoreSerde } from '../../topology/stores.ts';

export type AppState = 'FOREGROUND' | 'BACKGROUND' | 'EXIT';

export interface DevicePresence {
  connected: boolean;
  /** Epoch ms of the last heartbeat (or CONNECT); null when never seen. */
  lastHeartbeatAt: number | null;
  /** What the client last reported about its app; null when unknown. */
  appState: AppState | null;
  /** Set when a held message found no ACK in time (half-open); cleared by a later ACK. */
  suspiciousSince: number | null;
  /**
   * Epoch ms of the last push decided while the client reported BACKGROUND or EXIT: the background
   * cooldown runs from it. A push in any other state leaves it alone (it could not matter to a
   * decision, and moving it would cost a presence write for every push to an offline device).
   */
  lastPushAt: number | null;
  /** Highest seq ACKed or read per conversation, most recently raised last, bounded (RECENT_CONVS). */
  acked: Array<[string, number]>;
}

/** How many conversations' ACK/READ high-water marks a device keeps. */
export const RECENT_CONVS = 64;

export function emptyPresence(): DevicePresence {
  return { connected: false, lastHeartbeatAt: null, appState: null, suspiciousSince: null, lastPushAt: null, acked: [] };
}

/**
 * The presence of a device never seen, for reading only: deeply frozen, so that a decision that
 * would change it fails loudly instead of changing a shared object.
 */
export const NEVER_SEEN: Readonly<DevicePresence> = Object.freeze({ ...emptyPresence(), acked: Object.freeze([]) as unknown as Array<[string, number]> });

/** True when the device's app is in the background (the cooldown applies). */
export function inBackground(p: DevicePresence): boolean {
  return p.appState === 'BACKGROUND' || p.appState === 'EXIT';
}

/**
 * The presence store's serde: JSON. Values written before the holds got their own index carry a
 * `heldConvs` list; it is dropped on restore (the stage rebuilds that index from the holds store).
 */
export const presenceStoreSerde: StoreSerde<DevicePresence> = {
  serialize: (value) => Buffer.from(JSON.stringify(value)),
  deserialize: (data) => {
    const value = JSON.parse(data.toString('utf8')) as DevicePresence & { heldConvs?: unknown };
    delete value.heldConvs;
    return value;
  },
};

/** Highest seq ACKed or read for the conversation, or -1. */
export function ackedSeq(p: DevicePresence, convId: string): number {
  for (const [conv, seq] of p.acked) if (conv === convId) return seq;
  return -1;
}

/** Raises the conversation's ACK/READ high-water mark (never lowers it); false when it was already as high. */
export function recordAck(p: DevicePresence, convId: string, seq: number): boolean {
  const at = p.acked.findIndex(([conv]) => conv === convId);
  if (at >= 0 && p.acked[at]![1] >= seq) return false;
  if (at >= 0) p.acked.splice(at, 1);
  p.acked.push([convId, seq]);
  if (p.acked.length > RECENT_CONVS) p.acked.splice(0, p.acked.length - RECENT_CONVS);
  return true;
}

/**
 * What an event changed: nothing; only an ACK/READ high-water mark (`mark`); or the connection,
 * heartbeat, app state or suspicion (`state`, whether or not a mark moved too).
 */
export type PresenceChange = 'none' | 'mark' | 'state';

/**
 * Applies one gateway event to the device's presence (the holds are the processor's) and says what
 * it changed: a repeated CONNECT, a DISCONNECT of a disconnected device or an ACK below the mark
 * change nothing; a heartbeat that moves the heartbeat time changes the state.
 */
export function applyPresence(p: DevicePresence, event: PresenceEvent): PresenceChange {
  const { connected, lastHeartbeatAt, appState, suspiciousSince } = p;
  const ackRaised = applyEvent(p, event);
  if (p.connected !== connected || p.lastHeartbeatAt !== lastHeartbeatAt || p.appState !== appState || p.suspiciousSince !== suspiciousSince) return 'state';
  return ackRaised ? 'mark' : 'none';
}

/** The transition itself; true when an ACK/READ raised a high-water mark. */
function applyEvent(p: DevicePresence, event: PresenceEvent): boolean {
  switch (event.kind) {
    case 'CONNECT':
      p.connected = true;
      p.lastHeartbeatAt = Math.max(p.lastHeartbeatAt ?? event.at, event.at);
      if (p.appState === 'EXIT') p.appState = null;
      break;
    case 'HEARTBEAT':
      p.connected = true;
      p.lastHeartbeatAt = Math.max(p.lastHeartbeatAt ?? event.at, event.at);
      break;
    case 'DISCONNECT':
      p.connected = false;
      break;
    case 'FOREGROUND':
      p.appState = 'FOREGROUND';
      break;
    case 'BACKGROUND':
      p.appState = 'BACKGROUND';
      break;
    case 'EXIT':
      p.appState = 'EXIT';
      p.connected = false;
      break;
    case 'ACK':
      // A fresh downlink ACK proves the connection works: it clears a half-open suspicion.
      if (p.suspiciousSince !== null && event.at >= p.suspiciousSince) p.suspiciousSince = null;
      return event.conv_id !== null && event.seq !== null && recordAck(p, event.conv_id, event.seq);
    case 'READ':
      return event.conv_id !== null && event.seq !== null && recordAck(p, event.conv_id, event.seq);
  }
  return false;
}

/**
 * The row of the table in docs/design.md, "online-filter", that a message at `at` falls into for
 * this device.
 */
export type DeviceDecision = 'background' | 'offline' | 'suspect' | 'online';

export function decide(p: DevicePresence, at: number, heartbeatTimeoutMs: number): DeviceDecision {
  if (inBackground(p)) return 'background';
  const heartbeatFresh = p.lastHeartbeatAt !== null && at - p.lastHeartbeatAt <= heartbeatTimeoutMs;
  if (!p.connected || !heartbeatFresh) return 'offline';
  if (p.suspiciousSince !== null) return 'suspect';
  return 'online';
}
