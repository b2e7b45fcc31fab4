import type { Batch } from 'kafkajs';
import type { InputRecord } from './task.ts';

/**
 * The consumer read past `offset` and nothing up to it is left to process: the offsets after the
 * last record were transaction markers or aborted records, which read_committed consumers never see.
 * Queued behind the records before it, so the task commits past them only once those are processed
 * (Kafka Streams commits the consumer's position likewise); a partition written transactionally
 * then shows no lag of 1 forever.
 */
export interface ConsumedThrough {
  readonly consumedThrough: true;
  readonly topic: string;
  readonly partition: number;
  readonly offset: string;
}

export type QueuedInput = InputRecord | ConsumedThrough;

/**
 * Which fetch of the consumer handed a partition's records over, and what the broker said was left.
 * The consumer numbers each fetch when it is sent and again when it is answered, from one counter
 * (stack/kafkajs-patch/fetch-order.patch), so `sent` of a later fetch is above
 * `answered` of every fetch that ended before it was sent.
 */
export interface FetchMark {
  readonly sent: number;
  readonly answered: number;
  /** Records the broker could already serve past this fetch's (read_committed: up to the last stable offset). */
  readonly readable: number;
}

/** The fetch a kafkajs batch came from (a kafkajs without the fetch-order fix gives 0s: time order among what is buffered only). */
export function fetchMarkOf(batch: Batch): FetchMark {
  const stamped = batch as Batch & { fetchSent?: number; fetchAnswered?: number; lastStableOffset?: string };
  const stable = Number(stamped.lastStableOffset ?? -1);
  const end = stable >= 0 ? stable : Number(batch.highWatermark);
  return { sent: stamped.fetchSent ?? 0, answered: stamped.fetchAnswered ?? 0, readable: Math.max(0, end - 1 - Number(batch.lastOffset())) };
}

/** The queue of one input partition of the task, in offset order, and its latest fetch. */
class PartitionBuffer {
  private items: QueuedInput[] = [];
  private marks: FetchMark[] = [];
  private head = 0;
  /** The latest fetch whose answer for this partition is handed over (all its records are in `items`). */
  fetch: FetchMark = { sent: 0, answered: 0, readable: 0 };

  constructor(
    readonly topic: string,
    /** Ties on timestamps go to the higher rank: the source declared later (tables and side inputs after their driving stream). */
    readonly rank: number,
  ) {}

  get size(): number {
    return this.items.length - this.head;
  }

  peek(): QueuedInput | undefined {
    return this.items[this.head];
  }

  peekMark(): FetchMark {
    return this.marks[this.head]!;
  }

  append(record: QueuedInput, mark: FetchMark): void {
    this.items.push(record);
    this.marks.push(mark);
  }

  take(): QueuedInput {
    const record = this.items[this.head]!;
    this.items[this.head] = undefined as never;
    this.head++;
    // Compact now and then instead of Array.shift() per record (which copies the array).
    if (this.head >= 1024 && this.head * 2 >= this.items.length) {
      this.items = this.items.slice(this.head);
      this.marks = this.marks.slice(this.head);
      this.head = 0;
    }
    return record;
  }

  /** A fetch answered for this partition and handed over; an older one changes nothing. */
  fetched(mark: FetchMark): void {
    if (mark.sent >= this.fetch.sent) this.fetch = mark;
  }

  /**
   * Nothing of this partition stamped before `record` can still come: nothing was readable past its
   * latest fetch, and that fetch read the partition after `record` was in its log — the same fetch
   * (one broker read), or one sent after `record`'s fetch was answered.
   */
  caughtUpWith(mark: FetchMark): boolean {
    return this.fetch.readable === 0 && (this.fetch.sent === mark.sent || this.fetch.sent > mark.answered);
  }

  clear(): void {
    this.items = [];
    this.marks = [];
    this.head = 0;
  }
}

