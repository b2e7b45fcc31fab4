/**
 * The dispatches of one fan-out task that are waiting out retryable vendor failures (parked, in an
 * inline backoff, or resumed), indexed by conversation, so that a READ of the conversation cancels
 * them (docs/design.md, "fan-out"). Only conversations with such a dispatch are remembered: a READ
 * of any other conversation costs one map lookup and leaves nothing behind.
 */
export class RetryingDispatches {
  /** uid + conv → task id → seq of the dispatch. */
  private readonly byConversation = new Map<string, Map<string, number>>();
  /** task id → its conversation. */
  private readonly conversationOf = new Map<string, string>();
  /** uid + conv → highest seq read while a dispatch of it was retrying. */
  private readonly readUpTo = new Map<string, number>();

  static conversation(uid: string, convId: string): string {
    return `${uid}\u001f${convId}`;
  }

  add(conversation: string, taskId: string, seq: number): void {
    let tasks = this.byConversation.get(conversation);
    if (!tasks) this.byConversation.set(conversation, (tasks = new Map()));
    tasks.set(taskId, seq);
    this.conversationOf.set(taskId, conversation);
  }

  /** The dispatch finished (or was cancelled); a no-op for one that never retried. */
  remove(taskId: string): void {
    const conversation = this.conversationOf.get(taskId);
    if (conversation === undefined) return;
    this.conversationOf.delete(taskId);
    const tasks = this.byConversation.get(conversation);
    if (!tasks?.delete(taskId) || tasks.size > 0) return;
    this.byConversation.delete(conversation);
    this.readUpTo.delete(conversation);
  }

  /**
   * A READ up to `seq`: remembers it for the conversation's retrying dispatches (they check it
   * before their next call) and returns the task ids it cancels. Nothing when none is retrying.
   */
  read(conversation: string, seq: number): string[] {
    const tasks = this.byConversation.get(conversation);
    if (!tasks) return [];
    this.readUpTo.set(conversation, Math.max(seq, this.readUpTo.get(conversation) ?? -Infinity));
    const cancelled: string[] = [];
    for (const [taskId, taskSeq] of tasks) if (taskSeq <= seq) cancelled.push(taskId);
    return cancelled;
  }

  /** True when a READ of the conversation reached `seq` while a dispatch of it was retrying. */
  isRead(conversation: string, seq: number): boolean {
    const read = this.readUpTo.get(conversation);
    return read !== undefined && read >= seq;
  }
}
