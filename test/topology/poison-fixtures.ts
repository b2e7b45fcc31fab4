import type { ProcessorContext, StreamRecord } from '../../topology/api.ts';
import { TopologyBuilder, type Topology } from '../../topology/builder.ts';
import { avroSerde, bufferSerde, jsonSerde, stringSerde, type Serde } from '../../topology/serdes.ts';
import { keyValueStore, timerStore, type KeyValueStore, type TimerStore } from '../../topology/stores.ts';
import { wordSchema, type WordEvent } from './fixtures.ts';

/** Topologies whose outputs a sink node cannot write (production errors, docs/design.md, "Runtime"). */

/**
 * words (raw Avro) → `scaler` (copies seq, except for the words `huge` (1e20) and `fraction` (0.5),
 * which an Avro long refuses) → `scaled` through `outputSerde`, and JSON `audit` for every record.
 */
export function scalerTopology(
  input = 'words',
  output = 'scaled',
  audit = 'audit',
  outputSerde: Serde<WordEvent> = avroSerde<WordEvent>(wordSchema),
): Topology {
  const seqFor: Record<string, number> = { huge: 1e20, fraction: 0.5 };
  return new TopologyBuilder()
    .addSource('words-source', { topics: [input], keySerde: stringSerde, valueSerde: avroSerde<WordEvent>(wordSchema) })
    .addProcessor(
      'scaler',
      () => {
        let ctx: ProcessorContext;
        return {
          init: (c: ProcessorContext) => void (ctx = c),
          process(r: StreamRecord<string, WordEvent>) {
            ctx.forward({ ...r, value: { word: r.value.word, seq: seqFor[r.value.word] ?? r.value.seq } }, 'scaled-sink');
            ctx.forward({ ...r, value: { seen: r.value.word } }, 'audit-sink');
          },
        };
      },
      'words-source',
    )
    .addSink('scaled-sink', { topic: output, keySerde: stringSerde, valueSerde: outputSerde }, 'scaler')
    .addSink('audit-sink', { topic: audit, keySerde: stringSerde, valueSerde: jsonSerde() }, 'scaler')
    .build();
}

/**
 * Holds each word (JSON, so any number passes) for 500 ms; a wall-clock punctuator every second
 * releases what is due to `released` through `outputSerde`, as the receipt join expires entries.
 */
export function releaseTopology(input = 'held', output = 'released', outputSerde: Serde<WordEvent> = avroSerde<WordEvent>(wordSchema)): Topology {
  return new TopologyBuilder()
    .addSource('held-source', { topics: [input], keySerde: stringSerde, valueSerde: jsonSerde<WordEvent>() })
    .addProcessor(
      'releaser',
      () => {
        let ctx: ProcessorContext;
        let held: KeyValueStore<WordEvent>;
        let due: TimerStore;
        return {
          init(c: ProcessorContext) {
            ctx = c;
            held = c.getStateStore('held-words');
            due = c.getStateStore('held-due');
            c.schedule(1000, 'wall-clock', (now) => {
              for (const { key } of due.popDue(now)) {
                ctx.forward({ key, value: held.get(key), timestamp: now, headers: { 'trace-id': `t-${key}` } });
                held.delete(key);
              }
            });
          },
          process(r: StreamRecord<string, WordEvent>) {
            held.put(r.key, r.value);
            due.set(r.key, ctx.wallClockTimeMs() + 500);
          },
        };
      },
      'held-source',
    )
    .addStateStore(keyValueStore<WordEvent>('held-words'), 'releaser')
    .addStateStore(timerStore('held-due'), 'releaser')
    .addSink('released-sink', { topic: output, keySerde: stringSerde, valueSerde: outputSerde }, 'releaser')
    .build();
}

/** blobs (bytes) → `padder` (appends `pad` bytes) → `padded`, keyed or not as the input. */
export function padTopology(pad: number, headers: Record<string, string> = {}, input = 'blobs', output = 'padded'): Topology {
  return new TopologyBuilder()
    .addSource('blob-source', { topics: [input], keySerde: stringSerde, valueSerde: bufferSerde })
    .addProcessor(
      'padder',
      () => {
        let ctx: ProcessorContext;
        return {
          init: (c: ProcessorContext) => void (ctx = c),
          process: (r: StreamRecord<string | null, Buffer>) => ctx.forward({ ...r, value: Buffer.concat([r.value, Buffer.alloc(pad, 0x2e)]), headers }),
        };
      },
      'blob-source',
    )
    .addSink('padded-sink', { topic: output, keySerde: stringSerde, valueSerde: bufferSerde }, 'padder')
    .build();
}
