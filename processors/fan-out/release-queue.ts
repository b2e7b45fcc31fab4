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
   * Unpins the record's input offset, letting it into commits (`pinOffset` in topology/api.ts; a
   * no-op for a dispatch resumed from the parked store); with an error, the runtime sends that
   * record — not a later one — to the DLQ.
   */
  readonly done: (error?: unknown) => void;
  /**
   * Checkpoints the dispatch, still running, in the parked store
   * (`DispatchesInFlight.settleOrCheckpoint`); returns what to do once it has finished and its last
   * outputs go out (drop the checkpoint).
   */
  readonly checkpoint?: () => () => void;
  /** Checkpointed while still running: left the queue; what it adds now goes out when it finishes. */
  checkpointed?: () => void;
  /** The run, once started (DispatchesInFlight). */
  run?: Promise<void>;
}

/**
 * The fan-out's dispatches in the order they started. Each releases its outputs (and, for a
 * record, its input offset) only once it and every earlier one have finished, so a commit never
 * carries the outcome of a dispatch whose input offset it does not also commit (`pinOffset` in
 * topology/api.ts).
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

  /**
   * Releases every job, running or not, in start order: a finished one as `release` does; one still
   * running forwards the outputs it has so far, is checkpointed (`Job.checkpoint`: its progress goes
   * to the parked store, so this commit may carry its input offset) and leaves the queue. Returns
   * the jobs checkpointed.
   */
  releaseOrCheckpoint(forward: (output: Output) => void): Job[] {
    const checkpointed: Job[] = [];
    for (const job of this.jobs) {
      if (job.finished) {
        if (job.error === undefined) for (const o of job.outputs) forward(o);
        job.done(job.error);
        continue;
      }
      if (!job.checkpoint) throw new Error('a dispatch still running cannot be held here');
      for (const o of job.outputs.splice(0)) forward(o);
      job.checkpointed = job.checkpoint();
      job.done();
      checkpointed.push(job);
    }
    this.jobs = [];
    return checkpointed;
  }
}

/**
 * The completion of a job without an input record of its own (a dispatch resumed from the parked
 * store, an outcome of a parked one): its input offset was committed when it was first parked, so
 * there is nothing to pin or unpin.
 */
const NO_INPUT_RECORD = (): void => undefined;

/**
 * The dispatches a fan-out task has in flight: each runs behind any earlier run of the same task
 * (a replayed record waits for the first one's verdict), and their outputs are released in start
 * order (ReleaseQueue). A dispatch resumed from the parked store has no input record: its error
 * fails the task at the next flush instead of going to the DLQ (`rethrow`), and a periodic commit
 * waits for it (its parked entry is already gone) unless the commit checkpoints it
 * (`settleOrCheckpoint`).
 */
export class DispatchesInFlight {
  private readonly queue = new ReleaseQueue();
  /** The first error of a resumed dispatch: fails the task at the next flush. */
  private failure: unknown;
  private readonly inFlight = new Set<Promise<void>>();
  /** Those in flight no commit has checkpointed: what the next commit waits for (`settleOrCheckpoint`). */
  private readonly uncheckpointed = new Set<Promise<void>>();
  private readonly resumed = new Set<Promise<void>>();
  /** The latest run of each task in flight. */
  private readonly activeTasks = new Map<string, Promise<void>>();

  constructor(
    private readonly maxInFlight: number,
    private readonly forward: (output: Output) => void,
  ) {}

  get size(): number {
    return this.inFlight.size;
  }

