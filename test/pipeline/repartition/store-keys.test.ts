/**
 * The repartition's knowledge of where each store entry belongs (each stage definition's `stores`,
 * the kinds of placement in pipeline/repartition/store-keys.ts): it must name every changelogged
 * store each application declares, and place entries by the partition of their owner under the new
 * count as Kafka's producers do (partitionOf, the producers' partitioner;
 * test/topology/partitioner.test.ts checks it against Java's vectors and kafkajs).
 */
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { rawAvroValueSerdes } from '../../../pipeline/serdes.ts';
import { STAGE_DEFINITIONS, STAGES, type StageName } from '../../../pipeline/apps/index.ts';
import { changeloggedStores } from '../../../pipeline/apps/stage.ts';
import { partitionOf } from '../../../pipeline/repartition/generation.ts';
import { placeStore } from '../../../pipeline/repartition/copy-state.ts';
import { decodeParked, encodeParked, IN_FLIGHT, ParkedDispatches, parkedStoreSerde, type ParkedValue } from '../../../processors/fan-out/parked.ts';
import { InMemoryKeyValueStore, InMemoryTimerStore } from '../../../topology/in-memory-stores.ts';

const wiring = { valueSerdes: rawAvroValueSerdes(), topicPrefix: 't.' };
const stores = (stage: StageName) => STAGE_DEFINITIONS[stage].stores;

const key = (...parts: string[]) => JSON.stringify(parts);
const content = (...partitions: Array<Array<[string, string]>>) =>
  new Map(partitions.map((entries, p) => [p, new Map(entries.map(([k, v]) => [k, Buffer.from(v)]))]));

describe('repartition store placements', () => {
  for (const stage of STAGES) {
    test(`${stage}: every changelogged store is placed, and no other`, () => {
      assert.deepEqual(Object.keys(stores(stage)).sort(), changeloggedStores(STAGE_DEFINITIONS[stage].inspect(wiring)));
    });
  }

  test('owners found in values and composite keys: token health, kept business requests, campaign chunks', () => {
    const owner = (stage: StageName, store: string, key: string, value: unknown) => {
      const placement = stores(stage)[store]!;
      assert.equal(placement.kind, 'owner');
      return placement.kind === 'owner' ? placement.owner(key, Buffer.from(JSON.stringify(value))) : undefined;
    };
    assert.equal(owner('receipts', 'token-lifecycle-tokens', key('d1', 'fcm'), { uid: 'u9', device_id: 'd1', vendor: 'fcm', failures: 0 }), 'u9');
    assert.equal(owner('business', 'business-deferred', 'req-1', { push: { uid: 'u3', requestId: 'req-1' }, resume: 'rate', kind: 'NORMAL' }), 'u3');
    assert.equal(owner('business', 'business-idempotency', key('u4', 'sender', 'k'), 0), 'u4');
    assert.equal(owner('campaigns', 'campaign-uids', 'camp|aign-7|12', []), 'camp|aign-7');
    assert.equal(owner('campaigns', 'campaign-meta', 'camp|aign-7', {}), 'camp|aign-7');
  });

  test('uid-keyed entries go to their uid’s partition, timers follow their entry, per-partition ledgers are combined', () => {
    const d = stores('decisions');
    const uids = Array.from({ length: 40 }, (_, i) => `u${i}`);
    const windows = placeStore(content(uids.map((u) => [key(u, 'c1'), 'w'] as [string, string])), d['merge-windows']!, 12, new Map());
    for (const u of uids) assert.ok(windows.placed.get(partitionOf(u, 12))!.has(key(u, 'c1')), u);
    assert.equal(
      [...windows.placed.values()].reduce((n, m) => n + m.size, 0),
      uids.length,
    );

    const ledger = placeStore(
      content([[key('fcm', 'a', '2026-12-01'), '10']], [[key('fcm', 'a', '2026-12-01'), '15']]),
      d['policy-quota-ledger']!,
      4,
      new Map(),
    );
    for (const entries of ledger.placed.values()) assert.equal(entries.get(key('fcm', 'a', '2026-12-01'))!.toString(), String(Math.ceil(25 / 4)));
    const rate = placeStore(content([['s1', '100']], [['s1', '250']]), stores('business')['business-sender-rate']!, 3, new Map());
    for (const entries of rate.placed.values()) assert.equal(entries.get('s1')!.toString(), '250');

    // A parked dispatch names its input key (the uid) in its value; its retry timer is keyed by the task id.
    const f = stores('fan-out');
    const dispatch = { uid: 'u7', device_id: 'd', msg_id: 'm', conv_id: 'c', seq: 1, channels: [], decided_at: 1 } as never;
    const last = { vendor: 'fcm', code: '503', quotaOnly: false, throttled: false } as never;
    const parked = encodeParked({ dispatch, key: 'u7', timestamp: 1, channel: 0, call: 1, attempts: 1, last, trail: [] });
    const parkedPlaced = placeStore(content([['task-1', parked]]), f['fan-out-parked']!, 12, new Map());
    assert.ok(parkedPlaced.placed.get(partitionOf('u7', 12))!.has('task-1'));
    const where = new Map([['fan-out-parked', new Map([['task-1', partitionOf('u7', 12)]])]]);
    const timers = placeStore(
      content([
        ['task-1', '5'],
        ['task-gone', '6'],
      ]),
      f['fan-out-retry-timers']!,
      12,
      where,
    );
    assert.ok(timers.placed.get(partitionOf('u7', 12))!.has('task-1'));
    assert.equal(timers.dropped, 1, 'a timer whose parked dispatch is gone is dropped');

    // The dispatches a fused decisions task checkpointed at its last commit share one entry: each goes to its own user's partition, parked.
    const store = new InMemoryKeyValueStore<ParkedValue>('fan-out-parked', parkedStoreSerde);
    const dispatches = new ParkedDispatches(store, new InMemoryTimerStore('t', true), new InMemoryTimerStore('age', false), 10);
    for (const uid of ['u7', 'u8'])
      dispatches.checkpoint({
        dispatch: { ...(dispatch as object), uid, task_id: `task-${uid}` } as never,
        key: uid,
        timestamp: 1,
        channel: 0,
        call: 1,
        attempts: 0,
        last,
        trail: [],
      });
    dispatches.writeCheckpoints();
    const checkpointContent = new Map([[0, new Map([...store.entries()].map(([k, v]) => [k, parkedStoreSerde.serialize(v)]))]]);
    assert.deepEqual([...checkpointContent.get(0)!.keys()], ['~held.0']);
    const checkpointsPlaced = placeStore(checkpointContent, stores('decisions')['fan-out-parked']!, 12, new Map());
    for (const uid of ['u7', 'u8']) {
      const value = checkpointsPlaced.placed.get(partitionOf(uid, 12))!.get(`task-${uid}`);
      assert.ok(value, `task-${uid} placed by its uid`);
      assert.equal(decodeParked(`task-${uid}`, parkedStoreSerde.deserialize(value)).waitingOn, IN_FLIGHT);
    }
  });
});
