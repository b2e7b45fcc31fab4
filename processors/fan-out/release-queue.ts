import type { StreamRecord } from '../../topology/api.ts';
import type { PushOutcome, TokenReport } from '../model/records.ts';

/** One output of a dispatch: a record and the child node it goes to. */
export interface Output {
  readonly child: string;
  readonly record: StreamRecord<string, PushOutcome | TokenReport>;
}

/** One dispatch on its way: its outputs, released in start order once it has finished. */
export interface Job {
  readonly outputs: Output[];
  finished: boolean;
  /** What stopped this dispatch (not a vendor answer: a record MySQL refuses, a bug); set when finished. */
  error?: unknown;
  /**
   * Lets the record's input offset into commits (a no-op for a dispatch resumed from the parked
   * store); with an error, the runtime sends that record — not a later one — to the DLQ.
   */
  readonly done: (error?: unknown) => void;
}

/**
 * The fan-out's dispatches in the order they started. Each releases its outputs (and, for a
 * record, its input offset) only once it and every earlier one have finished, so a commit never
 * carries the outcome of a dispatch whose input offset it does not also commit (`deferCompletion`
 * in topology/api.ts).
 */
export class ReleaseQueue {
  private jobs: Job[] = [];

  /** Dispatches started and not yet released (finished ones waiting behind a slower one included). */
  get length(): number {
    return this.jobs.length;
  }

  add(job: Job): void {
    this.jobs.push(job);
  }

  /**
   * Releases the finished jobs at the head of the queue, in start order: forwards their outputs and
   * completes their input records. A failed job forwards nothing: its record goes to the DLQ as a whole.
   */
  release(forward: (output: Output) => void): void {
    let released = 0;
    while (released < this.jobs.length && this.jobs[released]!.finished) {
      const job = this.jobs[released++]!;
      if (job.error === undefined) for (const o of job.outputs) forward(o);
      job.done(job.error);
    }
    if (released > 0) this.jobs = this.jobs.slice(released);
  }
}
