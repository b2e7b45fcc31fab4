/**
 * The processor API: what a processor sees of the runtime. Processors (in `processors/`) import
 * only this file and `stores.ts`; they never see kafkajs, topic names or serdes.
 *
 * Modelled on Kafka Streams' `processor/api`: a processor is `init(ctx) / process(record) /
 * close()`; it forwards records to its children, schedules punctuators and reads its stores.
 */
import type { StoreDefinition } from './stores.ts';

/** Header values as the runtime hands them to processors: decoded to UTF-8 strings. */
export type RecordHeaders = Readonly<Record<string, string>>;

export interface StreamRecord<K, V> {
  readonly key: K;
  readonly value: V;
  /** Event time in epoch ms (the Kafka record timestamp, or what a processor set when forwarding). */
  readonly timestamp: number;
  readonly headers?: RecordHeaders;
}

/** Where the record being processed came from. Absent inside a punctuator. */
export interface RecordMetadata {
  readonly topic: string;
  readonly partition: number;
  /** Kafka offset as a decimal string (64-bit safe). */
  readonly offset: string;
}

/**
 * The child nodes a processor forwards one kind of output to. A list lets the wiring add a child
 * (a tap: a sink node writing to an observable topic) beside the processor that consumes the output in-process.
 */
export type ChildNames = string | readonly string[];

export type PunctuationType = 'stream-time' | 'wall-clock';

export interface Cancellable {
  cancel(): void;
}

/** How a wall-clock punctuator tells the runtime when it has work (ProcessorContext.schedule). */
export interface ScheduleOptions {
  /**
   * When the punctuator next has anything to do (a timer store's earliest due time), or undefined
   * when nothing is pending. The punctuation is skipped until then: it runs at the first point of its
   * grid at or after that time. Asked each time the runtime arms its timer (after every turn of the
   * task), so a timer a record set is seen at once; a time in the past means due now.
   */
  readonly nextDueMs?: () => number | undefined;
}

export interface ProcessorContext<KOut = unknown, VOut = unknown> {
  readonly applicationId: string;
  /** `<subtopology>_<partition>`, e.g. `1_3`. Stable across restarts and moves. */
  readonly taskId: string;
  /** The input partition this task owns (all co-partitioned sources share it). */
  readonly partition: number;
  /** Metadata of the record being processed; undefined inside a punctuator. */
  recordMetadata(): RecordMetadata | undefined;
  /** Sends a record to all children, or to the named children only (a name or a list of names). */
  forward<K extends KOut, V extends VOut>(record: StreamRecord<K, V>, childName?: ChildNames): void;
  /**
   * Schedules a punctuator. Stream-time punctuators fire as record timestamps advance the task's
   * stream time; wall-clock punctuators fire by system time, at the multiples of their interval on
   * the wall clock (the first within one interval of scheduling). Missed intervals are skipped and
   * the schedule stays on its grid. A punctuator that polls (a timer store checked on each tick)
   * returns `false` when it found nothing due: unless it forwarded a record or changed a changelogged
   * store all the same, the task then has nothing new to commit, and an idle task commits nothing.
   * Any other return counts as work a commit must follow (a processor's flush may release it).
   * A wall-clock punctuator that only acts on what falls due passes `nextDueMs` (ScheduleOptions):
   * it is then called only once something is due, and a task with nothing pending wakes nobody.
   */
  schedule(
    intervalMs: number,
    type: PunctuationType,
    punctuator: (timestamp: number) => void | boolean | Promise<void | boolean>,
    options?: ScheduleOptions,
  ): Cancellable;
  getStateStore<S>(name: string): S;
  /** Highest record timestamp seen by this task; never decreases. -1 before the first record. */
  streamTimeMs(): number;
  /** System time as the runtime (or the TopologyTestDriver) sees it. */
  wallClockTimeMs(): number;
  /**
   * Pins the input offset of the record being processed, which finishes later (asynchronous work
   * such as a vendor call). Until the returned function unpins it, neither that offset nor any
   * later offset of its topic is committed, so a crash before then processes the record again. The
   * processor must forward the record's outputs in the same synchronous step in which it calls the
   * function, and never forward outputs of a later record of the topic before that (in input
   * order), or a crash could write them twice. Returns a no-op inside a punctuator (no input offset
   * to pin).
   * Called with an error, the record failed: a non-retriable error sends that record to the DLQ
   * (under the `dlq` processing-error policy), any other fails the task at its next flush.
   */
  pinOffset(): (error?: unknown) => void;
}

export interface Processor<KIn = unknown, VIn = unknown, KOut = unknown, VOut = unknown> {
  init?(context: ProcessorContext<KOut, VOut>): void | Promise<void>;
  /**
   * Handles one record. May return a promise (for I/O such as vendor submission); the runtime
   * awaits it before the next record of the same task, which is how a processor applies back
   * pressure. Processors that buffer asynchronous work implement `flush`.
   */
  process(record: StreamRecord<KIn, VIn>): void | Promise<void>;
  /**
   * Called before every commit (and before revocation and shutdown). A processor must complete
   * any buffered or in-flight work here and forward its results: after flush returns, the output,
   * the changelog writes and the input offsets are committed together.
   */
  flush?(): Promise<void>;
  /**
   * For processors that pin offsets: called before a periodic commit instead of `flush`.
   * Forwards what is finished, without waiting for work in flight (whose input offsets stay out
   * of this commit). Revocation, shutdown and the TopologyTestDriver still call `flush`.
   */
  flushFinished?(): Promise<void>;
  close?(): void | Promise<void>;
}

/**
 * Makes one processor instance per task. Like Kafka Streams' `ConnectedStoreProvider`, a supplier
 * may declare the stores its processors use (`stores`): `TopologyBuilder.addProcessor` registers
 * and connects them, so the wiring names no store. Build one with `withStores`.
 */
export type ProcessorSupplier<KIn = unknown, VIn = unknown, KOut = unknown, VOut = unknown> = (() => Processor<KIn, VIn, KOut, VOut>) & {
  /** The stores every processor of this supplier reads through `getStateStore` (none when absent). */
  readonly stores?: readonly StoreDefinition[];
};

/**
 * A supplier that declares its stores (see `ProcessorSupplier`).
 *
 * @example
 * withStores(() => new MergeProcessor(config), [keyValueStore('merge-windows'), scheduleStore('merge-window-timers')])
 */
export function withStores<KIn, VIn, KOut, VOut>(
  supplier: () => Processor<KIn, VIn, KOut, VOut>,
  stores: readonly StoreDefinition[],
): ProcessorSupplier<KIn, VIn, KOut, VOut> {
  return Object.assign(() => supplier(), { stores: Object.freeze([...stores]) });
}
