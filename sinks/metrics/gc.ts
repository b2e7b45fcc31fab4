import { PerformanceObserver, constants } from 'node:perf_hooks';
import type { Counter } from './prometheus.ts';

const GC_KINDS: Readonly<Record<number, string>> = {
  [constants.NODE_PERFORMANCE_GC_MINOR]: 'minor',
  [constants.NODE_PERFORMANCE_GC_MAJOR]: 'major',
  [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental',
  [constants.NODE_PERFORMANCE_GC_WEAKCB]: 'weakcb',
};

/**
 * Adds the duration of every garbage-collection pause of this process to `counter` (seconds, by
 * kind: minor, major, incremental, weakcb). The pauses are main-thread time; V8's concurrent
 * marking on helper threads is not in them. The observer does not keep the process alive.
 * Returns a function that stops observing.
 */
export function observeGarbageCollection(counter: Counter): () => void {
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      const kind = (entry as unknown as { detail?: { kind?: number } }).detail?.kind;
      counter.inc({ kind: (kind !== undefined && GC_KINDS[kind]) || 'other' }, entry.duration / 1000);
    }
  });
  observer.observe({ entryTypes: ['gc'] });
  return () => observer.disconnect();
}
