import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { TopologyTestDriver } from '../../topology/test-driver.ts';
import { TopologyBuilder } from '../../topology/builder.ts';
import { keyValueStore, type KeyValueStore } from '../../topology/stores.ts';
import { avroSerde, stringSerde, jsonSerde } from '../../topology/serdes.ts';
import { DLQ_HEADERS } from '../../topology/dlq.ts';
import type { Processor, ProcessorContext, StreamRecord } from '../../topology/api.ts';
import { PushError } from '../../common/errors.ts';
import { countingTopology, holdTopology, wordSchema, type WordCount, type WordEvent } from './fixtures.ts';

describe('TopologyTestDriver', () => {
  test('a counting processor keeps its count in a store and forwards every update through the real serdes', async () => {
    const driver = new TopologyTestDriver(countingTopology('words', 'counts'), { applicationId: 'wc' });
    for (const [i, w] of ['a', 'b', 'a', 'a'].entries()) await driver.pipeInput('words', w, { word: w, seq: i }, { timestamp: 1000 + i });
    const out = driver.readAllOutputs<string, WordCount>('counts');
    assert.deepEqual(
      out.map((r) => [r.key, r.value.count, r.timestamp]),
      [
        ['a', 1, 1000],
        ['b', 1, 1001],
        ['a', 2, 1002],
        ['a', 3, 1003],
      ],
    );
    assert.equal(driver.getStateStore<KeyValueStore<number>>('word-counts').get('a'), 3);
    assert.deepEqual(
      driver.changelog('word-counts').map((c) => [c.key, Number(c.value)]),
      [
        ['a', 1],
        ['b', 1],
        ['a', 2],
        ['a', 3],
      ],
    );
    assert.equal(driver.readOutput('counts'), undefined);
  });

  test('undecodable bytes go to the DLQ with source coordinates and the error code, and processing continues', async () => {
    const driver = new TopologyTestDriver(countingTopology('words', 'counts'), { dlqTopic: 'app.dlq' });
    await driver.pipeRawInput('words', Buffer.from('k'), Buffer.from([0xff, 0xff, 0xff]), { headers: { trace: 't-1' } });
    await driver.pipeInput('words', 'k', { word: 'k', seq: 1 });
    const [letter] = driver.readAllOutputs<Buffer, Buffer>('app.dlq');
    assert.ok(letter);
    assert.deepEqual(letter.value, Buffer.from([0xff, 0xff, 0xff]));
    assert.equal(letter.headers[DLQ_HEADERS.sourceTopic], 'words');
    assert.equal(letter.headers[DLQ_HEADERS.sourcePartition], '0');
    assert.equal(letter.headers[DLQ_HEADERS.sourceOffset], '0');
    assert.equal(letter.headers[DLQ_HEADERS.errorCode], 'DESERIALIZATION_FAILED');
    assert.equal(letter.headers[DLQ_HEADERS.phase], 'deserialization');
    assert.equal(letter.headers.trace, 't-1');
    assert.deepEqual(
      driver.readAllOutputs<string, WordCount>('counts').map((r) => r.value.count),
      [1],
    );
  });

  test('stream-time punctuators fire as record timestamps advance, on their grid, skipping missed intervals', async () => {
    const fired: number[] = [];
    const topology = new TopologyBuilder()
      .addSource('in', { topics: ['in'], keySerde: stringSerde, valueSerde: stringSerde })
      .addProcessor(
        'ticker',
        () => ({
          init: (ctx: ProcessorContext) => void ctx.schedule(1000, 'stream-time', (ts) => void fired.push(ts)),
          process() {},
        }),
        'in',
      )
      .build();
    const driver = new TopologyTestDriver(topology, { startWallClockMs: 50_000 });
    for (const ts of [100, 500, 999, 1000, 1500, 4200, 4300, 3000]) await driver.pipeInput('in', 'k', 'v', { timestamp: ts });
    await driver.advanceWallClockTime(60_000);
    assert.deepEqual(fired, [100, 1000, 4200]);
  });

  test('wall-clock punctuators and a timer store release held records; a cancel prevents release', async () => {
    const driver = new TopologyTestDriver(holdTopology(), { startWallClockMs: 10_000 });
    await driver.pipeInput('hold-in', 'u1', 'first');
    await driver.advanceWallClockTime(2000);
    await driver.pipeInput('hold-in', 'u2', 'second');
    await driver.pipeInput('hold-in', 'u3', 'third');
    await driver.pipeInput('hold-in', 'u3', 'cancel');
    await driver.advanceWallClockTime(3000); // t=15 000: u1 due at 15 000
    assert.deepEqual(
      driver.readAllOutputs('hold-out').map((r) => [r.key, r.value, r.timestamp]),
      [['u1', 'first', 15_000]],
    );
    await driver.advanceWallClockTime(10_000);
    assert.deepEqual(
      driver.readAllOutputs('hold-out').map((r) => [r.key, r.value]),
      [['u2', 'second']],
    );
    assert.equal(driver.getStateStore<KeyValueStore<string>>('held-values').size, 0);
    assert.deepEqual(
      driver.changelog('hold-timers').map((c) => [c.key, c.value?.toString() ?? null]),
      [
        ['u1', '15000'],
        ['u2', '17000'],
        ['u3', '17000'],
        ['u3', null],
        ['u1', null],
        ['u2', null],
      ],
    );
  });

  test('forward to a named child reaches only that child; async processors keep input order', async () => {
    const topology = new TopologyBuilder()
      .addSource('in', { topics: ['in'], keySerde: stringSerde, valueSerde: jsonSerde<number>() })
      .addProcessor(
        'router',
        () => {
          let ctx: ProcessorContext;
          return {
            init: (c: ProcessorContext) => void (ctx = c),
            process: (r: StreamRecord<string, number>) => ctx.forward(r, r.value % 2 === 0 ? 'even-slow' : 'odd'),
          };
        },
        'in',
      )
      .addProcessor(
        'even-slow',
        () => {
          let ctx: ProcessorContext;
          return {
            init: (c: ProcessorContext) => void (ctx = c),
            async process(r: StreamRecord<string, number>) {
              await new Promise((resolve) => setTimeout(resolve, 5));
              ctx.forward({ ...r, value: r.value * 10 });
            },
          };
        },
        'router',
      )
      .addProcessor(
        'odd',
        () => {
          let ctx: ProcessorContext;
          return { init: (c: ProcessorContext) => void (ctx = c), process: (r: StreamRecord<string, number>) => ctx.forward(r) };
        },
        'router',
      )
      .addSink('even-sink', { topic: 'even', keySerde: stringSerde, valueSerde: jsonSerde<number>() }, 'even-slow')
      .addSink('odd-sink', { topic: 'odd', keySerde: stringSerde, valueSerde: jsonSerde<number>() }, 'odd')
      .build();
    const driver = new TopologyTestDriver(topology);
    for (let i = 1; i <= 6; i++) await driver.pipeInput('in', 'k', i);
    assert.deepEqual(
      driver.readAllOutputs('even').map((r) => r.value),
      [20, 40, 60],
    );
    assert.deepEqual(
      driver.readAllOutputs('odd').map((r) => r.value),
      [1, 3, 5],
    );
  });

  test('flush() runs before every commit and its forwarded records are output', async () => {
    class Batching implements Processor<string, string, string, string> {
      private ctx!: ProcessorContext<string, string>;
      private buffer: StreamRecord<string, string>[] = [];
      init(ctx: ProcessorContext<string, string>) {
        this.ctx = ctx;
      }
      process(r: StreamRecord<string, string>) {
        this.buffer.push(r);
      }
      async flush() {
        const batch = this.buffer;
        this.buffer = [];
        await Promise.resolve();
        for (const r of batch) this.ctx.forward({ ...r, value: `${r.value}!` });
      }
    }
    const topology = new TopologyBuilder()
      .addSource('in', { topics: ['in'], keySerde: stringSerde, valueSerde: stringSerde })
      .addProcessor('batching', () => new Batching(), 'in')
      .addSink('out', { topic: 'out', keySerde: stringSerde, valueSerde: stringSerde }, 'batching')
      .build();
    const driver = new TopologyTestDriver(topology, { commitEveryInput: false });
    await driver.pipeInput('in', 'a', 'x');
    await driver.pipeInput('in', 'b', 'y');
    assert.deepEqual(driver.readAllOutputs('out'), []);
    await driver.commit();
    assert.deepEqual(
      driver.readAllOutputs('out').map((r) => r.value),
      ['x!', 'y!'],
    );
  });

  test('records written to a topic that another sub-topology reads flow on to it', async () => {
    const topology = new TopologyBuilder()
      .addSource('words-source', { topics: ['words'], keySerde: stringSerde, valueSerde: avroSerde<WordEvent>(wordSchema) })
      .addProcessor(
        'upper',
        () => {
          let ctx: ProcessorContext;
          return {
            init: (c: ProcessorContext) => void (ctx = c),
            process: (r: StreamRecord<string, WordEvent>) => ctx.forward({ ...r, value: { ...r.value, word: r.value.word.toUpperCase() } }),
          };
        },
        'words-source',
      )
      .addSink('upper-sink', { topic: 'upper-words', keySerde: stringSerde, valueSerde: avroSerde<WordEvent>(wordSchema) }, 'upper')
      .build();
    const chained = new TopologyBuilder()
      .addSource('words-source', { topics: ['words'], keySerde: stringSerde, valueSerde: avroSerde<WordEvent>(wordSchema) })
      .addProcessor(
        'upper',
        () => {
          let ctx: ProcessorContext;
          return {
            init: (c: ProcessorContext) => void (ctx = c),
            process: (r: StreamRecord<string, WordEvent>) => ctx.forward({ ...r, value: { ...r.value, word: r.value.word.toUpperCase() } }),
          };
        },
        'words-source',
      )
      .addSink('upper-sink', { topic: 'upper-words', keySerde: stringSerde, valueSerde: avroSerde<WordEvent>(wordSchema) }, 'upper')
      .addSource('upper-source', { topics: ['upper-words'], keySerde: stringSerde, valueSerde: avroSerde<WordEvent>(wordSchema) })
      .addProcessor(
        'echo',
        () => {
          let ctx: ProcessorContext;
          return {
            init: (c: ProcessorContext) => void (ctx = c),
            process: (r: StreamRecord<string, WordEvent>) => ctx.forward({ ...r, value: `${r.value.word}#${ctx.taskId}` }),
          };
        },
        'upper-source',
      )
      .addSink('echo-sink', { topic: 'echo', keySerde: stringSerde, valueSerde: stringSerde }, 'echo')
      .build();
    assert.equal(topology.subtopologies.length, 1);
    assert.equal(chained.subtopologies.length, 2);
    const driver = new TopologyTestDriver(chained);
    await driver.pipeInput('words', 'k', { word: 'hi', seq: 1 });
    assert.deepEqual(
      driver.readAllOutputs('echo').map((r) => r.value),
      ['HI#1_0'],
    );
    assert.deepEqual(
      driver.readAllOutputs<string, WordEvent>('upper-words').map((r) => r.value.word),
      ['HI'],
    );
  });

  test('processing errors: policy dlq sends the record to the DLQ without its partial output; policy fail throws', async () => {
    const topology = () =>
      new TopologyBuilder()
        .addSource('in', { topics: ['in'], keySerde: stringSerde, valueSerde: stringSerde })
        .addProcessor(
          'picky',
          () => {
            let ctx: ProcessorContext;
            return {
              init: (c: ProcessorContext) => void (ctx = c),
              process(r: StreamRecord<string, string>) {
                ctx.forward(r);
                if (r.value === 'bad') throw new PushError('CONTRACT_BROKEN', 'value must not be bad');
              },
            };
          },
          'in',
        )
        .addSink('out', { topic: 'out', keySerde: stringSerde, valueSerde: stringSerde }, 'picky')
        .build();
    const lenient = new TopologyTestDriver(topology(), { processingErrorPolicy: 'dlq', dlqTopic: 'dlq' });
    await lenient.pipeInput('in', 'k', 'good');
    await lenient.pipeInput('in', 'k', 'bad');
    await lenient.pipeInput('in', 'k', 'good2');
    assert.deepEqual(
      lenient.readAllOutputs('out').map((r) => r.value),
      ['good', 'good2'],
    );
    const [letter] = lenient.readAllOutputs<Buffer, Buffer>('dlq');
    assert.equal(letter?.value?.toString(), 'bad');
    assert.equal(letter?.headers[DLQ_HEADERS.errorCode], 'CONTRACT_BROKEN');
    assert.equal(letter?.headers[DLQ_HEADERS.phase], 'processing');
    assert.equal(letter?.headers[DLQ_HEADERS.sourceOffset], '1');

    const strict = new TopologyTestDriver(topology(), { processingErrorPolicy: 'fail' });
    await assert.rejects(strict.pipeInput('in', 'k', 'bad'), /TASK_FAILED|value must not be bad/);
  });

  test('getStateStore of a store not connected to the processor is refused', async () => {
    const topology = new TopologyBuilder()
      .addSource('in', { topics: ['in'], keySerde: stringSerde, valueSerde: stringSerde })
      .addProcessor('nosy', () => ({ init: (c: ProcessorContext) => void c.getStateStore('other'), process() {} }), 'in')
      .addProcessor('owner', () => ({ process() {} }), 'in')
      .addStateStore(keyValueStore('other'), 'owner')
      .build();
    const driver = new TopologyTestDriver(topology);
    await assert.rejects(driver.pipeInput('in', 'k', 'v'), /not connected to nosy/);
  });

  test('recordMetadata exposes topic, partition and offset; headers reach the processor', async () => {
    const seen: unknown[] = [];
    const topology = new TopologyBuilder()
      .addSource('in', { topics: ['in'], keySerde: stringSerde, valueSerde: stringSerde })
      .addProcessor(
        'spy',
        () => {
          let ctx: ProcessorContext;
          return {
            init: (c: ProcessorContext) => void (ctx = c),
            process: (r: StreamRecord<string, string>) => void seen.push([ctx.recordMetadata(), r.headers, ctx.streamTimeMs()]),
          };
        },
        'in',
      )
      .build();
    const driver = new TopologyTestDriver(topology);
    await driver.pipeInput('in', 'k', 'v', { timestamp: 42, headers: { h: 'x' } });
    await driver.pipeInput('in', 'k', 'v', { timestamp: 7 });
    assert.deepEqual(seen, [
      [{ topic: 'in', partition: 0, offset: '0' }, { h: 'x' }, 42],
      [{ topic: 'in', partition: 0, offset: '1' }, {}, 42],
    ]);
  });
});
