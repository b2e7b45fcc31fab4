import { PushError, isRetriable, errorMessage } from '../common/errors.ts';
import type { Logger } from '../common/log.ts';
import type { Cancellable, Processor, ProcessorContext, PunctuationType, RecordMetadata, StreamRecord } from './api.ts';
import type { ProcessorNode, SinkNode, SourceNode, SubTopology, Topology, TopologyNode } from './builder.ts';
import { deadLetter, type DlqPhase, type DlqSource } from './dlq.ts';
import { createStore, type ChangeloggedStore } from './in-memory-stores.ts';

/** A record as read from a source topic, bytes still encoded. */
export type InputRecord = DlqSource;

/** A record to write: sink output, DLQ record or changelog record (the latter carries a partition). */
export interface OutputRecord {
  readonly topic: string;
  readonly key: Buffer | null;
  readonly value: Buffer | null;
  readonly timestamp: number;
  readonly headers: Record<string, string>;
  readonly partition?: number;
}

export type ProcessingErrorPolicy = 'fail' | 'dlq';

export interface TaskOptions {
  readonly applicationId: string;
  readonly topology: Topology;
  readonly subtopology: SubTopology;
  readonly partition: number;
  /** Wall-clock time in epoch ms. */
  readonly clock: () => number;
  readonly dlqTopic: string;
  readonly processingErrorPolicy: ProcessingErrorPolicy;
  /** Name of a store's changelog topic. */
  readonly changelogTopic: (store: string) => string;
  readonly logger?: Logger;
}

export type ProcessOutcome = { kind: 'processed' } | { kind: 'dead-lettered'; code: string; phase: DlqPhase };

/** A processing failure that the policy does not absorb: the task must stop and be recreated. */
export class TaskFailedError extends PushError {
  constructor(taskId: string, cause: unknown) {
    super('TASK_FAILED', `task ${taskId} failed: ${errorMessage(cause)}`, { retriable: isRetriable(cause), cause });
  }
}

interface Schedule {
  readonly type: PunctuationType;
  readonly intervalMs: number;
  readonly node: string;
  readonly fn: (timestamp: number) => void | Promise<void>;
  nextMs: number;
  cancelled: boolean;
}

const isPromise = (x: unknown): x is Promise<unknown> => !!x && typeof (x as { then?: unknown }).then === 'function';

const PROCESSED: ProcessOutcome = Object.freeze({ kind: 'processed' });

/**
 * One task: the processors and stores of one sub-topology for one input partition. Knows nothing
 * of Kafka: the runtime (or the TopologyTestDriver) feeds it encoded records, fires its clock, and
 * drains its outputs and changelog writes at commit.
 *
 * Ordering: `forward` runs children depth-first and synchronously while every processor is
 * synchronous; once a processor returns a promise, later forwards of the same input are chained
 * behind it, so a task never runs two records through a processor at once.
 */
export class StreamTask {
  readonly id: string;
  readonly partition: number;
  private readonly options: TaskOptions;
  private readonly nodes = new Map<string, TopologyNode>();
  private readonly processors = new Map<string, Processor>();
  private readonly contexts = new Map<string, ProcessorContext>();
  readonly stores = new Map<string, ChangeloggedStore>();
  private readonly sourceByTopic = new Map<string, SourceNode>();
  private readonly schedules: Schedule[] = [];
  private pending: Promise<unknown> | undefined;
  private metadata: RecordMetadata | undefined;
  /** The encoded record being processed (what a deferred record's DLQ entry carries). */
  private input: InputRecord | undefined;
  /** A deferred record's failure that the policy does not absorb; thrown by the next flush. */
  private deferredFailure: unknown;
  private streamTime = -1;
  private outputs: OutputRecord[] = [];
  /** Last processed offset per source topic. */
  private readonly offsets = new Map<string, string>();
  /** Last offset per source topic that a drain handed to a commit. */
  private readonly committedThrough = new Map<string, bigint>();
  /** Per source topic, the records whose completion is deferred, oldest first. */
  private readonly deferred = new Map<string, Array<{ readonly offset: string; done: boolean }>>();
  private readonly recordsIn = new Map<string, number>();
  private readonly recordsOut = new Map<string, number>();
  private inputSinceCommit = 0;
  private uncommitted = false;

  constructor(options: TaskOptions) {
    this.options = options;
    this.partition = options.partition;
    this.id = `${options.subtopology.id}_${options.partition}`;
    for (const node of options.subtopology.nodes) {
      this.nodes.set(node.name, node);
      if (node.kind === 'source') for (const t of node.topics) this.sourceByTopic.set(t, node);
    }
    for (const def of options.subtopology.stores) this.stores.set(def.name, createStore(def));
  }

