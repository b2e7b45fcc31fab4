/**
 * The online-filter after a restart: its hold timers have no changelog, so a task restored from the
 * holds and presence changelogs alone must still release each hold at its due time, and state
 * written by the previous version (a `heldConvs` list in the presence, a hold-timers changelog)
 * must still restore. Runs the real processor in StreamTasks (the code the runtime runs), handing
 * the changelog records of the first task to the stores of the second as a restore from Kafka would.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TopologyBuilder } from '../../../topology/builder.ts';
import { jsonSerde, stringSerde } from '../../../topology/serdes.ts';
import { type OutputRecord } from '../../../topology/task.ts';
import { onlineFilter } from '../../../processors/online-filter/online-filter.ts';
import { ingest } from '../../../processors/model/inputs.ts';
import { ONLINE_FILTER_STORE_NAMES as OF } from '../../../processors/online-filter/options.ts';
import type { MessagePersisted, PresenceEvent, PushCandidate, TokenReport } from '../../../processors/model/records.ts';
import type { StreamTask } from '../../../topology/task.ts';
import { standaloneTask } from '../../support/task.ts';

const T0 = Date.UTC(2026, 0, 15, 12, 0, 0);
const TOPICS = { persisted: 'of-restore.persisted', presence: 'of-restore.presence', tokens: 'of-restore.tokens' };

function filterTask(clock: { now: number }): StreamTask {
  const b = new TopologyBuilder();
  const kinds = { persisted: 'message', presence: 'presence', tokens: 'token' } as const;
  for (const [name, topic] of Object.entries(TOPICS)) {
    b.addSource(`${name}-source`, { topics: [topic], keySerde: stringSerde, valueSerde: jsonSerde<unknown>() });
    b.addProcessor(`${name}-ingest`, ingest(kinds[name as keyof typeof kinds]), `${name}-source`);
  }
  b.addProcessor(
    'online-filter',
    onlineFilter({ outputs: { candidates: 'candidates-sink', outcomes: 'outcomes-sink' } }),
    'persisted-ingest',
    'presence-ingest',
    'tokens-ingest',
  )
    .addSink('candidates-sink', { topic: 'candidates', keySerde: stringSerde, valueSerde: jsonSerde<PushCandidate>() }, 'online-filter')
    .addSink('outcomes-sink', { topic: 'outcomes', keySerde: stringSerde, valueSerde: jsonSerde<unknown>() }, 'online-filter');
  const topology = b.build();
  return standaloneTask(topology, 'of-restore', () => clock.now);
}

const token: TokenReport = {
  uid: 'u1',
  device_id: 'd1',
  platform: 'android',
  vendor: 'fcm',
  app_id: 'im.demo',
  token: 'fcm-d1',
  reported_at: T0,
  state: 'VALID',
  source: 'CLIENT',
  reason: null,
  manufacturer: null,
};
const presence = (kind: PresenceEvent['kind'], at: number, conv: string | null = null, seq: number | null = null): PresenceEvent => ({
  uid: 'u1',
  device_id: 'd1',
  kind,
  conv_id: conv,
  seq,
  at,
});
const message = (conv: string, seq: number, at: number): MessagePersisted => ({
  msg_id: `m-${conv}-${seq}`,
  conv_id: conv,
  conv_type: 'SINGLE',
  seq,
  sender_uid: 's',
  uid: 'u1',
  unread_cnt: seq,
  title: 't',
  summary: 's',
  sensitive: false,
  mention: 'NONE',
  persisted_at: at,
  app_id: 'im.demo',
});

/** Candidates the task sends when the wall clock reaches `at`: `conv#seq presence`. */
async function releasedAt(task: StreamTask, clock: { now: number }, at: number): Promise<string[]> {
  clock.now = at;
  await task.punctuateWallClock(at);
  const decode = (r: OutputRecord) => JSON.parse(r.value!.toString('utf8')) as PushCandidate;
  return task
    .drainOutputs()
    .records.filter((r) => r.topic === 'candidates')
    .map(decode)
    .map((c) => `${c.conv_id}#${c.seq} ${c.presence}`);
}

