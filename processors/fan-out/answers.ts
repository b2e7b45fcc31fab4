import type { PushDispatch } from '../model/records.ts';
import { TASK_STATUS, type ChannelAnswer, type PushTaskLedger, type StoredTask, type TaskResult, type TaskRow } from './ledger.ts';
import type { FanOutListener, FanOutOptions } from './options.ts';
import type { DispatchProgress } from './parked.ts';
import { deadTokenReport, fanOutOutcome, replayedAnswer, type FanOutAnswer, type FanOutReason } from './records.ts';
import type { Output } from './release-queue.ts';
import type { GateClock } from './vendor-gate.ts';
import { recordedBeyond, resumedFrom } from './walk.ts';

/** A channel's answer as its outcome reads it: its reason is one of FanOutReason (a type, no copy). */
const asFanOutAnswer = (a: ChannelAnswer): FanOutAnswer => a as FanOutAnswer;

/** Tasks this instance finished recently: a second dispatch of one is answered without asking MySQL. */
const RECENT_LIMIT = 100_000;

/** Retryable codes of calls the vendor never processed; a push that ends on one was not submitted. */
export const UNREACHED_CODES = new Set(['CONNECTION_LOST']);

/** The reason of a channel given up on a final vendor answer, by answer kind. */
export const FAILURE_REASON: Readonly<Record<'payload-too-large' | 'payload-rejected' | 'permanent' | 'unknown-code' | 'auth-failed', FanOutReason>> = {
  'payload-too-large': 'payload_too_large',
  'payload-rejected': 'payload_rejected',
  permanent: 'permanent',
  'unknown-code': 'unknown_code',
  'auth-failed': 'auth_failed',
};

/** The outcome of a retrying dispatch whose conversation was read: SUPPRESSED read, final. */
export const readAnswer = (vendor: string, attempts: number): ChannelAnswer => ({
  channel: -1,
  status: 'SUPPRESSED',
  vendor,
  reason: 'read',
  code: 'READ',
  attempts,
  discriminator: 'read',
});

/**
 * What one fan-out task says about its pushes: the verdicts it claims and records in the task
 * ledger (im_push_task), the tasks it finished recently, and the outcome and dead-token records it
 * queues with a dispatch's other outputs (released in start order: release-queue.ts).
 * The walk over a dispatch's channels (fan-out.ts) decides; this writes it down.
 */
export class TaskAnswers {
  private readonly recent = new Map<string, StoredTask>();

  constructor(
    private readonly ledger: PushTaskLedger,
    private readonly outputs: FanOutOptions['outputs'],
    private readonly clock: GateClock,
    private readonly listener: FanOutListener | undefined,
  ) {}

  /** A dispatch an operator re-submits: its task's state is read from MySQL again. */
  forget(taskId: string): void {
    this.recent.delete(taskId);
  }

  /** Claims the task in the ledger (status 0 unless a row exists), or answers from the tasks this instance finished. */
  async claim(d: PushDispatch, task: TaskRow): Promise<StoredTask> {
    const started = this.clock.now();
    const known = this.recent.get(d.task_id) ?? (await this.ledger.claim(task));
    this.listener?.onClaimed?.(d, this.clock.now() - started);
    return known;
  }

  /** Accepted: the task is submitted (1), recorded in the ledger, and its ACCEPTED outcome queued. */
  accepted(
    p: DispatchProgress,
    ready: Output[],
    task: TaskRow,
    answer: FanOutAnswer & { vendor: string; vendorMessageId: string },
    trail: readonly ChannelAnswer[],
  ): void {
    const { vendor, vendorMessageId, attempts } = answer;
    this.record(task, p.dispatch.task_id, { status: TASK_STATUS.submitted, vendor, vendorMessageId, failCode: null, attempts, trail });
    this.emit(p, ready, answer);
  }

  /** Ends a task as failed (3); its trail, which a replay re-emits, already holds its final outcome. */
  failed(task: TaskRow, taskId: string, vendor: string, code: string, attempts: number, trail: readonly ChannelAnswer[]): void {
    this.record(task, taskId, { status: TASK_STATUS.failed, vendor, vendorMessageId: null, failCode: code, attempts, trail });
  }

  /** An answer of the task other than ACCEPTED: kept in `trail`, which a replay re-emits, and queued. */
  channel(p: DispatchProgress, ready: Output[], trail: ChannelAnswer[], a: ChannelAnswer): void {
    trail.push(a);
    this.emit(p, ready, asFanOutAnswer(a));
  }