  /**
   * Starts `run` for task `taskId`: `done` completes the input record of a fresh dispatch
   * (undefined for a resumed one); `settled` runs when it has finished, whatever the result.
   */
  start(taskId: string, done: Job['done'] | undefined, run: (outputs: Output[]) => Promise<void>, settled: () => void, checkpoint?: Job['checkpoint']): void {
    const job: Job = { outputs: [], finished: false, done: done ?? NO_INPUT_RECORD, ...(checkpoint ? { checkpoint } : {}) };
    this.queue.add(job);
    const previous = this.activeTasks.get(taskId) ?? Promise.resolve();
    const running: Promise<void> = previous
      .then(() => run(job.outputs))
      .catch((error: unknown) => {
        // The error belongs to this dispatch: released with it, in start order (drain). Once
        // checkpointed, its input offset is committed: the error fails the task instead.
        if (done && !job.checkpointed) job.error = error;
        else this.failure ??= error;
      })
      .finally(() => {
        settled();
        job.finished = true;
        // Checkpointed: its later outputs go out behind those queued now, then it leaves the store.
        if (job.checkpointed) this.queue.add({ outputs: this.failure === undefined ? job.outputs : [], finished: true, done: job.checkpointed });
        this.inFlight.delete(running);
        this.uncheckpointed.delete(running);
        this.resumed.delete(running);
        if (this.activeTasks.get(taskId) === running) this.activeTasks.delete(taskId);
      });
    this.activeTasks.set(taskId, running);
    job.run = running;
    this.inFlight.add(running);
    this.uncheckpointed.add(running);
    if (!done) this.resumed.add(running);
  }

  /** Outputs without a dispatch run or input record of their own, released in start order behind those in flight. */
  addFinished(outputs: Output[]): void {
    this.queue.add({ outputs, finished: true, done: NO_INPUT_RECORD });
  }

  /** Outputs without an input record, released in start order once `ready` resolves; a commit before then checkpoints them (`checkpoint`). */
  addWhen(taskId: string, ready: Promise<void>, outputs: Output[], checkpoint: Job['checkpoint']): void {
    const run = async (into: Output[]) => {
      await ready;
      into.push(...outputs);
    };
    this.start(taskId, undefined, run, () => undefined, checkpoint);
  }

  /** Waits for the resumed dispatches (or, with `all`, every one in flight), then releases what has finished. */
  async settle(all: boolean): Promise<void> {
    const waiting = all ? this.inFlight : this.resumed;
    while (waiting.size > 0) await Promise.all([...waiting]);
    this.drain();
    this.rethrow();
  }

  /**
   * Before a commit that must carry every input offset (the fan-out fused behind the decisions):
   * waits up to `waitMs` for the dispatches in flight, then releases what has finished and
   * checkpoints what is still running (ReleaseQueue.releaseOrCheckpoint), so a slow vendor delays
   * the commit by `waitMs` at most.
   */
  async settleOrCheckpoint(waitMs: number, sleep: (ms: number) => Promise<void>): Promise<void> {
    if (this.uncheckpointed.size > 0) {
      let waited = false;
      const timeout = sleep(waitMs).then(() => (waited = true));
      while (this.uncheckpointed.size > 0 && !waited) await Promise.race([Promise.all([...this.uncheckpointed]), timeout]);
    }
    for (const job of this.queue.releaseOrCheckpoint(this.forward)) this.uncheckpointed.delete(job.run!);
    this.rethrow();
  }

  /** Waits while too much is in flight. Finished dispatches wait behind a slow earlier one: they count against the bound too. */
  async backpressure(): Promise<void> {
    while (this.inFlight.size >= this.maxInFlight || this.queue.length >= 4 * this.maxInFlight) {
      if (this.inFlight.size > 0) await Promise.race(this.inFlight);
      this.drain();
    }
  }

  /** Forwards the outputs of the dispatches finished in start order. */
  drain(): void {
    this.queue.release(this.forward);
  }

  /** Waits for every dispatch in flight, without releasing anything (closing). */
  async close(): Promise<void> {
    await Promise.all([...this.inFlight]);
  }

  /** Throws (once) the failure of a resumed dispatch, failing the task. */
  private rethrow(): void {
    if (this.failure === undefined) return;
    const error = this.failure;
    this.failure = undefined;
    throw error;
  }
}
