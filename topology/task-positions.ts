/** A record whose offset a processor pinned (ProcessorContext.pinOffset) until it is done. */
export interface PinnedOffset {
  readonly offset: string;
  done: boolean;
}

/**
 * Where a task stands in each source topic: the last offset processed (or consumed through,
 * past transaction markers), the records whose offsets are pinned, and what a drain last
 * handed to a commit. A commit covers a topic up to the last offset whose record and every
 * earlier one are finished.
 */
export class TaskPositions {
  /** Last processed offset per source topic. */
  private readonly processed = new Map<string, string>();
  /** Last offset per source topic that a drain handed to a commit. */
  private readonly handedOut = new Map<string, bigint>();
  /** Per source topic, the records whose offsets are pinned, oldest first. */
  private readonly pinned = new Map<string, PinnedOffset[]>();

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

  /** Pins `offset` of `topic`: it, and every later one, stay out of commits until the record is marked done. */
  pin(topic: string, offset: string): PinnedOffset {
    let queue = this.pinned.get(topic);
    if (!queue) this.pinned.set(topic, (queue = []));
    const record = { offset, done: false };
    queue.push(record);
    return record;
  }

  /** Pinned records not yet finished, or finished since the last drain. */
  hasPinned(): boolean {
    for (const queue of this.pinned.values()) if (queue.length > 0) return true;
    return false;
  }

  /**
   * Per topic, the last offset whose record and every earlier one are finished, where it moved
   * since the last drain: the last processed offset, or the one before the oldest pinned record.
   */
  drainCommittable(): Map<string, string> {
    const out = new Map<string, string>();
    for (const [topic, processed] of this.processed) {
      const pinned = this.pinned.get(topic);
      while (pinned && pinned.length > 0 && pinned[0]!.done) pinned.shift();
      const through = pinned && pinned.length > 0 ? BigInt(pinned[0]!.offset) - 1n : BigInt(processed);
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