  /** Creates the processors and calls their `init` in topological order. Call after restoring stores. */
  async init(): Promise<void> {
    for (const node of this.nodes.values()) {
      if (node.kind !== 'processor') continue;
      const processor = node.supplier();
      const context = this.contextFor(node);
      this.processors.set(node.name, processor);
      this.contexts.set(node.name, context);
      await processor.init?.(context);
      await this.drain();
    }
  }

  streamTimeMs(): number {
    return this.streamTime;
  }

  /** True when records were processed or punctuators ran since the last drain, or deferred records are unfinished. */
  hasUncommittedWork(): boolean {
    if (this.uncommitted) return true;
    // Deferred records may have finished since: a commit's flush forwards them.
    for (const queue of this.deferred.values()) if (queue.length > 0) return true;
    return false;
  }

  /**
   * Runs one input record through the graph, then any stream-time punctuators it made due.
   * Synchronous (no promise) when the serdes answer from their caches and every processor the
   * record reaches is synchronous: the usual case, so a record costs no microtask.
   */
  process(input: InputRecord): ProcessOutcome | Promise<ProcessOutcome> {
    const source = this.sourceByTopic.get(input.topic);
    if (!source) throw new PushError('UNKNOWN_SOURCE_TOPIC', `task ${this.id} does not read ${input.topic}`);
    this.offsets.set(input.topic, input.offset);
    this.uncommitted = true;
    this.inputSinceCommit++;
    let key: unknown;
    let value: unknown;
    try {
      key = input.key === null ? null : source.keySerde.deserialize(input.topic, input.key);
      value = input.value === null ? null : source.valueSerde.deserialize(input.topic, input.value);
    } catch (error) {
      return this.undecodable(input, error);
    }
    if (isPromise(key) || isPromise(value)) {
      return Promise.all([key, value]).then(
        ([k, v]) => this.run(input, source, k, v),
        (error: unknown) => this.undecodable(input, error),
      );
    }
    return this.run(input, source, key, value);
  }

  private run(input: InputRecord, source: SourceNode, key: unknown, value: unknown): ProcessOutcome | Promise<ProcessOutcome> {
    this.count(this.recordsIn, source.name);
    this.metadata = { topic: input.topic, partition: input.partition, offset: input.offset };
    this.input = input;
    const advanced = input.timestamp > this.streamTime;
    if (advanced) this.streamTime = input.timestamp;
    const outputsBefore = this.outputs.length;
    try {
      const record: StreamRecord<unknown, unknown> = { key, value, timestamp: input.timestamp, headers: input.headers };
      for (const child of source.children) this.invoke(child, record);
      this.count(this.recordsOut, source.name, source.children.length);
    } catch (error) {
      return this.failed(input, error, outputsBefore);
    }
    if (this.pending) {
      return this.drain().then(
        () => this.processed(advanced),
        (error: unknown) => this.failed(input, error, outputsBefore),
      );
    }
    return this.processed(advanced);
  }

  private processed(advanced: boolean): ProcessOutcome | Promise<ProcessOutcome> {
    this.metadata = undefined;
    this.input = undefined;
    if (advanced && this.schedules.some((s) => s.type === 'stream-time' && !s.cancelled)) return this.punctuate('stream-time', this.streamTime).then(() => PROCESSED);
    return PROCESSED;
  }

  /** A record the serdes cannot decode goes to the DLQ; a transient failure (registry down) fails the task. */
  private undecodable(input: InputRecord, error: unknown): ProcessOutcome {
    if (isRetriable(error)) throw new TaskFailedError(this.id, error);
    return this.toDeadLetter(input, error, 'deserialization');
  }

  private failed(input: InputRecord, error: unknown, outputsBefore: number): ProcessOutcome {
    this.pending = undefined;
    this.metadata = undefined;
    this.input = undefined;
    if (this.options.processingErrorPolicy === 'fail' || isRetriable(error)) throw new TaskFailedError(this.id, error);
    // Outputs of a failed record are dropped: the record goes to the DLQ as a whole.
    this.outputs.length = outputsBefore;
    return this.toDeadLetter(input, error, 'processing');
  }

  /** Fires the wall-clock punctuators that are due at `nowMs`. */
  async punctuateWallClock(nowMs: number = this.options.clock()): Promise<void> {
    await this.punctuate('wall-clock', nowMs);
  }

