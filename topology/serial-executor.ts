/** Runs functions one after another (a per-task lock): work of one task never interleaves. */
export class SerialExecutor {
  private tail: Promise<unknown> = Promise.resolve();

  run<T>(fn: () => Promise<T> | T): Promise<T> {
    const result = this.tail.then(fn);
    // The caller gets the error through `result`; the chain only has to go on to the next function.
    this.tail = result.catch(() => undefined);
    return result;
  }
}