test('a task restored from the holds and presence changelogs releases each hold at its due time, once', async () => {
  const clock = { now: T0 };
  const first = filterTask(clock);
  await first.init();
  let offset = 0;
  const feed = async (topic: string, value: object, at: number) => {
    clock.now = at;
    await first.process({
      topic,
      partition: 0,
      offset: String(offset++),
      key: Buffer.from('u1'),
      value: Buffer.from(JSON.stringify(value)),
      timestamp: at,
      headers: {},
    });
  };
  await feed(TOPICS.tokens, token, T0);
  await feed(TOPICS.presence, presence('CONNECT', T0), T0);
  await feed(TOPICS.presence, presence('HEARTBEAT', T0), T0);
  await feed(TOPICS.persisted, message('c1', 1, T0 + 1_000), T0 + 1_000); // held until T0 + 11 s
  await feed(TOPICS.persisted, message('c2', 1, T0 + 3_000), T0 + 3_000); // held until T0 + 13 s
  const { changelog } = first.drainOutputs();
  const topics = new Set(changelog.map((r) => r.topic));
  assert.ok(!topics.has(`of-restore-${OF.holdTimers}-changelog`), 'the hold timers are not changelogged');

  // The worker restarts: a new task, stores restored from the changelog, then init.
  const second = filterTask(clock);
  for (const r of changelog) second.stores.get(r.topic.slice('of-restore-'.length, -'-changelog'.length))!.restore(r.key!.toString('utf8'), r.value);
  await second.init();
  assert.deepEqual(await releasedAt(second, clock, T0 + 10_900), [], 'nothing is due before the first hold ends');
  assert.deepEqual(await releasedAt(second, clock, T0 + 11_000), ['c1#1 HALF_OPEN']);
  assert.deepEqual(await releasedAt(second, clock, T0 + 13_000), ['c2#1 HALF_OPEN']);
  assert.deepEqual(await releasedAt(second, clock, T0 + 60_000), [], 'each hold is released once');
});

test('state written before the holds had their own index still restores: presence with heldConvs, the old hold-timers changelog', async () => {
  const clock = { now: T0 + 2_000 };
  const task = filterTask(clock);
  const restore = (store: string, key: unknown[], value: unknown) => task.stores.get(store)!.restore(JSON.stringify(key), Buffer.from(JSON.stringify(value)));
  // What the previous version wrote for a device holding c1#1 since T0 + 1 s (its timer in a store of its own).
  task.stores.get(OF.devices)!.restore('u1', Buffer.from(JSON.stringify({ d1: { 'im.demo': { fcm: '0123456789abcdef' } } })));
  restore(OF.presence, ['u1', 'd1'], {
    connected: true,
    lastHeartbeatAt: T0,
    appState: null,
    suspiciousSince: null,
    lastPushAt: null,
    acked: [],
    heldConvs: ['c1'],
  });
  restore(OF.holds, ['u1', 'd1', 'c1'], {
    uid: 'u1',
    device_id: 'd1',
    conv_id: 'c1',
    messages: [{ message: message('c1', 1, T0 + 1_000), due_at: T0 + 11_000 }],
  });
  assert.equal(task.stores.get(OF.holdTimers)!.changelogged, false, 'the old hold-timers changelog is not read: its due times come from the holds');
  await task.init();
  const p = (task.stores.get(OF.presence) as unknown as { get(k: string): object }).get(JSON.stringify(['u1', 'd1']));
  assert.ok(p && !('heldConvs' in p), 'the restored presence drops the old heldConvs list');
  assert.deepEqual(await releasedAt(task, clock, T0 + 10_900), []);
  assert.deepEqual(await releasedAt(task, clock, T0 + 11_000), ['c1#1 HALF_OPEN']);
});
