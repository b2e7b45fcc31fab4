/**
 * Time order across a task's inputs (topology/task-input.ts, docs/design.md "Time order"): a change
 * a user made just before a message — a mute, an unmute, quiet hours, a new token, a phone going
 * offline — governs that
 * message, even though the change and the message come from separate producers on separate topics
 * and the machine is busy. Hundreds of users, each with one change and then, 5–50 ms later by
 * timestamp and after the change was acknowledged, one message it governs; other users' messages
 * at up to 1,000/s beside them, and one core kept busy by a CPU hog.
 *
 * A runtime that takes records in fetch order fails it: a message sent just after a mute is pushed
 * anyway, or decided as if the phone were still online.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Producer } from 'kafkajs';
import { StreamsApp } from '../../topology/runtime.ts';
import { buildDecisionsTopology } from '../../pipeline/apps/decisions.ts';
import type { MessagePersisted, PresenceEvent, PushDispatch, PushOutcome, TokenReport, UserSettings } from '../../processors/model/records.ts';
import type { TopicKey } from '../../pipeline/topics.ts';
import { uniqueName } from '../support/stack.ts';
import { startCpuHog } from '../support/cpu-hog.ts';
import { createTestTopics, endpoints, kafka, produce, readDecoded, useAdmin, waitConsumed, type TestTopics } from '../pipeline/apps/stack-io.ts';

const APP = 'im.time-order';
const ZONE = 'UTC';
const USERS_PER_KIND = 120;
const GAPS_MS = [5, 10, 20, 50];
/** Users whose change and message are in flight at once. */
const CONCURRENCY = 32;
/** Other users' messages meanwhile, as a busy IM backend sends them: a batch every 10 ms. */
const NOISE_USERS = 200;
const NOISE_BATCH = 10;

type Kind = 'mute' | 'unmute' | 'quiet' | 'token' | 'offline';
const KINDS: readonly Kind[] = ['mute', 'unmute', 'quiet', 'token', 'offline'];

interface Case {
  uid: string;
  kind: Kind;
  gapMs: number;
}

const minuteOfDay = (at: number) => Math.floor((at % 86_400_000) / 60_000);

/** Quiet hours around `at` (±2 h, UTC), or far from it. */
const quietHours = (at: number, quiet: boolean) => {
  const m = minuteOfDay(at);
  return quiet ? { start_minute: (m + 1440 - 120) % 1440, end_minute: (m + 120) % 1440 } : { start_minute: (m + 360) % 1440, end_minute: (m + 480) % 1440 };
};

const settings = (uid: string, at: number, change: { muted?: boolean; quiet?: boolean }): UserSettings => ({
  uid,
  time_zone: ZONE,
  quiet_hours: quietHours(at, change.quiet ?? false),
  muted_conversations: change.muted ? [`conv-${uid}`] : [],
  private_mode: false,
  updated_at: at,
});

const token = (uid: string, at: number, value: string): TokenReport => ({
  uid,
  device_id: 'phone',
  platform: 'android',
  vendor: 'fcm',
  app_id: APP,
  token: value,
  reported_at: at,
  state: 'VALID',
  source: 'CLIENT',
  reason: null,
  manufacturer: 'samsung',
});

const presence = (uid: string, at: number, kind: PresenceEvent['kind']): PresenceEvent => ({ uid, device_id: 'phone', kind, conv_id: null, seq: null, at });

const message = (uid: string, at: number): MessagePersisted => ({
  msg_id: `${uid}-m1`,
  conv_id: `conv-${uid}`,
  conv_type: 'GROUP',
  seq: 1,
  sender_uid: 'sender',
  uid,
  unread_cnt: 1,
  title: 'Group',
  summary: `hello ${uid}`,
  sensitive: false,
  mention: 'NONE',
  persisted_at: at,
  app_id: APP,
});

/** The state before the change: unmuted and outside quiet hours, but muted for `unmute`; the old token. */
function initialState(c: Case, at: number): { settings: UserSettings; token: TokenReport } {
  return { settings: settings(c.uid, at, { muted: c.kind === 'unmute' }), token: token(c.uid, at, `old:${c.uid}`) };
}

/** The change, stamped `at`. */
function change(c: Case, at: number): { topic: TopicKey; value: UserSettings | TokenReport | PresenceEvent } {
  if (c.kind === 'token') return { topic: 'tokens', value: token(c.uid, at, `new:${c.uid}`) };
  if (c.kind === 'offline') return { topic: 'presence', value: presence(c.uid, at, 'DISCONNECT') };
  return { topic: 'settings', value: settings(c.uid, at, { muted: c.kind === 'mute', quiet: c.kind === 'quiet' }) };
}

/**
 * What the message must become under the changed state: pushed (to which token, judged how) or not.
 * A phone that just went offline is pushed at once; still online, it would have been held and pushed
 * as half-open (SUSPECT) after the hold window.
 */
function expected(c: Case): string {
  if (c.kind === 'mute' || c.kind === 'quiet') return 'not pushed';
  return `pushed to ${c.kind === 'token' ? 'new' : 'old'}:${c.uid} as OFFLINE`;
}

const admin = useAdmin();

async function sendOne(producer: Producer, t: TestTopics, key: TopicKey, value: { uid: string }, timestamp: number): Promise<void> {
  const topic = t.name(key);
  const bytes = await t.serdes(key).serialize(topic, value);
  await producer.send({ topic, acks: -1, messages: [{ key: value.uid, value: bytes, timestamp: String(timestamp) }] });
}

