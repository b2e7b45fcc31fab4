import { PushError, errorMessage, isRetriable } from '../common/errors.ts';
import type { Logger } from '../common/log.ts';
import type { Cancellable, Processor, ProcessorContext, PunctuationType, RecordMetadata, StreamRecord } from './api.ts';
import type { ProcessorNode, SinkNode, SourceNode, SubTopology, Topology, TopologyNode } from './builder.ts';
import { deadLetter, fitDeadLetter, type DlqOrigin, type DlqPhase, type DlqSource } from './dlq.ts';
import { DEFAULT_MAX_RECORD_BYTES, oversizeBytes } from './record-size.ts';
import type { TopicRules } from './topic-rules.ts';
import { createStore, type ChangeloggedStore } from './in-memory-stores.ts';
import { TaskProduction } from './task-production.ts';
import { TaskPositions } from './task-positions.ts';

/** A record as read from a source topic, bytes still encoded. */
export type InputRecord = DlqSource;

/** A record to write: a sink node's output, a DLQ record or a changelog record (the latter carries a partition). */
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
  /**
   * What the broker will refuse on `topic` (sink nodes' topics and the DLQ): records over its
   * `maxRecordBytes` (key + value + headers, as `record-size.ts` counts them), and records without a
   * key where `keyRequired`. Such an output is a production error (docs/design.md, "Runtime").
   * Default: DEFAULT_MAX_RECORD_BYTES and no key rule for every topic.
   */
  readonly topicRules?: (topic: string) => TopicRules;
  /**
   * A DLQ record was written for an output that has no input record (a punctuator, a flush or init
   * wrote it). Dead-lettered input records are reported through ProcessOutcome instead.
   */
  readonly onOutputDeadLetter?: (event: { topic: string; code: string; origin: string }) => void;
  /**
   * A record whose offset a processor pinned has finished and unpinned it (a vendor call answered
   * after its turn ended): the task has work to commit that no turn of its own announced, so the
   * runtime arms its commit timer.
   */
  readonly onUnpinned?: () => void;
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
  readonly fn: (timestamp: number) => void | boolean | Promise<void | boolean>;
  /** ScheduleOptions.nextDueMs (wall-clock only). */
  readonly nextDueMs?: () => number | undefined;
  nextMs: number;
  cancelled: boolean;
}

/**
 * When a wall-clock schedule runs next: its next point on the grid, or, for one that says when it
 * has work (`nextDueMs`), the first point of its grid at or after that; undefined while it has none.
 */
function runsAtMs(s: Schedule): number | undefined {
  if (!s.nextDueMs) return s.nextMs;
  const due = s.nextDueMs();
  if (due === undefined) return undefined;
  return due <= s.nextMs ? s.nextMs : s.nextMs + Math.ceil((due - s.nextMs) / s.intervalMs) * s.intervalMs;
}

const isPromise = (x: unknown): x is Promise<unknown> => !!x && typeof (x as { then?: unknown }).then === 'function';

const PROCESSED: ProcessOutcome = Object.freeze({ kind: 'processed' });

