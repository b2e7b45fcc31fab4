import type { Logger } from '../common/log.ts';

/** Anything with a graceful `close()`, such as a StreamsApp. */
export interface Closeable {
  close(): Promise<void>;
}

export interface ShutdownOptions {
  /** Default SIGTERM and SIGINT. */
  signals?: NodeJS.Signals[];
  /** Exit the process after closing (code 0, or 1 if closing failed). Default true. */
  exit?: boolean;
  /** Hard deadline for closing, in ms; past it the process exits with code 1. Default 30 000. */
  timeoutMs?: number;
  logger?: Logger;
}

/**
 * On SIGTERM (or SIGINT): closes the apps in order (each finishes its in-flight batch, commits and
 * leaves the group), then exits. A second signal exits at once. Returns a function that removes
 * the handlers.
 */
export function closeOnSignals(apps: readonly Closeable[], options: ShutdownOptions = {}): () => void {
  const signals = options.signals ?? ['SIGTERM', 'SIGINT'];
  let closing = false;
  const handler = (signal: NodeJS.Signals) => {
    if (closing) process.exit(1);
    closing = true;
    options.logger?.info('shutting down', { signal });
    const deadline = setTimeout(() => process.exit(1), options.timeoutMs ?? 30_000);
    deadline.unref();
    (async () => {
      for (const app of apps) await app.close();
    })().then(
      () => {
        options.logger?.info('shutdown complete');
        if (options.exit ?? true) process.exit(0);
      },
      (error) => {
        options.logger?.error('shutdown failed', { error });
        if (options.exit ?? true) process.exit(1);
      },
    );
  };
  for (const s of signals) process.on(s, handler);
  return () => {
    for (const s of signals) process.off(s, handler);
  };
}