test(
  'a mute, unmute, quiet hours, new token or phone going offline stamped 5–50 ms before a message governs it, from separate producers on a busy machine',
  { timeout: 300_000 },
  async () => {
    const t = await createTestTopics(admin);
    // Kinds and gaps interleaved, so each meets the same load.
    const cases: Case[] = Array.from({ length: USERS_PER_KIND }, (_, i) =>
      KINDS.map((kind) => ({ uid: `${kind}-${i}`, kind, gapMs: GAPS_MS[i % GAPS_MS.length]! })),
    ).flat();
    const groupId = uniqueName('time-order-app');
    const app = new StreamsApp({
      applicationId: groupId,
      topology: buildDecisionsTopology({ valueSerdes: t.serdes, topicPrefix: t.prefix, onlineFilter: { holdWindowMs: 5_000 } }),
      brokers: endpoints.kafkaBrokers,
      dlqTopic: t.name('dlq'),
      processingGuarantee: 'exactly_once',
      commitIntervalMs: 100,
    });
    const changes = kafka.producer({ idempotent: true });
    const messages = kafka.producer({ idempotent: true });
    const others = kafka.producer({ idempotent: true });
    const hog = startCpuHog();
    try {
      await app.start();
      const setupAt = Date.now() - 60_000;
      const noiseUids = Array.from({ length: NOISE_USERS }, (_, i) => `noise-${i}`);
      await produce(
        t,
        'settings',
        cases.map((c) => ({ ...initialState(c, setupAt).settings, timestamp: setupAt })),
      );
      await produce(t, 'tokens', [
        ...cases.map((c) => ({ ...initialState(c, setupAt).token, timestamp: setupAt })),
        ...noiseUids.map((uid) => ({ ...token(uid, setupAt, `old:${uid}`), timestamp: setupAt })),
      ]);
      // The phones that go offline are online first: connected, with a fresh heartbeat.
      const onlineAt = Date.now();
      const online = cases.filter((c) => c.kind === 'offline').flatMap((c) => [presence(c.uid, onlineAt, 'CONNECT'), presence(c.uid, onlineAt, 'HEARTBEAT')]);
      await produce(
        t,
        'presence',
        online.map((p) => ({ ...p, timestamp: onlineAt })),
      );
      await waitConsumed(admin, groupId, [t.name('settings'), t.name('tokens'), t.name('presence')], 120_000);

      await Promise.all([changes.connect(), messages.connect(), others.connect()]);
      let next = 0;
      const race = async () => {
        for (let c = cases[next++]; c !== undefined; c = cases[next++]) {
          const at = Date.now();
          const { topic, value } = change(c, at);
          await sendOne(changes, t, topic, value, at);
          const wait = at + c.gapMs - Date.now();
          if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
          await sendOne(messages, t, 'persisted', message(c.uid, at + c.gapMs), at + c.gapMs);
        }
      };
      let racing = true;
      const noise = async () => {
        for (let seq = 1; racing; seq++) {
          const at = Date.now();
          const batch = noiseUids.slice((seq * NOISE_BATCH) % NOISE_USERS).slice(0, NOISE_BATCH);
          const topic = t.name('persisted');
          const values = await Promise.all(batch.map((uid) => t.serdes('persisted').serialize(topic, { ...message(uid, at), msg_id: `${uid}-n${seq}`, seq })));
          await others.send({ topic, messages: batch.map((uid, i) => ({ key: uid, value: values[i]!, timestamp: String(at) })) });
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
      };
      const noisy = noise();
      await Promise.all(Array.from({ length: CONCURRENCY }, race));
      racing = false;
      await noisy;

      const pushable = cases.filter((c) => expected(c) !== 'not pushed').length;
      const raced = (v: Array<{ msg_id: string }>) => v.filter((r) => r.msg_id.endsWith('-m1')).length;
      const dispatches = await readDecoded<PushDispatch>(t, 'dispatch', (v) => raced(v) >= pushable, 120_000);
      const outcomes = await readDecoded<PushOutcome>(t, 'outcomes', (v) => raced(v) >= cases.length - pushable, 60_000, 1_000);
      const judged = (d: PushDispatch) => /(?:^|;)on=([A-Z]+)/.exec(d.detail ?? '')?.[1] ?? 'unknown';
      const pushedTo = new Map(dispatches.filter((d) => d.msg_id.endsWith('-m1')).map((d) => [d.uid, `${d.channels[0]!.token} as ${judged(d)}`]));
      const suppressed = new Set(outcomes.filter((o) => o.msg_id.endsWith('-m1') && o.status === 'SUPPRESSED').map((o) => o.uid));

      const wrong: string[] = [];
      for (const c of cases) {
        const to = pushedTo.get(c.uid);
        const got = to !== undefined ? `pushed to ${to}` : suppressed.has(c.uid) ? 'not pushed' : 'no decision';
        if (got !== expected(c)) wrong.push(`${c.kind} +${c.gapMs} ms ${c.uid}: ${got}, expected ${expected(c)}`);
      }
      const byKind = Object.fromEntries(KINDS.map((k) => [k, wrong.filter((w) => w.startsWith(`${k} `)).length]));
      assert.deepEqual(
        { wrong: wrong.length, byKind, first: wrong.slice(0, 10) },
        { wrong: 0, byKind: Object.fromEntries(KINDS.map((k) => [k, 0])), first: [] },
        `messages decided under the state before the change they followed (of ${cases.length})`,
      );
    } finally {
      hog.stop();
      await Promise.allSettled([changes.disconnect(), messages.disconnect(), others.disconnect()]);
      await app.close();
    }
  },
);
