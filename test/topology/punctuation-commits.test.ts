/**
 * What a wall-clock punctuation leaves to commit (topology/task.ts): a punctuator that polls says
 * when it found nothing due (returns false), and then, unless it forwarded a record or changed a
 * changelogged store all the same, the task has nothing to commit, so an idle application sends no
 * transactions and takes no commit turns. Any other punctuation counts as work (a processor's flush
 * may release what it started). And wall-clock schedules run on their interval's grid of the wall
 * clock, so every task's punctuators of one interval fall due at the same moment (the runtime wakes
 * once for them).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TopologyBuilder } from '../../topology/builder.ts';
import { stringSerde } from '../../topology/serdes.ts';
import { keyValueStore, type KeyValueStore } from '../../topology/stores.ts';
import type { ProcessorContext, StreamRecord } from '../../topology/api.ts';
import { standaloneTask } from '../support/task.ts';

/** What the punctuator does: `idle` finds nothing due (returns false); `silent` does nothing and says nothing. */
type Action = 'idle' | 'silent' | 'forward' | 'store';

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
              // Forwarding or changing the store while saying "nothing due" still counts as work.
              if (next.action === 'forward') ctx.forward({ key: 'k', value: 'tick', timestamp: now });
              if (next.action === 'store') ctx.getStateStore<KeyValueStore<number>>('seen').put('k', now);
              if (next.action !== 'silent') return false;
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

test('a punctuation that found nothing due leaves nothing to commit; one that forwarded, changed a store or did not say does', async () => {
  const clock = { now: 1_000_050 };
  const next = { action: 'idle' as Action };
  const task = taskWith(clock, next);
  await task.init();
  assert.equal(task.hasUncommittedWork(), false, 'a fresh task');
  const punctuate = async (action: Action) => {
    next.action = action;
    clock.now += 100;
    await task.punctuateWallClock(clock.now);
    return task.hasUncommittedWork();
  };

  for (let i = 0; i < 5; i++) assert.equal(await punctuate('idle'), false, 'a punctuation that found nothing due');
  assert.equal(await punctuate('forward'), true, 'one that forwarded a record');
  assert.equal(task.drainOutputs().records.length, 1);
  assert.equal(await punctuate('idle'), false);
  assert.equal(await punctuate('store'), true, 'one that changed a changelogged store');
  assert.equal(task.drainOutputs().changelog.length, 1);
  assert.equal(await punctuate('silent'), true, 'one that did not say it found nothing: a flush may release what it started');
});

test("wall-clock schedules run on their interval's grid of the wall clock, whenever the task started", async () => {
  for (const start of [1_000_001, 1_000_050, 1_000_099]) {
    const task = taskWith({ now: start }, { action: 'idle' });
    await task.init();
    assert.equal(task.nextWallClockMs(), 1_000_100, `a task started at ${start}`);
  }
});

/** A task whose 100 ms punctuator says when it next has work (`pending.dueMs`; undefined: nothing pending), and counts its calls. */
function taskWithDueTime(clock: { now: number }, pending: { dueMs: number | undefined }, calls: number[]) {
  const topology = new TopologyBuilder()
    .addSource('in', { topics: ['in'], keySerde: stringSerde, valueSerde: stringSerde })
    .addProcessor(
      'p',
      () => ({
        init: (ctx: ProcessorContext<string, string>) => {
          ctx.schedule(100, 'wall-clock', (now) => void calls.push(now), { nextDueMs: () => pending.dueMs });
        },
        process: () => undefined,
      }),
      'in',
    )
    .build();
  return standaloneTask(topology, 'punctuation-due-time', () => clock.now);
}

test('a punctuator that says when it has work runs only then, at the first point of its grid from that time', async () => {
  const clock = { now: 1_000_050 };
  const pending: { dueMs: number | undefined } = { dueMs: undefined };
  const calls: number[] = [];
  const task = taskWithDueTime(clock, pending, calls);
  await task.init();
  assert.equal(task.nextWallClockMs(), undefined, 'nothing pending: the runtime has nothing to wake for');
  for (const now of [1_000_100, 1_000_200, 1_005_000]) await task.punctuateWallClock(now);
  assert.deepEqual(calls, [], 'not called while nothing is pending');

  pending.dueMs = 1_005_230;
  assert.equal(task.nextWallClockMs(), 1_005_300, 'the first grid point at or after the due time');
  await task.punctuateWallClock(1_005_240);
  assert.deepEqual(calls, [], 'due, but its grid point has not come');
  await task.punctuateWallClock(1_005_300);
  assert.deepEqual(calls, [1_005_300]);

  pending.dueMs = 1_000_000;
  assert.equal(task.nextWallClockMs(), 1_005_400, 'overdue work runs at the next grid point');
  await task.punctuateWallClock(1_005_400);
  assert.deepEqual(calls, [1_005_300, 1_005_400]);
  assert.equal(task.hasUncommittedWork(), true, 'a punctuation that ran and did not say it found nothing counts as work');
});
