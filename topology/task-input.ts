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
 * Fetched records of one task waiting to be processed, in fetch order (Kafka Streams' partition
 * record queue, one per task). The consumer's fetch loop only appends here and returns, so a task
 * that is busy (a fan-out flush waiting for vendor answers, a commit being prepared) never holds
 * up the fetching of the other tasks' partitions; the task drains its queue in its own executor.
 *
 * Bounded: once `highWater` records wait, the fetch loop waits (see `belowHalf`) until the task has
 * worked the queue down to half, so a task that cannot keep up is back-pressured instead of
 * buffering without limit.
 */
export class TaskInputQueue {
  private items: QueuedInput[] = [];
  private head = 0;
  private waiters: Array<() => void> = [];

  constructor(readonly highWater: number) {}

  get size(): number {
    return this.items.length - this.head;
  }

  get full(): boolean {
    return this.size >= this.highWater;
  }

  push(record: QueuedInput): void {
    this.items.push(record);
  }

  shift(): QueuedInput | undefined {
    if (this.head >= this.items.length) return undefined;
    const record = this.items[this.head]!;
    this.items[this.head++] = undefined as never;
    // Compact now and then instead of Array.shift() per record (which copies the array).
    if (this.head >= 1024 && this.head * 2 >= this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    if (this.waiters.length > 0 && this.size * 2 < this.highWater) this.wake();
    return record;
  }

  /** Drops what waits (the task closes: a new owner reads from the committed offsets). */
  clear(): void {
    this.items = [];
    this.head = 0;
    this.wake();
  }

  /** Settles once fewer than half of `highWater` records wait. */
  belowHalf(): Promise<void> {
    if (this.size * 2 < this.highWater) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  }
}