  /** Earliest due wall-clock punctuation, for the runtime's timer. */
  nextWallClockMs(): number | undefined {
    let next: number | undefined;
    for (const s of this.schedules) if (!s.cancelled && s.type === 'wall-clock' && (next === undefined || s.nextMs < next)) next = s.nextMs;
    return next;
  }

  /**
   * Lets every processor finish buffered work (in topological order), before a commit. With
   * `complete` false (a periodic commit), a processor that defers completions only forwards what is
   * finished (`flushFinished`); what is still in flight stays out of the commit's offsets.
   */
  async flush({ complete = true }: { complete?: boolean } = {}): Promise<void> {
    try {
      if (this.deferredFailure !== undefined) throw this.deferredFailure;
      for (const processor of this.processors.values()) {
        const flush = !complete && processor.flushFinished ? processor.flushFinished : processor.flush;
        if (!flush) continue;
        await flush.call(processor);
        await this.drain();
      }
    } catch (error) {
      this.pending = undefined;
      throw new TaskFailedError(this.id, error);
    }
  }

  /** Everything produced since the last drain: sink and DLQ records, then changelog records. */
  drainOutputs(): { records: OutputRecord[]; changelog: OutputRecord[]; offsets: Map<string, string>; inputRecords: number } {
    const records = this.outputs;
    this.outputs = [];
    const changelog: OutputRecord[] = [];
    const now = this.options.clock();
    for (const store of this.stores.values()) {
      if (!store.changelogged) continue;
      const topic = this.options.changelogTopic(store.name);
      for (const change of store.drainChanges()) {
        changelog.push({ topic, partition: this.partition, key: Buffer.from(change.key), value: change.value, timestamp: now, headers: {} });
      }
    }
    const offsets = this.committableOffsets();
    const inputRecords = this.inputSinceCommit;
    this.inputSinceCommit = 0;
    this.uncommitted = false;
    return { records, changelog, offsets, inputRecords };
  }

  /**
   * Per topic, the last offset whose record and every earlier one are finished, where it moved
   * since the last drain: the last processed offset, or the one before the oldest deferred record.
   */
  private committableOffsets(): Map<string, string> {
    const out = new Map<string, string>();
    for (const [topic, processed] of this.offsets) {
      const deferred = this.deferred.get(topic);
      while (deferred && deferred.length > 0 && deferred[0]!.done) deferred.shift();
      const through = deferred && deferred.length > 0 ? BigInt(deferred[0]!.offset) - 1n : BigInt(processed);
      const committed = this.committedThrough.get(topic);
      if (committed !== undefined && through <= committed) continue;
      this.committedThrough.set(topic, through);
      out.set(topic, through.toString());
    }
    return out;
  }

  /**
   * Holds the current record's offset out of commits until the returned function is called
   * (ProcessorContext.deferCompletion). Called with an error, the record failed: under the `dlq`
   * policy a non-retriable error sends that record (not the one being processed now) to the DLQ;
   * otherwise the next flush fails the task.
   */
  private defer(node: string): (error?: unknown) => void {
    const metadata = this.metadata;
    const input = this.input;
    if (!metadata) return () => undefined;
    let queue = this.deferred.get(metadata.topic);
    if (!queue) this.deferred.set(metadata.topic, (queue = []));
    const entry = { offset: metadata.offset, done: false };
    queue.push(entry);
    return (error?: unknown) => {
      if (entry.done) return;
      entry.done = true;
      this.uncommitted = true;
      if (error === undefined) return;
      if (this.options.processingErrorPolicy === 'fail' || isRetriable(error) || !input) this.deferredFailure ??= error;
      else this.outputs.push(deadLetter(this.options.dlqTopic, input, error, 'processing', this.options.applicationId, this.options.clock(), node));
    };
  }

  /** Per-node counts since the last call. */
  drainNodeCounts(): Array<{ node: string; recordsIn: number; recordsOut: number }> {
    const names = new Set([...this.recordsIn.keys(), ...this.recordsOut.keys()]);
    const out = [...names].map((node) => ({ node, recordsIn: this.recordsIn.get(node) ?? 0, recordsOut: this.recordsOut.get(node) ?? 0 }));
    this.recordsIn.clear();
    this.recordsOut.clear();
    return out;
  }

  async close(): Promise<void> {
    for (const s of this.schedules) s.cancelled = true;
    for (const [name, processor] of this.processors) {
      try {
        await processor.close?.();
      } catch (error) {
        this.options.logger?.warn('processor close failed', { task: this.id, node: name, error });
      }
    }
    this.processors.clear();
  }

