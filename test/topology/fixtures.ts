import type { KeyValueStore, TimerStore } from '../../topology/stores.ts';
import { keyValueStore, timerStore } from '../../topology/stores.ts';
import { withStores, type Processor, type ProcessorContext, type StreamRecord } from '../../topology/api.ts';
import { TopologyBuilder, type Topology } from '../../topology/builder.ts';
import { avroSerde, stringSerde, jsonSerde } from '../../topology/serdes.ts';

/** A small Avro value used by the runtime tests: a word event. */
export const wordSchema = {
  type: 'record',
  name: 'WordEvent',
  namespace: 'test.topology',
  fields: [
    { name: 'word', type: 'string' },
    { name: 'seq', type: 'long' },
  ],
} as const;

export interface WordEvent {
  word: string;
  seq: number;
}

export interface WordCount {
  word: string;
  count: number;
  seq: number;
}

/** Counts events per key in a changelogged store and emits the running count for every input. */
export class CountingProcessor implements Processor<string, WordEvent, string, WordCount> {
  private ctx!: ProcessorContext<string, WordCount>;
  private counts!: KeyValueStore<number>;

  init(ctx: ProcessorContext<string, WordCount>): void {
    this.ctx = ctx;
    this.counts = ctx.getStateStore<KeyValueStore<number>>('word-counts');
  }

  process(record: StreamRecord<string, WordEvent>): void {
    const count = (this.counts.get(record.key) ?? 0) + 1;
    this.counts.put(record.key, count);
    this.ctx.forward({ key: record.key, value: { word: record.value.word, count, seq: record.value.seq }, timestamp: record.timestamp });
  }
}

/** source → counter (store word-counts) → sink node; the counting topology of the runtime tests. */
export function countingTopology(input: string, output: string, valueSerde = avroSerde<WordEvent>(wordSchema)): Topology {
  return new TopologyBuilder()
    .addSource('words-source', { topics: [input], keySerde: stringSerde, valueSerde })
    .addProcessor(
      'word-counter',
      withStores(() => new CountingProcessor(), [keyValueStore<number>('word-counts')]),
      'words-source',
    )
    .addSink('counts-sink', { topic: output, keySerde: stringSerde, valueSerde: jsonSerde<WordCount>() }, 'word-counter')
    .build();
}

/** Holds each key until `holdMs` of wall-clock time passed, then releases it (a timer-store user). */
export class HoldProcessor implements Processor<string, string, string, string> {
  private ctx!: ProcessorContext<string, string>;
  private timers!: TimerStore;
  private held!: KeyValueStore<string>;
  constructor(private readonly holdMs: number) {}

  init(ctx: ProcessorContext<string, string>): void {
    this.ctx = ctx;
    this.timers = ctx.getStateStore<TimerStore>('hold-timers');
    this.held = ctx.getStateStore<KeyValueStore<string>>('held-values');
    ctx.schedule(1000, 'wall-clock', (now) => {
      for (const { key } of this.timers.popDue(now)) {
        const value = this.held.get(key)!;
        this.held.delete(key);
        ctx.forward({ key, value, timestamp: now });
      }
    });
  }

  process(record: StreamRecord<string, string>): void {
    if (record.value === 'cancel') {
      this.timers.cancel(record.key);
      this.held.delete(record.key);
      return;
    }
    this.held.put(record.key, record.value);
    this.timers.set(record.key, this.ctx.wallClockTimeMs() + this.holdMs);
  }
}

export function holdTopology(input = 'hold-in', output = 'hold-out', holdMs = 5000): Topology {
  return new TopologyBuilder()
    .addSource('hold-source', { topics: [input], keySerde: stringSerde, valueSerde: stringSerde })
    .addProcessor(
      'hold',
      withStores(() => new HoldProcessor(holdMs), [timerStore('hold-timers'), keyValueStore<string>('held-values')]),
      'hold-source',
    )
    .addSink('hold-sink', { topic: output, keySerde: stringSerde, valueSerde: stringSerde }, 'hold')
    .build();
}
