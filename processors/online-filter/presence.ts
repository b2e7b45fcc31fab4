/**
 * Per-device presence as the online-filter sees it, and the pure transitions the gateway's events
 * make. Online is judged by server heartbeats and downlink ACKs (invariant 3); the client's own
 * BACKGROUND/EXIT report can only make a push more likely, never suppress one.
 */
import type { PresenceEvent } from '../shared/records.ts';

export type AppState = 'FOREGROUND' | 'BACKGROUND' | 'EXIT';

export interface DevicePresence {
  connected: boolean;
  /** Epoch ms of the last heartbeat (or CONNECT); null when never seen. */
  lastHeartbeatAt: number | null;
  /** What the client last reported about its app; null when unknown. */
  appState: AppState | null;
  /** Set when a held message found no ACK in time (half-open); cleared by a later ACK. */
  suspiciousSince: number | null;
  /** Epoch ms of the last push decided for this device (background cooldown). */
  lastPushAt: number | null;
  /** Highest seq ACKed or read per conversation, most recent last, bounded (RECENT_CONVS). */
  acked: Array<[string, number]>;
  /** Conversations with messages held for this device. */
  heldConvs: string[];
}

/** How many conversations' ACK/READ high-water marks a device keeps. */
export const RECENT_CONVS = 64;

export function emptyPresence(): DevicePresence {
  return { connected: false, lastHeartbeatAt: null, appState: null, suspiciousSince: null, lastPushAt: null, acked: [], heldConvs: [] };
}

/** Highest seq ACKed or read for the conversation, or -1. */
export function ackedSeq(p: DevicePresence, convId: string): number {
  for (const [conv, seq] of p.acked) if (conv === convId) return seq;
  return -1;
}

/** Raises the conversation's ACK/READ high-water mark (never lowers it). */
export function recordAck(p: DevicePresence, convId: string, seq: number): void {
  const previous = ackedSeq(p, convId);
  p.acked = p.acked.filter(([conv]) => conv !== convId);
  p.acked.push([convId, Math.max(previous, seq)]);
  if (p.acked.length > RECENT_CONVS) p.acked.splice(0, p.acked.length - RECENT_CONVS);
}

/** Applies one gateway event to the device's presence (ACK/READ bookkeeping of holds is the processor's). */
export function applyPresence(p: DevicePresence, event: PresenceEvent): void {
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
      if (event.conv_id !== null && event.seq !== null) recordAck(p, event.conv_id, event.seq);
      break;
    case 'READ':
      if (event.conv_id !== null && event.seq !== null) recordAck(p, event.conv_id, event.seq);
      break;
  }
}

/** The row of DESIGN §2.1 a message at `at` falls into for this device. */
export type DeviceDecision = 'background' | 'offline' | 'suspect' | 'online';

export function decide(p: DevicePresence, at: number, heartbeatTimeoutMs: number): DeviceDecision {
  if (p.appState === 'BACKGROUND' || p.appState === 'EXIT') return 'background';
  const heartbeatFresh = p.lastHeartbeatAt !== null && at - p.lastHeartbeatAt <= heartbeatTimeoutMs;
  if (!p.connected || !heartbeatFresh) return 'offline';
  if (p.suspiciousSince !== null) return 'suspect';
  return 'online';
}
