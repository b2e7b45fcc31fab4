/**
 * The fan-out fused behind the decisions (PUSH_FAN_OUT_FUSED, the default) takes its dispatches
 * from the policy in-process. push.dispatch is then only a tap (PUSH_DECISION_TAPS) and the way
 * `pushctl replay` re-submits a task: the decisions read it back, and pass on only the records
 * that carry the replay header. Runs the decisions topology, fused, in the TopologyTestDriver
 * (which feeds a task the records it writes to a topic it reads, as Kafka would) with the vendor
 * emulators and MariaDB.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { TOPICS } from '../../../pipeline/topics.ts';
import { REPLAY_HEADER } from '../../../processors/fan-out/fan-out.ts';
import { MysqlPushTaskLedger } from '../../../sinks/mysql/tasks.ts';
import { APP, DecisionsHarness } from '../harness.ts';
import { fanOutStack, taskRow } from './support.ts';

describe('fused decisions: push.dispatch is a tap, read back for replays only', () => {
  const fx = fanOutStack([APP]);

  test('a tapped push reaches its vendor once; its replay (header set, task back to pending) is submitted again', async () => {
    const ledger = new MysqlPushTaskLedger({ pool: fx.db.pool, table: fx.db.table });
    const h = DecisionsHarness.create({ taps: true, startMs: Date.now(), fanOut: { vendors: fx.registry, ledger } });
    const token = fx.em.token('fcm', 'tapped');
    const calls = () => fx.em.fcm.received.filter((r) => r.token === token).length;
    try {
      await h.token('u-tap', 'd1', 'fcm', { token });
      await h.message('u-tap', 'c1');
      const [tapped, ...more] = h.dispatches();
      assert.ok(tapped, 'the dispatch is on push.dispatch (tap)');
      assert.deepEqual(more, []);
      await h.advanceTo(h.t + 1_000);
      assert.equal(calls(), 1, 'the tapped record read back is not submitted again');
      assert.deepEqual(
        h.outcomes().map((o) => [o.status, o.vendor]),
        [['ACCEPTED', 'fcm']],
      );

      // What `pushctl replay` does: the task back to pending, the dispatch produced with the header.
      await fx.db.pool.query(`UPDATE \`${fx.db.table}\` SET status = 0 WHERE task_id = ?`, [tapped.task_id]);
      await h.driver.pipeInput(TOPICS.dispatch.name, tapped.uid, tapped, { headers: { [REPLAY_HEADER]: new Date().toISOString() } });
      assert.equal(calls(), 2, 'the replay is submitted');
      assert.deepEqual(
        h.outcomes().map((o) => [o.status, o.vendor]),
        [['ACCEPTED', 'fcm']],
      );
      await ledger.flush();
      assert.equal((await taskRow(fx.db.pool, fx.db.table, tapped.task_id))!.status, 1);
    } finally {
      await h.close();
      ledger.close();
    }
  });
});
