import { createRequire } from 'node:module';

/**
 * kafkajs sends a FindCoordinator request before each of AddPartitionsToTxn, AddOffsetsToTxn,
 * TxnOffsetCommit and EndTxn: four of the nine sequential round trips of every transaction, and
 * the runtime commits every task every commit interval. This remembers the coordinator a cluster
 * client found, per (group or transactional id, coordinator type), for `ttlMs`.
 *
 * When a coordinator moves (broker restart, partition leadership change), requests to the old one
 * fail with NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE. kafkajs retries them with backoff, but its
 * retries would get the cached answer: so a failed commit forgets every cached answer
 * (`forgetCoordinators`, called by the committer) and the task's next attempt looks them up again;
 * and no answer is older than `ttlMs` in any case.
 *
 * kafkajs 2.x is final (no further releases), so the patched method is stable; should it be
 * missing, nothing is patched and kafkajs behaves as shipped.
 */
const require = createRequire(import.meta.url);

interface CoordinatorLookup {
  groupId: string;
  coordinatorType?: number;
}

type FindMetadata = (this: object, lookup: CoordinatorLookup) => Promise<unknown>;

let installed = false;
/** Answers cached before the latest `forgetCoordinators` are not served. */
let epoch = 0;

/** Drops every cached coordinator (after a failure that may mean a coordinator moved). */
export function forgetCoordinators(): void {
  epoch++;
}

export function cacheCoordinatorLookups(ttlMs = 10_000): boolean {
  if (installed) return true;
  const Cluster = require('kafkajs/src/cluster/index.js') as { prototype: { findGroupCoordinatorMetadata?: FindMetadata } };
  const original = Cluster.prototype.findGroupCoordinatorMetadata;
  if (typeof original !== 'function') return false;
  const caches = new WeakMap<object, Map<string, { at: number; epoch: number; answer: Promise<unknown> }>>();
  Cluster.prototype.findGroupCoordinatorMetadata = function (this: object, lookup: CoordinatorLookup) {
    let cache = caches.get(this);
    if (!cache) caches.set(this, (cache = new Map()));
    const key = `${lookup.coordinatorType ?? 0}:${lookup.groupId}`;
    const now = Date.now();
    const hit = cache.get(key);
    if (hit && hit.epoch === epoch && now - hit.at < ttlMs) return hit.answer;
    const answer = original.call(this, lookup);
    cache.set(key, { at: now, epoch, answer });
    // A failed lookup is never served from the cache.
    answer.catch(() => {
      if (cache.get(key)?.answer === answer) cache.delete(key);
    });
    return answer;
  };
  installed = true;
  return true;
}
