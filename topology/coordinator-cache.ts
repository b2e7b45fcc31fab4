import { createRequire } from 'node:module';

/**
 * The coordinator cache of the kafkajs fixes (stack/kafkajs-patch/coordinator-cache.patch): kafkajs
 * sends FindCoordinator before each of AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit and
 * EndTxn, four of the nine sequential round trips of every transaction, and the runtime commits
 * every task every commit interval. With the cache on, a cluster client keeps each coordinator it
 * found for `ttlMs`. A coordinator that moves (a broker restart, a leadership change) answers
 * NOT_COORDINATOR, and kafkajs' retries would get the cached answer: so a failed commit forgets
 * every cached answer (`forgetCoordinators`, called by the committer) and the task's next attempt
 * looks them up again.
 */
const require = createRequire(import.meta.url);
const Cluster = require('kafkajs/src/cluster/index.js') as { cacheCoordinatorLookups(ttlMs: number): void; forgetCoordinators(): void };

/** Turns the cache on for every Kafka client of the process (the workers' runtime does, at start). */
export function cacheCoordinatorLookups(ttlMs = 10_000): void {
  Cluster.cacheCoordinatorLookups(ttlMs);
}

/** Drops every cached coordinator (after a failure that may mean a coordinator moved). */
export function forgetCoordinators(): void {
  Cluster.forgetCoordinators();
}