  private toDeadLetter(input: InputRecord, error: unknown, phase: DlqPhase): ProcessOutcome {
    const letter = deadLetter(this.options.dlqTopic, input, error, phase, this.options.applicationId, this.options.clock());
    this.outputs.push(letter);
    return { kind: 'dead-lettered', code: letter.headers['dlq.error.code']!, phase };
  }

  private async punctuate(type: PunctuationType, nowMs: number): Promise<void> {
    const due = this.schedules.filter((s) => !s.cancelled && s.type === type && s.nextMs <= nowMs).sort((a, b) => a.nextMs - b.nextMs);
    for (const s of due) {
      // Missed intervals are skipped; the schedule stays on its grid.
      s.nextMs += s.intervalMs * (Math.floor((nowMs - s.nextMs) / s.intervalMs) + 1);
      this.uncommitted = true;
      try {
        const r = s.fn(nowMs);
        if (isPromise(r)) await r;
        await this.drain();
      } catch (error) {
        this.pending = undefined;
        throw new TaskFailedError(this.id, error);
      }
    }
  }

  /** Awaits the chain of asynchronous forwards until the task is quiet. */
  private async drain(): Promise<void> {
    while (this.pending) {
      const p = this.pending;
      await p;
      if (this.pending === p) this.pending = undefined;
    }
  }

  private invoke(nodeName: string, record: StreamRecord<unknown, unknown>): void {
    if (this.pending) {
      this.chain(this.pending.then(() => this.runNode(nodeName, record)));
      return;
    }
    const r = this.runNode(nodeName, record);
    if (isPromise(r)) this.chain(r);
  }

  private chain(p: Promise<unknown>): void {
    p.catch(() => undefined);
    this.pending = p;
  }

  private runNode(nodeName: string, record: StreamRecord<unknown, unknown>): void | Promise<unknown> {
    const node = this.nodes.get(nodeName)!;
    this.count(this.recordsIn, nodeName);
    if (node.kind === 'sink') return this.writeSink(node, record);
    return this.processors.get(nodeName)!.process(record);
  }

  private writeSink(sink: SinkNode, record: StreamRecord<unknown, unknown>): void | Promise<unknown> {
    const key = record.key === null || record.key === undefined ? null : sink.keySerde.serialize(sink.topic, record.key);
    const value = record.value === null || record.value === undefined ? null : sink.valueSerde.serialize(sink.topic, record.value);
    const emit = (k: Buffer | null, v: Buffer | null) => {
      this.outputs.push({ topic: sink.topic, key: k, value: v, timestamp: record.timestamp, headers: { ...record.headers } });
      this.count(this.recordsOut, sink.name);
    };
    if (isPromise(key) || isPromise(value)) return Promise.all([key, value]).then(([k, v]) => emit(k, v));
    emit(key, value);
  }

  private count(map: Map<string, number>, node: string, n = 1): void {
    map.set(node, (map.get(node) ?? 0) + n);
  }

  private contextFor(node: ProcessorNode): ProcessorContext {
    const task: StreamTask = this; // eslint-disable-line @typescript-eslint/no-this-alias -- the context is a plain object literal
    return {
      applicationId: this.options.applicationId,
      taskId: this.id,
      partition: this.partition,
      recordMetadata: () => task.metadata,
      forward(record, childName) {
        const targets = childName === undefined ? node.children : typeof childName === 'string' ? [childName] : childName;
        for (const child of targets) {
          if (childName !== undefined && !node.children.includes(child)) throw new PushError('UNKNOWN_CHILD', `${node.name} has no child named ${child}`);
        }
        for (const child of targets) task.invoke(child, record);
        task.count(task.recordsOut, node.name, targets.length);
      },
      schedule(intervalMs, type, fn): Cancellable {
        if (!(intervalMs >= 1)) throw new PushError('INVALID_SCHEDULE', `${node.name}: punctuation interval must be ≥ 1 ms`);
        const s: Schedule = { type, intervalMs, node: node.name, fn, nextMs: type === 'stream-time' ? 0 : task.options.clock() + intervalMs, cancelled: false };
        task.schedules.push(s);
        return { cancel: () => void (s.cancelled = true) };
      },
      getStateStore<S>(name: string): S {
        if (!node.stores.includes(name)) throw new PushError('STORE_NOT_CONNECTED', `store ${name} is not connected to ${node.name}`);
        return task.stores.get(name) as S;
      },
      streamTimeMs: () => task.streamTime,
      wallClockTimeMs: () => task.options.clock(),
      deferCompletion: () => task.defer(node.name),
    };
  }
}
