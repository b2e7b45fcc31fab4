/**
 * The merge stage after a restart: its window timers are not changelogged, so a task restored from
 * the windows changelog alone must still close every window at its time, with the state it had.
 * Runs the real merge processor in StreamTasks (the code the runtime runs), handing the changelog
 * records of the first task to the stores of the second as a restore from Kafka would.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TopologyBuilder } from '../../../topology/builder.ts';
import { jsonSerde, stringSerde } from '../../../topology/serdes.ts';
import { type OutputRecord } from '../../../topology/task.ts';
import { merge } from '../../../processors/merge/merge.ts';
import type { KeyValueStore } from '../../../topology/stores.ts';
import type { PresenceDecision, PushCandidate, PushMerged, PushOutcome } from '../../../processors/model/records.ts';
import { carry, type ConvWindows } from '../../../processors/merge/window.ts';
import { convWindowsStoreSerde, decodeConvWindows, dueOfEncoded, encodeConvWindows } from '../../../processors/merge/window-codec.ts';
import type { StreamTask } from '../../../topology/task.ts';
import { standaloneTask } from '../../support/task.ts';

const T0 = Date.UTC(2026, 0, 15, 12, 0, 0);
const IN = 'merge-restore.candidates';

function mergeTask(clock: { now: number }): StreamTask {
  const topology = new TopologyBuilder()
    .addSource('candidates-source', { topics: [IN], keySerde: stringSerde, valueSerde: jsonSerde<PushCandidate>() })
    .addProcessor('merge', merge({ mode: 'leading', windowMs: 5_000, outputs: { merged: 'merged-sink', outcomes: 'outcomes-sink' } }), 'candidates-source')
    .addSink('merged-sink', { topic: 'merged', keySerde: stringSerde, valueSerde: jsonSerde<PushMerged>() }, 'merge')
    .addSink('outcomes-sink', { topic: 'outcomes', keySerde: stringSerde, valueSerde: jsonSerde<PushOutcome>() }, 'merge')
    .build();
  return standaloneTask(topology, 'merge-restore', () => clock.now);
}

function trigger(uid: string, conv: string, device: string, seq: number, at: number): PushCandidate {
  return {
    kind: 'TRIGGER',
    uid,
    device_id: device,
    conv_id: conv,
    seq,
    msg_id: `m${seq}`,
    conv_type: 'GROUP',
    sender_uid: 'u9',
    unread_cnt: seq,
    title: 'Team "α"',
    summary: `message ${seq} with a \\ and a | and 中文`,
    sensitive: false,
    mention: seq === 2 ? 'DIRECT' : 'NONE',
    persisted_at: at,
    app_id: 'im.demo',
    presence: 'OFFLINE',
    decided_at: at,
  };
}

const decode = (r: OutputRecord) => JSON.parse(r.value!.toString('utf8')) as PushMerged;

test('a task restored from the windows changelog closes each window at its time with the state it had', async () => {
  const clock = { now: T0 };
  const first = mergeTask(clock);
  await first.init();
  let offset = 0;
  const feed = async (c: PushCandidate) => {
    clock.now = c.decided_at;
    await first.process({
      topic: IN,
      partition: 0,
      offset: String(offset++),
      key: Buffer.from(c.uid),
      value: Buffer.from(JSON.stringify(c)),
      timestamp: c.decided_at,
      headers: {},
    });
  };
  // c1 on two devices (d1 opens at T0, d2 at T0+2s), c2 on one device; triggers merged into each window.
  await feed(trigger('u1', 'c1', 'd1', 1, T0));
  await feed(trigger('u1', 'c1', 'd1', 2, T0 + 1_000));
  await feed(trigger('u1', 'c1', 'd1', 3, T0 + 1_500));
  await feed(trigger('u1', 'c1', 'd2', 3, T0 + 2_000));
  await feed(trigger('u1', 'c1', 'd2', 4, T0 + 2_500));
  await feed(trigger('u2', 'c2', 'd3', 7, T0 + 3_000));
  const { changelog } = first.drainOutputs();
  assert.deepEqual([...new Set(changelog.map((r) => r.topic))], ['merge-restore-merge-windows-changelog'], 'only the windows store is changelogged');

  // The worker restarts: a new task, stores restored from the changelog, then init.
  const second = mergeTask(clock);
  for (const r of changelog) second.stores.get('merge-windows')!.restore(r.key!.toString('utf8'), r.value);
  await second.init();
  const trailing = async (at: number) => {
    clock.now = at;
    await second.punctuateWallClock(at);
    return second
      .drainOutputs()
      .records.filter((r) => r.topic === 'merged')
      .map(decode)
      .map((m) => `${m.device_id}:${m.conv_id}#${m.seq} ${m.kind} x${m.merged_count} ${m.mention} ${m.title} | ${m.summary} @${m.decided_at - T0}`);
  };
  assert.deepEqual(await trailing(T0 + 4_900), [], 'nothing is due before the first window ends');
  assert.deepEqual(await trailing(T0 + 5_000), [`d1:c1#3 TRAILING x2 DIRECT Team "α" | message 3 with a \\ and a | and 中文 @5000`]);
  assert.deepEqual(await trailing(T0 + 7_100), [`d2:c1#4 TRAILING x1 NONE Team "α" | message 4 with a \\ and a | and 中文 @7000`]);
  assert.deepEqual(await trailing(T0 + 60_000), [], 'a window with only its leading push closes silently');
  assert.deepEqual(await trailing(T0 + 70_000), []);
  assert.equal((second.stores.get('merge-windows') as unknown as KeyValueStore<unknown>).size, 0, 'closed windows are forgotten after the retention');
});

test('window state round-trips through its stored form, including values a newer schema may add', () => {
  const conv: ConvWindows = new Map([
    [
      'd1',
      {
        open: true,
        until: T0 + 5_000,
        pushed_seq: 3,
        count: 2,
        mention: 'ALL',
        read_seq: -1,
        carried: { ...carry(trigger('u1', 'c1', 'd1', 5, T0 + 900)), presence: 'FUTURE_KIND' as PresenceDecision },
      },
    ],
    ['d|"2"', { open: false, until: T0 + 60_000, pushed_seq: 9, count: 0, mention: 'NONE', read_seq: 9, carried: null }],
  ]);
  const encoded = encodeConvWindows(conv);
  assert.deepEqual(decodeConvWindows(encoded), conv);
  assert.deepEqual(decodeConvWindows(convWindowsStoreSerde.deserialize(convWindowsStoreSerde.serialize(encoded))), conv);
  assert.equal(dueOfEncoded(encoded), T0 + 5_000, 'the timer is the earliest until');
  // State written by earlier versions is still restored: `<due><json>` (captured from that encoder)
  // and, before it, a JSON object per (uid, conv).
  const tuples = String.raw`1768478405000[["d1",1,0,3,2,2,-1,[5,"m5",1,"u9",5,"Team \"α\"","message 5 with a \\ and a | and 中文",0,0,-4100,"im.demo","FUTURE_KIND"]],["d|\"2\"",0,55000,9,0,0,9,null]]`;
  assert.deepEqual(decodeConvWindows(tuples), conv);
  assert.equal(dueOfEncoded(tuples), T0 + 5_000);
  const legacy = JSON.stringify(Object.fromEntries(conv));
  assert.deepEqual(decodeConvWindows(legacy), conv);
  assert.equal(dueOfEncoded(legacy), T0 + 5_000);
});

test('texts holding the separators, quotes or nothing round-trip exactly', () => {
  const awkward = ['', '"', '"quoted"', 'a\u001fb', 'a\u001eb', '\u001f', 'x"y', '{', '[1]', '-1', '中文 🚀', 'line\nbreak\u0000'];
  for (const value of awkward) {
    const carried = { ...carry(trigger('u1', 'c1', 'd1', 5, T0)), msg_id: value, sender_uid: value, title: value, summary: value, app_id: value };
    const conv: ConvWindows = new Map([
      [value, { open: true, until: T0 + 5_000, pushed_seq: -1, count: 1, mention: 'NONE', read_seq: -1, carried }],
      [`${value}2`, { open: false, until: T0 + 1_000, pushed_seq: 4, count: 0, mention: 'NONE', read_seq: -1, carried: null }],
    ]);
    const encoded = encodeConvWindows(conv);
    assert.deepEqual(decodeConvWindows(convWindowsStoreSerde.deserialize(convWindowsStoreSerde.serialize(encoded))), conv, JSON.stringify(value));
    assert.equal(dueOfEncoded(encoded), T0 + 1_000);
  }
});

test('a window closed with nothing to send writes no record; restored in its open form it closes quietly, remembers its push, and expires with one tombstone', async () => {
  const clock = { now: T0 };
  const first = mergeTask(clock);
  await first.init();
  const c1 = trigger('u1', 'c1', 'd1', 1, T0);
  await first.process({ topic: IN, partition: 0, offset: '0', key: Buffer.from('u1'), value: Buffer.from(JSON.stringify(c1)), timestamp: T0, headers: {} });
  const opened = first.drainOutputs();
  assert.deepEqual(
    opened.records.filter((r) => r.topic === 'merged').map((r) => decode(r).kind),
    ['LEADING'],
  );
  assert.equal(opened.changelog.length, 1, 'the window is written when it opens');
  clock.now = T0 + 5_000;
  await first.punctuateWallClock(clock.now);
  const closed = first.drainOutputs();
  assert.deepEqual([closed.records.length, closed.changelog.length], [0, 0], 'its close sends nothing and writes nothing');

  const second = mergeTask(clock);
  for (const r of opened.changelog) second.stores.get('merge-windows')!.restore(r.key!.toString('utf8'), r.value);
  await second.init();
  clock.now = T0 + 5_100;
  await second.punctuateWallClock(clock.now);
  assert.deepEqual(second.drainOutputs().records, [], 'the restored window past its end closes without a second push');
  const late = { ...c1, decided_at: T0 + 6_000 };
  await second.process({
    topic: IN,
    partition: 0,
    offset: '1',
    key: Buffer.from('u1'),
    value: Buffer.from(JSON.stringify(late)),
    timestamp: T0 + 6_000,
    headers: {},
  });
  const again = second.drainOutputs();
  assert.deepEqual(again.records, [], 'the pushed message again (a duplicated input) is neither pushed again nor given a second outcome');
  clock.now = T0 + 65_000;
  await second.punctuateWallClock(clock.now);
  assert.deepEqual(
    second.drainOutputs().changelog.map((r) => r.value),
    [null],
    'the memory expires with one tombstone',
  );
});
