/**
 * Pinned offsets (ProcessorContext.pinOffset), what the fan-out relies on so that a
 * periodic commit need not wait for vendor calls: a commit never carries an input offset whose
 * record is unfinished, nor outputs of a record it does not also commit.
 */
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { TopologyBuilder } from '../../topology/builder.ts';
import { stringSerde } from '../../topology/serdes.ts';
import type { Processor, ProcessorContext } from '../../topology/api.ts';
import type { StreamTask } from '../../topology/task.ts';
import { standaloneTask } from '../support/task.ts';

/** Pins the offset of every record whose value starts with `slow`; finishes them when the test says, releasing outputs in input order. */
function slowEcho() {
  const jobs: Array<{ value: string; finished: boolean; done: () => void }> = [];
  let ctx!: ProcessorContext<string, string>;
  const release = () => {
    while (jobs[0]?.finished) {
      const job = jobs.shift()!;
      ctx.forward({ key: job.value, value: `echo ${job.value}`, timestamp: 0 });
      job.done();
    }
  };
  const processor: Processor<string, string, string, string> = {
    init: (context) => void (ctx = context),
    process(record) {
      if (record.value.startsWith('slow')) jobs.push({ value: record.value, finished: false, done: ctx.pinOffset() });
      else jobs.push({ value: record.value, finished: true, done: () => undefined });
      release();
    },
    flushFinished: async () => release(),
    flush: async () => {
      for (const job of jobs) job.finished = true;
      release();
    },
  };
  return { supplier: () => processor, finish: (value: string) => void (jobs.find((j) => j.value === value)!.finished = true) };
}

function task(echo: ReturnType<typeof slowEcho>) {
  const topology = new TopologyBuilder()
    .addSource('in', { topics: ['in'], keySerde: stringSerde, valueSerde: stringSerde })
    .addProcessor('echo', echo.supplier, 'in')
    .addSink('out', { topic: 'out', keySerde: stringSerde, valueSerde: stringSerde }, 'echo')
    .build();
  return standaloneTask(topology, 'pinned', () => 0);
}

async function pipe(t: StreamTask, offset: number, value: string) {
  await t.process({ topic: 'in', partition: 0, offset: String(offset), key: Buffer.from(value), value: Buffer.from(value), timestamp: 0, headers: {} });
}

async function commit(t: StreamTask, complete = false) {
  await t.flush({ complete });
  const { records, offsets } = t.drainOutputs();
  return { outputs: records.map((r) => r.value!.toString()), offset: offsets.get('in') };
}

describe('pinned offsets', () => {
  test('a periodic commit stops before the oldest unfinished record, and keeps back the outputs behind it', async () => {
    const echo = slowEcho();
    const t = task(echo);
    await t.init();
    await pipe(t, 0, 'a');
    await pipe(t, 1, 'slow-b');
    await pipe(t, 2, 'c');
    await pipe(t, 3, 'slow-d');
    assert.deepEqual(await commit(t), { outputs: ['echo a'], offset: '0' }, 'only the record before the first unfinished one');
    assert.equal(t.hasUncommittedWork(), true, 'unfinished records keep the task committing');

    echo.finish('slow-d');
    assert.deepEqual(await commit(t), { outputs: [], offset: undefined }, 'a later record finishing first moves nothing');

    echo.finish('slow-b');
    assert.deepEqual(await commit(t), { outputs: ['echo slow-b', 'echo c', 'echo slow-d'], offset: '3' }, 'released in input order with their offsets');
    assert.equal(t.hasUncommittedWork(), false);
    await t.close();
  });

  test('a complete commit (revocation, shutdown) waits for everything', async () => {
    const echo = slowEcho();
    const t = task(echo);
    await t.init();
    await pipe(t, 0, 'slow-a');
    await pipe(t, 1, 'b');
    assert.deepEqual(await commit(t, true), { outputs: ['echo slow-a', 'echo b'], offset: '1' });
    await t.close();
  });
});
