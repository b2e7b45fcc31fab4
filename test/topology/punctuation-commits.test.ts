/**
 * What a wall-clock punctuation leaves to commit (topology/task.ts): a task whose punctuators found
 * nothing to do has nothing to commit, so an idle application sends no transactions and takes no
 * commit turns; one that forwarded or changed a changelogged store does. And wall-clock schedules
 * run on their interval's grid of the wall clock, so every task's punctuators of one interval fall
 * due at the same moment (the runtime wakes once for them).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TopologyBuilder } from '../../topology/builder.ts';
import { stringSerde } from '../../topology/serdes.ts';
import { keyValueStore, type KeyValueStore } from '../../topology/stores.ts';
import type { ProcessorContext, StreamRecord } from '../../topology/api.ts';
import { standaloneTask } from '../support/task.ts';

type Action = 'nothing' | 'forward' | 'store';

/** A task of one processor whose 100 ms wall-clock punctuator does what `next` says. */
function taskWith(clock: { now: number }, next: { action: Action }) {
  const topology = new TopologyBuilder()
    .addSource('in', { topics: ['in'], keySerde: stringSerde, valueSerde: stringSerde })
    .addProcessor(
      'p',
      () => {
        let ctx: ProcessorContext<string, string>;
        return {
          init: (c: ProcessorContext<string, string>) => {
            ctx = c;
            ctx.schedule(100, 'wall-clock', (now) => {
              if (next.action === 'forward') ctx.forward({ key: 'k', value: 'tick', timestamp: now });
              if (next.action === 'store') ctx.getStateStore<KeyValueStore<number>>('seen').put('k', now);
            });
          },
          process: (r: StreamRecord<string, string>) => ctx.forward(r),
        };
      },
      'in',
    )
    .addStateStore(keyValueStore<number>('seen'), 'p')
    .addSink('out', { topic: 'out', keySerde: stringSerde, valueSerde: stringSerde }, 'p')
    .build();
  return standaloneTask(topology, 'punctuation-commits', () => clock.now);
}

test('a punctuation that forwards nothing and changes no store leaves nothing to commit; one that does leaves work', async () => {
  const clock = { now: 1_000_050 };
  const next = { action: 'nothing' as Action };
  const task = taskWith(clock, next);
  await task.init();
  assert.equal(task.hasUncommittedWork(), false, 'a fresh task');

  for (let i = 0; i < 5; i++) {
    clock.now += 100;
    await task.punctuateWallClock(clock.now);
  }
  assert.equal(task.hasUncommittedWork(), false, 'five punctuations that did nothing');

  next.action = 'forward';
  clock.now += 100;
  await task.punctuateWallClock(clock.now);
  assert.equal(task.hasUncommittedWork(), true, 'a punctuation that forwarded a record');
  assert.equal(task.drainOutputs().records.length, 1);
  assert.equal(task.hasUncommittedWork(), false, 'drained');

  next.action = 'store';
  clock.now += 100;
  await task.punctuateWallClock(clock.now);
  assert.equal(task.hasUncommittedWork(), true, 'a punctuation that changed a changelogged store');
  assert.equal(task.drainOutputs().changelog.length, 1);
});

test("wall-clock schedules run on their interval's grid of the wall clock, whenever the task started", async () => {
  for (const start of [1_000_001, 1_000_050, 1_000_099]) {
    const task = taskWith({ now: start }, { action: 'nothing' });
    await task.init();
    assert.equal(task.nextWallClockMs(), 1_000_100, `a task started at ${start}`);
  }
});