/**
 * Fetched records of one task waiting to be processed: one queue per input partition, taken in
 * timestamp order across them (Kafka Streams' partition group). The consumer's fetch loop only
 * appends here and returns, so a task that is busy (a fan-out flush waiting for vendor answers, a
 * commit being prepared) never holds up the fetching of the other tasks' partitions; the task
 * drains its queues in its own executor.
 *
 * Time order: `next` gives the buffered record with the lowest timestamp. Before it does, every
 * input partition with nothing buffered must be caught up with that record (PartitionBuffer's
 * caughtUpWith): otherwise a record stamped earlier may still be on its way there (a mute on
 * push.settings written just before the message it silences), and the task waits for it, up to
 * `maxIdleMs` (Kafka Streams' max.task.idle.ms). Past that it goes on without it and counts an
 * enforced decision. The wait ends early as soon as the partition's next fetch is handed over.
 *
 * Bounded: once `highWater` records wait, the fetch loop waits (see `belowHalf`) until the task has
 * worked the queues down to half, so a task that cannot keep up is back-pressured instead of
 * buffering without limit.
 */
export class TaskInputQueue {
  private readonly partitions: PartitionBuffer[];
  private readonly byTopic = new Map<string, PartitionBuffer>();
  private total = 0;
  private waiters: Array<() => void> = [];
  /** Since when the task waits for a partition that is not caught up; undefined once every partition is. */
  private idleSince: number | undefined;
  /** When the current wait ends (`next` answered undefined with records buffered), else undefined. */
  waitUntil: number | undefined;
  /** Records taken before a partition had caught up with them, because the wait ran out. */
  enforced = 0;

  constructor(
    readonly highWater: number,
    /** The task's source topics, in the order the topology declares them. */
    sources: readonly string[],
    private readonly maxIdleMs: number,
  ) {
    this.partitions = sources.map((topic, rank) => new PartitionBuffer(topic, rank));
    for (const p of this.partitions) this.byTopic.set(p.topic, p);
  }

  get size(): number {
    return this.total;
  }

  get full(): boolean {
    return this.total >= this.highWater;
  }

  /** A record (or consumed-through mark) of one fetch for the partition of `topic`, in offset order; `handedOver` follows the fetch's last. */
  append(topic: string, record: QueuedInput, mark: FetchMark): void {
    this.byTopic.get(topic)!.append(record, mark);
    this.total++;
  }

  /**
   * A fetch's answer for the partition of `topic` is handed over: its records appended, or none
   * were new. True when the task was waiting: the partition may have caught up, so look again.
   */
  handedOver(topic: string, mark: FetchMark): boolean {
    this.byTopic.get(topic)?.fetched(mark);
    return this.waitUntil !== undefined;
  }

  /**
   * The next record to process, or undefined: nothing is buffered, or the earliest record waits for
   * a partition to catch up (then `waitUntil` says until when).
   */
  next(nowMs: number): QueuedInput | undefined {
    this.waitUntil = undefined;
    let earliest: PartitionBuffer | undefined;
    let earliestAt = 0;
    for (const p of this.partitions) {
      const head = p.peek();
      if (head === undefined) continue;
      // Bookkeeping of offsets already read: never waits, never reorders records.
      if ('consumedThrough' in head) return this.take(p);
      if (earliest === undefined || head.timestamp < earliestAt || (head.timestamp === earliestAt && p.rank > earliest.rank)) {
        earliest = p;
        earliestAt = head.timestamp;
      }
    }
    if (earliest === undefined) return undefined;
    const mark = earliest.peekMark();
    let caughtUp = true;
    for (const p of this.partitions) if (p.size === 0 && !p.caughtUpWith(mark)) caughtUp = false;
    if (caughtUp) this.idleSince = undefined;
    else {
      this.idleSince ??= nowMs;
      if (nowMs - this.idleSince < this.maxIdleMs) {
        this.waitUntil = this.idleSince + this.maxIdleMs;
        return undefined;
      }
      this.enforced++;
    }
    return this.take(earliest);
  }

  /** Drops what waits (the task closes: a new owner reads from the committed offsets). */
  clear(): void {
    for (const p of this.partitions) p.clear();
    this.total = 0;
    this.waitUntil = undefined;
    this.wake();
  }

  /** Settles once fewer than half of `highWater` records wait. */
  belowHalf(): Promise<void> {
    if (this.total * 2 < this.highWater) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  private take(p: PartitionBuffer): QueuedInput {
    this.total--;
    if (this.waiters.length > 0 && this.total * 2 < this.highWater) this.wake();
    return p.take();
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  }
}
