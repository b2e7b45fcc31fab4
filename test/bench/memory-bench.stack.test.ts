/**
 * The merge-state bench (bench/memory-bench.ts) behind the "restore after restart, 1M windows" row:
 * the restoring worker must replay every changelog record the fill wrote, whatever partition count
 * an earlier run used. Two small runs on the local stack, with different partition counts: each
 * restores all of its windows. No figure is judged against a target here.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runMemoryBench } from '../../bench/memory-bench.ts';
import { stackEndpoints } from '../support/stack.ts';

test('each merge-state run restores every changelog record it wrote, after a run with fewer partitions', { timeout: 180_000 }, async () => {
  const brokers = stackEndpoints().kafkaBrokers;
  for (const partitions of [2, 5]) {
    const r = await runMemoryBench({ windows: 3_000, partitions, brokers });
    assert.equal(r.windows, 3_000);
    assert.ok(r.rssMb > 0 && r.heapMb > 0, `memory of the process holding the windows: ${JSON.stringify(r)}`);
    // One window record per (uid, conv): the fill writes each once, and the restore replays them all.
    assert.equal(r.changelogRecords, 3_000, `${partitions} partitions: records the fill wrote`);
    assert.equal(r.restoredRecords, r.changelogRecords, `${partitions} partitions: records the restore replayed`);
    assert.ok(r.restoreMs !== undefined && r.restoreMs >= 0);
  }
});
