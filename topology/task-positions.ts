/** A record whose completion a processor deferred (ProcessorContext.deferCompletion). */
export interface DeferredRecord {
  readonly offset: string;
  done: boolean;
}

/**
 * Where a task stands in each source topic: the last offset processed (or consumed through,
 * past transaction markers), the records whose completion is deferred, and what a drain last
 * handed to a commit. A commit covers a topic up to the last offset whose record and every
 * earlier one are finished.
 */
export class TaskPositions {
  /** Last processed offset per source topic. */
  private readonly processed = new Map<string, string>();
  /** Last offset per source topic that a drain handed to a commit. */
  private readonly handedOut = new Map<string, bigint>();
  /** Per source topic, the records whose completion is deferred, oldest first. */
  private readonly deferred = new Map<string, DeferredRecord[]>();

  /** A record of `topic` at `offset` is being processed. */
  processing(topic: string, offset: string): void {
    this.processed.set(topic, offset);
  }

  /** Nothing of `topic` up to `offset` is left to process; false when the position was there already. */
  consumedThrough(topic: string, offset: string): boolean {
    const processed = this.processed.get(topic);
    if (processed !== undefined && BigInt(processed) >= BigInt(offset)) return false;
    this.processed.set(topic, offset);
    return true;
  }

  /** Holds `offset` of `topic`, and every later one, out of commits until the record is marked done. */
  defer(topic: string, offset: string): DeferredRecord {
    let queue = this.deferred.get(topic);
    if (!queue) this.deferred.set(topic, (queue = []));
    const record = { offset, done: false };
    queue.push(record);
    return record;
  }

  /** Deferred records not yet finished, or finished since the last drain. */
  hasDeferred(): boolean {
    for (const queue of this.deferred.values()) if (queue.length > 0) return true;
    return false;
  }

  /**
   * Per topic, the last offset whose record and every earlier one are finished, where it moved
   * since the last drain: the last processed offset, or the one before the oldest deferred record.
   */
  drainCommittable(): Map<string, string> {
    const out = new Map<string, string>();
    for (const [topic, processed] of this.processed) {
      const deferred = this.deferred.get(topic);
      while (deferred && deferred.length > 0 && deferred[0]!.done) deferred.shift();
      const through = deferred && deferred.length > 0 ? BigInt(deferred[0]!.offset) - 1n : BigInt(processed);
      const handedOut = this.handedOut.get(topic);
      if (handedOut !== undefined && through <= handedOut) continue;
      this.handedOut.set(topic, through);
      out.set(topic, through.toString());
    }
    return out;
  }

  /** What a drain handed out for `topics` was not committed: the next drain hands it out again. */
  notCommitted(topics: readonly string[]): void {
    for (const topic of topics) this.handedOut.delete(topic);
  }
}
