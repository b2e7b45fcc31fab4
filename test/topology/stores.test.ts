import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { createStore, InMemoryKeyValueStore, InMemoryScheduleStore, InMemoryTimerStore } from '../../topology/in-memory-stores.ts';
import { scheduleStore } from '../../topology/stores.ts';

describe('InMemoryTimerStore', () => {
  test('popDue returns due keys in due-time order, honouring moves, cancels and the limit', () => {
    const timers = new InMemoryTimerStore('t');
    timers.set('a', 300);
    timers.set('b', 100);
    timers.set('c', 200);
    timers.set('a', 50); // moved earlier
    timers.set('d', 400);
    timers.cancel('c');
    assert.deepEqual(timers.popDue(250, 1), [{ key: 'a', dueMs: 50 }]);
    assert.deepEqual(timers.popDue(250), [{ key: 'b', dueMs: 100 }]);
    assert.deepEqual(timers.popDue(399), []);
    assert.equal(timers.size, 1);
    assert.equal(timers.dueTime('d'), 400);
  });

  test('agrees with a naive model over 20,000 random operations', () => {
    const timers = new InMemoryTimerStore('t');
    const model = new Map<string, number>();
    let now = 0;
    let seed = 7;
    const rand = (n: number) => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % n;
    for (let i = 0; i < 20_000; i++) {
      const op = rand(10);
      const key = `k${rand(500)}`;
      if (op < 6) {
        const due = now + rand(1000);
        timers.set(key, due);
        model.set(key, due);
      } else if (op < 8) {
        timers.cancel(key);
        model.delete(key);
      } else {
        now += rand(200);
        const expected = [...model].filter(([, d]) => d <= now).sort((x, y) => x[1] - y[1] || (x[0] < y[0] ? -1 : 1));
        for (const [k] of expected) model.delete(k);
        assert.deepEqual(
          timers.popDue(now).map((e) => [e.key, e.dueMs]),
          expected,
        );
      }
      assert.equal(timers.size, model.size);
    }
  });

  test('changelog carries due times and tombstones, and restores into an equal store', () => {
    const timers = new InMemoryTimerStore('t');
    timers.set('a', 10);
    timers.set('b', 20);
    timers.set('b', 30);
    timers.set('c', 40);
    timers.cancel('c');
    const changes = timers.drainChanges();
    // c was set and cancelled between two drains: the changelog never had it, so no tombstone.
    assert.deepEqual(
      changes.map((c) => [c.key, c.value?.toString() ?? null]),
      [
        ['a', '10'],
        ['b', '30'],
      ],
    );
    const restored = new InMemoryTimerStore('t');
    for (const c of changes) restored.restore(c.key, c.value);
    assert.deepEqual(restored.popDue(100), [
      { key: 'a', dueMs: 10 },
      { key: 'b', dueMs: 30 },
    ]);
    assert.deepEqual(restored.drainChanges(), [
      { key: 'a', value: null },
      { key: 'b', value: null },
    ]);
  });

  test('a timer the changelog holds gets its tombstone; one set and fired between two drains gets none', () => {
    const timers = new InMemoryTimerStore('t');
    timers.set('held', 10);
    timers.drainChanges();
    timers.set('brief', 20);
    assert.deepEqual(
      timers.popDue(50).map((e) => e.key),
      ['held', 'brief'],
    );
    assert.deepEqual(timers.drainChanges(), [{ key: 'held', value: null }]);
  });
});

describe('InMemoryScheduleStore', () => {
  test('popDue returns each entry once, in (due time, key) order, duplicates and the limit included', () => {
    const schedule = new InMemoryScheduleStore('s');
    schedule.add('a', 300);
    schedule.add('b', 100);
    schedule.add('c', 200);
    schedule.add('a', 50);
    schedule.add('b', 100);
    assert.equal(schedule.size, 5);
    assert.deepEqual(schedule.popDue(250, 2), [
      { key: 'a', dueMs: 50 },
      { key: 'b', dueMs: 100 },
    ]);
    assert.deepEqual(schedule.popDue(250), [
      { key: 'b', dueMs: 100 },
      { key: 'c', dueMs: 200 },
    ]);
    assert.deepEqual(schedule.popDue(299), []);
    assert.equal(schedule.size, 1);
  });

  test('agrees with a sorted list over 20,000 random operations', () => {
    const schedule = new InMemoryScheduleStore('s');
    let model: Array<[string, number]> = [];
    let now = 0;
    let seed = 11;
    const rand = (n: number) => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % n;
    for (let i = 0; i < 20_000; i++) {
      if (rand(10) < 7) {
        const entry: [string, number] = [`k${rand(500)}`, now + rand(1000)];
        schedule.add(...entry);
        model.push(entry);
      } else {
        now += rand(200);
        const expected = model.filter(([, d]) => d <= now).sort((x, y) => x[1] - y[1] || (x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : 0));
        model = model.filter(([, d]) => d > now);
        assert.deepEqual(
          schedule.popDue(now).map((e) => [e.key, e.dueMs]),
          expected,
        );
      }
      assert.equal(schedule.size, model.length);
    }
  });

  test('is never changelogged: nothing to drain, and the runtime builds it without a changelog', () => {
    const store = createStore(scheduleStore('s'));
    assert.ok(store instanceof InMemoryScheduleStore);
    assert.equal(store.changelogged, false);
    (store as InMemoryScheduleStore).add('a', 1);
    assert.deepEqual(store.drainChanges(), []);
    store.clear();
    assert.equal((store as InMemoryScheduleStore).size, 0);
  });
});

describe('InMemoryKeyValueStore', () => {
  test('writes between two drains cost one changelog record per key', () => {
    const store = new InMemoryKeyValueStore<number>('counts');
    store.put('x', 1);
    store.put('x', 2);
    store.put('y', 5);
    store.delete('y');
    // y was created and deleted between two drains: never in the changelog, so no tombstone.
    assert.deepEqual(
      store.drainChanges().map((c) => [c.key, c.value?.toString() ?? null]),
      [['x', '2']],
    );
    assert.deepEqual(store.drainChanges(), []);
    assert.equal(store.get('x'), 2);
    assert.equal(store.size, 1);
  });

  test('a key the changelog holds gets a tombstone when deleted, also after being rewritten', () => {
    const store = new InMemoryKeyValueStore<number>('counts');
    store.put('x', 1);
    store.put('z', 1);
    store.drainChanges();
    store.put('x', 2);
    store.delete('x');
    store.delete('z');
    store.delete('never');
    assert.deepEqual(
      store.drainChanges().map((c) => [c.key, c.value]),
      [
        ['x', null],
        ['z', null],
      ],
    );
    store.restore('r', Buffer.from('3'));
    store.delete('r');
    assert.deepEqual(
      store.drainChanges().map((c) => [c.key, c.value]),
      [['r', null]],
      'a restored key is in the changelog',
    );
  });
});