  /**
   * The answers of a task still going on, recorded on its row (pending) at once: the fan-out waits
   * for them (PushTaskLedger.written) before its next call, so a takeover resumes after them (`resume`).
   */
  progress(task: TaskRow, latest: ChannelAnswer, attempts: number, trail: readonly ChannelAnswer[]): void {
    // A copy: the walk's trail grows on, and the write must hold the trail these attempts go with.
    this.ledger.record(task, { status: TASK_STATUS.pending, vendor: latest.vendor, vendorMessageId: null, failCode: latest.code, attempts, trail: [...trail] });
  }

  /**
   * A task found pending by its claim: when its row recorded answers beyond `p` (an earlier owner's,
   * before a takeover), they are queued, with their event ids and dead-token invalidations (only
   * those `p` does not hold: a held dispatch's went out with the commit that held it; a fresh
   * dispatch's never went out), and the walk resumes after them instead of calling again.
   */
  resume(p: DispatchProgress, known: StoredTask, ready: Output[]): DispatchProgress {
    if (!recordedBeyond(p, known.attempts, known.trail)) return p;
    const had = new Set((p.trail ?? []).map((a) => a.discriminator));
    this.reemit(
      p,
      known.trail.filter((a) => !had.has(a.discriminator)),
      ready,
    );
    return resumedFrom(p, known.trail, known.attempts);
  }

  /**
   * Ends a dispatch with the last answer of its trail (a READ, an eviction): the task row goes to
   * failed with that trail, and the answer's outcome is queued. A parked push ended now, or one held
   * ENDED (parked.ts) and resumed after a restart.
   */
  end(p: DispatchProgress, task: TaskRow, ready: Output[]): void {
    const trail = p.trail ?? [];
    const final = trail.at(-1)!;
    this.failed(task, p.dispatch.task_id, final.vendor, final.code, p.attempts, trail);
    this.emit(p, ready, asFanOutAnswer(final));
  }

  /** Queues the outcome of an answer with the dispatch's other outputs, and tells the listener. */
  emit(p: DispatchProgress, ready: Output[], a: FanOutAnswer): void {
    ready.push(this.outcome(p, a));
    this.listener?.onAnswer?.(a.vendor ?? '', p.dispatch.app_id, a.status, a.code);
  }

  /** The outcome record of an answer. */
  outcome(p: DispatchProgress, a: FanOutAnswer): Output {
    return { child: this.outputs.outcomes, record: { key: p.key, value: fanOutOutcome(p.dispatch, a, this.clock.now()), timestamp: p.timestamp } };
  }

  /** Queues the invalidation of a dead token (to push.tokens) with the dispatch's other outputs. */
  deadToken(p: DispatchProgress, ready: Output[], vendor: string, token: string, now: number): void {
    ready.push({ child: this.outputs.tokens, record: { key: p.key, value: deadTokenReport(p.dispatch, vendor, token, now), timestamp: p.timestamp } });
  }

  /**
   * A task already final (a replayed or re-delivered dispatch): every answer it gave, from the
   * row, with the same event ids, and the invalidation of each dead token again. So a crash
   * between the vendor's answers and the commit of their outcomes loses none of them.
   */
  replay(p: DispatchProgress, known: StoredTask, ready: Output[]): void {
    const d = p.dispatch;
    const now = this.clock.now();
    this.reemit(p, known.trail, ready);
    // A failed task's trail holds every outcome it had, its final one included: nothing else is
    // emitted (a made-up "duplicate" outcome would be counted as a second ending). Rows without a
    // trail (written before trails existed) re-emit their stored verdict.
    if (known.status === TASK_STATUS.failed && known.trail.length > 0) return;
    const a = replayedAnswer(known);
    ready.push({ child: this.outputs.outcomes, record: { key: p.key, value: fanOutOutcome(d, a, now), timestamp: p.timestamp } });
    this.listener?.onAnswer?.(a.vendor ?? '', d.app_id, a.status, a.code);
  }

  /** Queues recorded answers again: their outcomes, with the same event ids, and the invalidation of each dead token. */
  private reemit(p: DispatchProgress, answers: readonly ChannelAnswer[], ready: Output[]): void {
    const d = p.dispatch;
    const now = this.clock.now();
    for (const a of answers) {
      ready.push(this.outcome(p, asFanOutAnswer(a)));
      const token = d.channels[a.channel]?.token;
      if (a.status === 'DEAD_TOKEN' && token !== undefined) this.deadToken(p, ready, a.vendor, token, now);
    }
  }

  /** Records a final task in the ledger and keeps it for `recent`, forgetting the oldest over RECENT_LIMIT. */
  private record(task: TaskRow, taskId: string, stored: TaskResult): void {
    this.ledger.record(task, stored);
    this.recent.set(taskId, stored);
    if (this.recent.size > RECENT_LIMIT) this.recent.delete(this.recent.keys().next().value!);
  }
}