const DEFAULT_RULES: TopicRules = Object.freeze({ maxRecordBytes: DEFAULT_MAX_RECORD_BYTES, keyRequired: false });

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
  /** The encoded record being processed (what a pinned record's DLQ entry carries). */
  private input: InputRecord | undefined;
  /** A pinned record's failure that the policy does not absorb; thrown by the next flush. */
  private pinnedFailure: unknown;
  private streamTime = -1;
  private outputs: OutputRecord[] = [];
  private readonly positions = new TaskPositions();
  private readonly recordsIn = new Map<string, number>();
  private readonly recordsOut = new Map<string, number>();
  private inputSinceCommit = 0;
  private uncommitted = false;
  /** What writes outputs while no input record is processed: `punctuator:<node>`, `flush:<node>`, `init:<node>`. */
  private origin = 'task';
  /** The DLQ topic's record limit. */
  private readonly dlqLimit: number;
  /** Sink nodes' outputs and their production errors (task-production.ts). */
  private readonly production: TaskProduction;

  constructor(options: TaskOptions) {
    this.options = options;
    this.partition = options.partition;
    this.id = `${options.subtopology.id}_${options.partition}`;
    const sinks: SinkNode[] = [];
    for (const node of options.subtopology.nodes) {
      this.nodes.set(node.name, node);
      if (node.kind === 'source') for (const t of node.topics) this.sourceByTopic.set(t, node);
      if (node.kind === 'sink') sinks.push(node);
    }
    const rules = (topic: string) => options.topicRules?.(topic) ?? DEFAULT_RULES;
    this.dlqLimit = rules(options.dlqTopic).maxRecordBytes;
    this.production = new TaskProduction(
      {
        taskId: this.id,
        partition: this.partition,
        applicationId: options.applicationId,
        dlqTopic: options.dlqTopic,
        dlqLimit: this.dlqLimit,
        clock: options.clock,
        logger: options.logger,
        onOutputDeadLetter: options.onOutputDeadLetter,
        output: (record) => this.outputs.push(record),
        counted: (sink) => this.count(this.recordsOut, sink),
        processingInput: () => this.input !== undefined,
        origin: () => this.origin,
      },
      sinks,
      rules,
    );
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
      this.origin = `init:${node.name}`;
      await processor.init?.(context);
      await this.drain();
    }
    this.origin = 'task';
  }

  streamTimeMs(): number {
    return this.streamTime;
  }

  /**
   * Nothing of `topic` up to `offset` is left to process (transaction markers or aborted records
   * followed the last record, see ConsumedThrough): the next commit may cover it.
   */
  consumedThrough(topic: string, offset: string): void {
    if (this.positions.consumedThrough(topic, offset)) this.uncommitted = true;
  }

  /** The offsets a drain handed out for `topics` were not committed: the next drain hands them out again. */
  offsetsNotCommitted(topics: readonly string[]): void {
    this.positions.notCommitted(topics);
    this.uncommitted = true;
  }

  /**
   * True when records were processed or punctuators ran since the last drain, or pinned records
   * are unfinished. A punctuation whose punctuator said it found nothing due (returned `false`:
   * a stale entry of the merge's schedule, for one) and that forwarded nothing and changed no
   * changelogged store does not count, so an idle task commits nothing.
   */
  hasUncommittedWork(): boolean {
    // Pinned records may have finished since: a commit's flush forwards them.
    return this.uncommitted || this.positions.hasPinned();
  }

  /** A punctuation left outputs or store changes behind: they wait for the next commit. */
  private punctuationWrote(outputsBefore: number): boolean {
    if (this.outputs.length > outputsBefore) return true;
    for (const store of this.stores.values()) if (store.hasChanges()) return true;
    return false;
  }

  /** Output records (sink nodes, DLQ) wait for the next commit. */
  hasOutputs(): boolean {
    return this.outputs.length > 0;
  }

  /**
   * Runs one input record through the graph, then any stream-time punctuators it made due.
   * Synchronous (no promise) when the serdes answer from their caches and every processor the
   * record reaches is synchronous: the usual case, so a record costs no microtask.
   */
  process(input: InputRecord): ProcessOutcome | Promise<ProcessOutcome> {
    const source = this.sourceByTopic.get(input.topic);
    if (!source) throw new PushError('UNKNOWN_SOURCE_TOPIC', `task ${this.id} does not read ${input.topic}`);
    this.positions.processing(input.topic, input.offset);
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
        () => this.processed(input, advanced),
        (error: unknown) => this.failed(input, error, outputsBefore),
      );
    }
    return this.processed(input, advanced);
  }

  /**
   * The record went through the graph. If one of its outputs could not be written (production
   * error), the record goes to the DLQ: the failed output is dropped, the record's other outputs
   * and its state changes stand (Kafka Streams' production handler answering CONTINUE), and the
   * task goes on.
   */
  private processed(input: InputRecord, advanced: boolean): ProcessOutcome | Promise<ProcessOutcome> {
    this.metadata = undefined;
    this.input = undefined;
    const failure = this.production.takeFailure();
    const outcome = failure
      ? this.toDeadLetter(input, failure.error, 'production', { node: failure.sink.name, sinkTopic: failure.sink.topic, origin: 'process', taskId: this.id })
      : PROCESSED;
    if (advanced && this.schedules.some((s) => s.type === 'stream-time' && !s.cancelled))
      return this.punctuate('stream-time', this.streamTime).then(() => outcome);
    return outcome;
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
    this.production.takeFailure(); // the record goes to the DLQ as a whole
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
    for (const s of this.schedules) {
      if (s.cancelled || s.type !== 'wall-clock') continue;
      const at = runsAtMs(s);
      if (at !== undefined && (next === undefined || at < next)) next = at;
    }
    return next;
  }

  /**
   * Lets every processor finish buffered work (in topological order), before a commit. With
   * `complete` false (a periodic commit), a processor that pins offsets only forwards what is
   * finished (`flushFinished`); what is still in flight stays out of the commit's offsets.
   */
  async flush({ complete = true }: { complete?: boolean } = {}): Promise<void> {
    try {
      if (this.pinnedFailure !== undefined) throw this.pinnedFailure;
      for (const [name, processor] of this.processors) {
        const flush = !complete && processor.flushFinished ? processor.flushFinished : processor.flush;
        if (!flush) continue;
        this.origin = `flush:${name}`;
        await flush.call(processor);
        await this.drain();
      }
    } catch (error) {
      this.pending = undefined;
      throw new TaskFailedError(this.id, error);
    } finally {
      this.origin = 'task';
    }
  }

  /** Everything produced since the last drain: sink node and DLQ records, then changelog records. */
  drainOutputs(): { records: OutputRecord[]; changelog: OutputRecord[]; offsets: Map<string, string>; inputRecords: number } {
    const changelog: OutputRecord[] = [];
    const now = this.options.clock();
    for (const store of this.stores.values()) {
      if (!store.changelogged) continue;
      const topic = this.options.changelogTopic(store.name);
      const limit = (this.options.topicRules?.(topic) ?? DEFAULT_RULES).maxRecordBytes;
      for (const change of store.drainChanges()) {
        const record: OutputRecord = { topic, partition: this.partition, key: Buffer.from(change.key), value: change.value, timestamp: now, headers: {} };
        if (oversizeBytes(record.key, record.value, record.headers, limit) > 0) this.production.oversizeChange(store.name, record, limit);
        else changelog.push(record);
      }
    }
    const records = this.outputs;
    this.outputs = [];
    const offsets = this.positions.drainCommittable();
    const inputRecords = this.inputSinceCommit;
    this.inputSinceCommit = 0;
    this.uncommitted = false;
    return { records, changelog, offsets, inputRecords };
  }

  /**
   * Pins the current record's offset, keeping it out of commits until the returned function is
   * called (ProcessorContext.pinOffset). Called with an error, the record failed: under the `dlq`
   * policy a non-retriable error sends that record (not the one being processed now) to the DLQ;
   * otherwise the next flush fails the task.
   */
  private pin(node: string): (error?: unknown) => void {
    const metadata = this.metadata;
    const input = this.input;
    if (!metadata) return () => undefined;
    const entry = this.positions.pin(metadata.topic, metadata.offset);
    return (error?: unknown) => {
      if (entry.done) return;
      entry.done = true;
      this.uncommitted = true;
      this.options.onUnpinned?.();
      if (error === undefined) return;
      if (this.options.processingErrorPolicy === 'fail' || isRetriable(error) || !input) this.pinnedFailure ??= error;
      else
        this.outputs.push(
          fitDeadLetter(deadLetter(this.options.dlqTopic, input, error, 'processing', this.options.applicationId, this.options.clock(), node), this.dlqLimit),
        );
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

  private toDeadLetter(input: InputRecord, error: unknown, phase: DlqPhase, where?: DlqOrigin): ProcessOutcome {
    const letter = deadLetter(this.options.dlqTopic, input, error, phase, this.options.applicationId, this.options.clock(), where);
    this.outputs.push(fitDeadLetter(letter, this.dlqLimit));
    return { kind: 'dead-lettered', code: letter.headers['dlq.error.code']!, phase };
  }

  private async punctuate(type: PunctuationType, nowMs: number): Promise<void> {
    // A wall-clock schedule runs at its grid point, or later while it has nothing due (runsAtMs).
    const due = this.schedules
      .filter((s) => !s.cancelled && s.type === type && (type === 'stream-time' ? s.nextMs : (runsAtMs(s) ?? Infinity)) <= nowMs)
      .sort((a, b) => a.nextMs - b.nextMs);
    for (const s of due) {
      // Missed intervals are skipped; the schedule stays on its grid.
      s.nextMs += s.intervalMs * (Math.floor((nowMs - s.nextMs) / s.intervalMs) + 1);
      this.origin = `punctuator:${s.node}`;
      const outputsBefore = this.outputs.length;
      let found: boolean | undefined;
      try {
        const r = s.fn(nowMs);
        found = (isPromise(r) ? await r : r) ?? undefined;
        await this.drain();
      } catch (error) {
        this.pending = undefined;
        throw new TaskFailedError(this.id, error);
      } finally {
        this.origin = 'task';
        if (found !== false || this.punctuationWrote(outputsBefore)) this.uncommitted = true;
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
    // Only marks it handled until drain() awaits `pending`, which then gets the error (or a later link does).
    p.catch(() => undefined);
    this.pending = p;
  }

  private runNode(nodeName: string, record: StreamRecord<unknown, unknown>): void | Promise<unknown> {
    const node = this.nodes.get(nodeName)!;
    this.count(this.recordsIn, nodeName);
    if (node.kind === 'sink') return this.production.write(node, record);
    return this.processors.get(nodeName)!.process(record);
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
      schedule(intervalMs, type, fn, options): Cancellable {
        if (!(intervalMs >= 1)) throw new PushError('INVALID_SCHEDULE', `${node.name}: punctuation interval must be ≥ 1 ms`);
        // A wall-clock schedule runs on its interval's grid of the wall clock, not from now: every
        // task's schedules of one interval fall due together, and the runtime wakes once for them.
        const nextMs = type === 'stream-time' ? 0 : (Math.floor(task.options.clock() / intervalMs) + 1) * intervalMs;
        const nextDueMs = type === 'wall-clock' ? options?.nextDueMs : undefined;
        const s: Schedule = { type, intervalMs, node: node.name, fn, nextMs, cancelled: false, nextDueMs };
        task.schedules.push(s);
        return { cancel: () => void (s.cancelled = true) };
      },
      getStateStore<S>(name: string): S {
        if (!node.stores.includes(name)) throw new PushError('STORE_NOT_CONNECTED', `store ${name} is not connected to ${node.name}`);
        return task.stores.get(name) as S;
      },
      streamTimeMs: () => task.streamTime,
      wallClockTimeMs: () => task.options.clock(),
      pinOffset: () => task.pin(node.name),
    };
  }
}
