import { ContractError, PushError, errorCode, errorMessage, isRetriable } from '../common/errors.ts';
import type { Logger } from '../common/log.ts';
import type { StreamRecord } from './api.ts';
import type { SinkNode } from './builder.ts';
import { fitDeadLetter, outputDeadLetter } from './dlq.ts';
import { oversizeBytes } from './record-size.ts';
import type { OutputRecord } from './task.ts';
import type { TopicRules } from './topic-rules.ts';

/** What a task's production path needs from its task (task.ts). */
export interface ProductionContext {
  readonly taskId: string;
  readonly partition: number;
  readonly applicationId: string;
  readonly dlqTopic: string;
  /** The DLQ topic's record limit (dlq.ts fitDeadLetter). */
  readonly dlqLimit: number;
  /** Wall-clock time in epoch ms. */
  readonly clock: () => number;
  readonly logger?: Logger | undefined;
  /** A DLQ record was written for an output that has no input record (see TaskOptions.onOutputDeadLetter). */
  readonly onOutputDeadLetter?: ((event: { topic: string; code: string; origin: string }) => void) | undefined;
  /** Appends a record (a sink node's output or a DLQ record) to the task's outputs of the current commit. */
  readonly output: (record: OutputRecord) => void;
  /** A sink node wrote a record (per-node counts). */
  readonly counted: (sink: string) => void;
  /** True while an input record goes through the graph. */
  readonly processingInput: () => boolean;
  /** What writes outputs while no input record is processed: `punctuator:<node>`, `flush:<node>`, `init:<node>`. */
  readonly origin: () => string;
}

/** A sink node's output that could not be written, found while an input record was processed. */
export interface ProductionFailure {
  readonly error: unknown;
  readonly sink: SinkNode;
}

/**
 * A task's production path: serializes sink nodes' outputs, keeps them within what the broker
 * accepts on their topic, and turns what it refuses into production errors (docs/design.md,
 * "Runtime"): the input record, or the output itself when there is none, goes to the DLQ (dlq.ts),
 * and the task goes on.
 */
export class TaskProduction {
  /** The first output of the current input record that a sink node could not write. */
  private failure: ProductionFailure | undefined;
  /** What the broker refuses, per sink node name. */
  private readonly sinkRules = new Map<string, TopicRules>();

  constructor(
    private readonly ctx: ProductionContext,
    sinks: readonly SinkNode[],
    rules: (topic: string) => TopicRules,
  ) {
    for (const sink of sinks) this.sinkRules.set(sink.name, rules(sink.topic));
  }

  /** The current input record's production failure, if any; cleared (the next record starts without one). */
  takeFailure(): ProductionFailure | undefined {
    const failure = this.failure;
    this.failure = undefined;
    return failure;
  }

  /**
   * Serializes and queues one output. A deterministic failure here (the serde refuses the value, or
   * the record is over the topic's record limit) never throws into the processor: it is a
   * production error (see failed). A retriable one (the registry unreachable) does, and fails the
   * task.
   */
  write(sink: SinkNode, record: StreamRecord<unknown, unknown>): void | Promise<unknown> {
    let key: Buffer | null | Promise<Buffer> = null;
    let value: Buffer | null | Promise<Buffer> = null;
    try {
      if (record.key !== null && record.key !== undefined) key = sink.keySerde.serialize(sink.topic, record.key);
      if (record.value !== null && record.value !== undefined) value = sink.valueSerde.serialize(sink.topic, record.value);
    } catch (error) {
      // The value's serializer threw: that is the failure reported; the key's pending outcome no longer matters.
      if (isPromise(key)) key.catch(() => undefined);
      this.failed(sink, record, Buffer.isBuffer(key) ? key : record.key, record.value, serializationError(sink, error));
      return;
    }
    if (isPromise(key) || isPromise(value)) {
      return Promise.all([key, value]).then(
        ([k, v]) => this.emit(sink, record, k, v),
        (error: unknown) => this.failed(sink, record, record.key, record.value, serializationError(sink, error)),
      );
    }
    this.emit(sink, record, key, value);
  }

  private emit(sink: SinkNode, record: StreamRecord<unknown, unknown>, key: Buffer | null, value: Buffer | null): void {
    const headers = { ...record.headers };
    const rules = this.sinkRules.get(sink.name)!;
    const size = oversizeBytes(key, value, headers, rules.maxRecordBytes);
    if (size > 0 || (key === null && rules.keyRequired)) {
      const error =
        size > 0
          ? new ContractError(
              'RECORD_TOO_LARGE',
              `a record of ${size} bytes for ${sink.topic} is over the limit of ${rules.maxRecordBytes} bytes (maxRecordBytes or the topic's max.message.bytes)`,
            )
          : new ContractError('INVALID_RECORD', `${sink.topic} is compacted and refuses a record without a key`);
      this.failed(sink, { ...record, headers }, key, value, error);
      return;
    }
    this.ctx.output({ topic: sink.topic, key, value, timestamp: record.timestamp, headers });
    this.ctx.counted(sink.name);
  }

  /**
   * An output the sink node cannot write. While an input record is processed, that record goes to the
   * DLQ once it is through the graph (the task takes the failure, see takeFailure). Without one (a
   * punctuator, a flush, init), the output itself goes to the DLQ, with its reason and origin, and
   * the punctuator goes on: throwing would stop the task, and the same stored entry would stop it
   * again after every restart.
   */
  private failed(sink: SinkNode, record: StreamRecord<unknown, unknown>, key: unknown, value: unknown, error: unknown): void {
    const { ctx } = this;
    if (ctx.processingInput()) {
      this.failure ??= { error, sink };
      return;
    }
    const origin = ctx.origin();
    const where = { node: sink.name, sinkTopic: sink.topic, origin, taskId: ctx.taskId };
    const letter = outputDeadLetter(
      ctx.dlqTopic,
      { key, value, timestamp: record.timestamp, headers: { ...record.headers }, partition: ctx.partition },
      error,
      ctx.applicationId,
      ctx.clock(),
      where,
    );
    ctx.output(fitDeadLetter(letter, ctx.dlqLimit));
    const code = errorCode(error);
    ctx.logger?.warn('output dead-lettered', { task: ctx.taskId, node: sink.name, topic: sink.topic, origin, code });
    ctx.onOutputDeadLetter?.({ topic: sink.topic, code, origin });
  }

  /**
   * A store value over its changelog topic's limit: the broker would refuse the whole commit, after
   * every restart again (a partition stalled for good). It goes to the DLQ instead, with its store
   * and size, and is not written to the changelog (as Kafka Streams' production exception handler
   * answering CONTINUE): the store keeps the value in memory, but a restore would bring back the
   * key's previous value. Ingest bounds (docs/design.md, "Ingest validation") keep stored values far
   * below the limit, so this is the last line, not the rule.
   */
  oversizeChange(store: string, record: OutputRecord, limit: number): void {
    const { ctx } = this;
    const size = oversizeBytes(record.key, record.value, record.headers, limit);
    const error = new ContractError(
      'CHANGELOG_RECORD_TOO_LARGE',
      `a value of store ${store} of ${size} bytes is over its changelog's limit of ${limit} bytes; kept in memory only`,
    );
    const where = { node: store, sinkTopic: record.topic, origin: `changelog:${store}`, taskId: ctx.taskId };
    const letter = outputDeadLetter(ctx.dlqTopic, { ...record, partition: ctx.partition }, error, ctx.applicationId, ctx.clock(), where);
    ctx.output(fitDeadLetter(letter, ctx.dlqLimit));
    ctx.logger?.error('store value over the changelog limit: dead-lettered, not durable', { task: ctx.taskId, store, bytes: size });
    ctx.onOutputDeadLetter?.({ topic: record.topic, code: 'CHANGELOG_RECORD_TOO_LARGE', origin: where.origin });
  }
}

const isPromise = (x: unknown): x is Promise<unknown> => !!x && typeof (x as { then?: unknown }).then === 'function';

/** A serde's refusal as a production error; a retriable failure (registry unreachable) is thrown on. */
function serializationError(sink: SinkNode, error: unknown): PushError {
  if (isRetriable(error)) throw error;
  if (error instanceof PushError) return error;
  return new ContractError('SERIALIZATION_FAILED', `sink ${sink.name} cannot serialize a record for ${sink.topic}: ${errorMessage(error)}`, error);
}
