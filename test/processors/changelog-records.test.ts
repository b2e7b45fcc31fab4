/**
 * What the decision stages write to their changelogs, as an operator counting Kafka records per
 * persisted message would check it: state is written on a real change only, a hold and its timer
 * are one record, a merge window with only its leading push costs its open and its tombstone.
 * Runs the whole decisions topology in the TopologyTestDriver (a commit after every input).
 */
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { DecisionsHarness, brief, briefOutcome, withHarness } from './harness.ts';
import { ONLINE_FILTER_STORE_NAMES as OF } from '../../processors/online-filter/options.ts';
import { MERGE_STORE_NAMES } from '../../processors/merge/options.ts';
import { countChangelogRecords, formatCounts } from './changelog-workload.ts';

/** u1's device d1 with an FCM token, connected, at 1 s (committed, whatever the harness's commit mode). */
async function onlineAt1s(h: DecisionsHarness): Promise<void> {
  await h.token('u1', 'd1', 'fcm');
  await h.online('u1', 'd1');
  await h.driver.commit();
  await h.advanceTo(1_000);
}

/** The ACK marks of the presence record last written to the changelog. */
function lastWrittenMarks(h: DecisionsHarness): Array<[string, number]> {
  const value = h.driver.changelog(OF.presence).at(-1)?.value;
  assert.ok(value, 'a presence record was written');
  return (JSON.parse(value.toString('utf8')) as { acked: Array<[string, number]> }).acked;
}

/** Changelog records each store gets while `step` runs. */
async function written(h: DecisionsHarness, step: () => Promise<unknown>): Promise<Record<string, number>> {
  const stores = [OF.devices, OF.presence, OF.holds, OF.holdTimers, MERGE_STORE_NAMES.windows];
  const before = stores.map((s) => h.driver.changelog(s).length);
  await step();
  return Object.fromEntries(stores.map((s, i) => [s, h.driver.changelog(s).length - before[i]!]).filter(([, n]) => n !== 0));
}

describe('online-filter writes presence only on a real change', () => {
  const rows: Array<{ name: string; setup: (h: DecisionsHarness) => Promise<void>; presenceRecords: number }> = [
    { name: 'a device never seen (offline): no presence record, none created', setup: async () => {}, presenceRecords: 0 },
    {
      name: 'a disconnected device: its presence did not change, no record',
      setup: async (h) => {
        await h.online('u1', 'd1');
        await h.presence('u1', 'd1', 'DISCONNECT');
      },
      presenceRecords: 0,
    },
    {
      name: 'a device in the background: the push starts its cooldown, one record',
      setup: async (h) => {
        await h.online('u1', 'd1');
        await h.presence('u1', 'd1', 'BACKGROUND');
      },
      presenceRecords: 1,
    },
  ];
  for (const row of rows) {
    test(row.name, async () => {
      const h = DecisionsHarness.create();
      try {
        await h.token('u1', 'd1', 'fcm');
        await row.setup(h);
        await h.advanceTo(1_000);
        const records = await written(h, () => h.message('u1', 'c1'));
        assert.deepEqual(h.dispatches().map(brief), ['d1:c1#1 LEADING badge=1'], 'the message is pushed');
        assert.equal(records[OF.presence] ?? 0, row.presenceRecords);
      } finally {
        await h.close();
      }
    });
  }

  test('a second message to a background device inside its cooldown writes no presence', async () => {
    const h = DecisionsHarness.create();
    try {
      await h.token('u1', 'd1', 'fcm');
      await h.online('u1', 'd1');
      await h.presence('u1', 'd1', 'BACKGROUND');
      await h.message('u1', 'c1');
      await h.advanceTo(3_000);
      assert.deepEqual(await written(h, () => h.message('u1', 'c2')), {}, 'suppressed by the cooldown: no state changed');
      assert.deepEqual(h.outcomes().map(briefOutcome), ['d1:c2#1 SUPPRESSED background_cooldown']);
    } finally {
      await h.close();
    }
  });

  test('repeated gateway events that change nothing write nothing; a heartbeat that moves the time does', async () => {
    const h = DecisionsHarness.create();
    try {
      await h.online('u1', 'd1');
      assert.deepEqual(await written(h, () => h.presence('u1', 'd1', 'CONNECT')), {}, 'CONNECT again at the same time');
      assert.deepEqual(await written(h, () => h.presence('u1', 'd1', 'ACK', 'c1', 0)), { [OF.presence]: 1 }, 'a first ACK raises the mark');
      assert.deepEqual(await written(h, () => h.presence('u1', 'd1', 'ACK', 'c1', 0)), {}, 'the same ACK again');
      await h.advanceTo(30_000, 10_000);
      assert.deepEqual(await written(h, () => h.presence('u1', 'd1', 'HEARTBEAT')), { [OF.presence]: 1 });
      await h.presence('u1', 'd1', 'DISCONNECT');
      assert.deepEqual(await written(h, () => h.presence('u1', 'd1', 'DISCONNECT')), {}, 'DISCONNECT of a disconnected device');
      assert.deepEqual(await written(h, () => h.token('u1', 'd1', 'fcm')), { [OF.devices]: 1 }, 'a new token');
      assert.deepEqual(await written(h, () => h.token('u1', 'd1', 'fcm')), {}, 'the same token reported again');
    } finally {
      await h.close();
    }
  });
});

describe('online-filter: a hold and its timer are one record', () => {
  test('holding a message writes one holds record and no timer or presence record; its ACK writes only the tombstone', async () => {
    const h = DecisionsHarness.create();
    try {
      await h.token('u1', 'd1', 'fcm');
      await h.online('u1', 'd1');
      await h.advanceTo(1_000);
      assert.deepEqual(await written(h, () => h.message('u1', 'c1')), { [OF.holds]: 1 });
      assert.equal(h.driver.changelog(OF.holds).at(-1)?.value === null, false, 'the hold is a value, not a tombstone');
      await h.advanceTo(2_000);
      assert.deepEqual(
        await written(h, () => h.presence('u1', 'd1', 'ACK', 'c1', 1)),
        { [OF.holds]: 1 },
        'the ACK confirms a held message: its mark stays in memory',
      );
      assert.equal(h.driver.changelog(OF.holds).at(-1)?.value, null, 'the cancelled hold is a tombstone');
      assert.deepEqual(h.driver.changelog(OF.holdTimers), [], 'the timers have no changelog');
    } finally {
      await h.close();
    }
  });

  test('the in-memory ACK mark still suppresses a second copy of the message, and the next written change carries it', () =>
    withHarness({}, async (h) => {
      await onlineAt1s(h);
      await h.message('u1', 'c1');
      await h.presence('u1', 'd1', 'ACK', 'c1', 1);
      assert.deepEqual(await written(h, () => h.message('u1', 'c1', { seq: 1 })), {}, 'a second copy of the persisted record');
      assert.deepEqual(h.outcomes().map(briefOutcome), ['d1:c1#1 SUPPRESSED online_ack', 'd1:c1#1 SUPPRESSED online_ack']);
      assert.deepEqual(h.dispatches(), []);
      await h.advanceTo(30_000, 10_000);
      assert.deepEqual(await written(h, () => h.presence('u1', 'd1', 'HEARTBEAT')), { [OF.presence]: 1 });
      assert.deepEqual(lastWrittenMarks(h), [['c1', 1]], 'the heartbeat record carries the mark');
    }));

  test('an ACK ahead of its message is written at the commit when its message has not come by then, and suppresses it when it comes', () =>
    withHarness({}, async (h) => {
      await onlineAt1s(h);
      assert.deepEqual(await written(h, () => h.presence('u1', 'd1', 'ACK', 'c1', 1)), { [OF.presence]: 1 });
      assert.deepEqual(lastWrittenMarks(h), [['c1', 1]], 'a restart after this commit still knows the ACK');
      assert.deepEqual(await written(h, () => h.message('u1', 'c1')), {});
      assert.deepEqual(h.outcomes().map(briefOutcome), ['d1:c1#1 SUPPRESSED online_ack']);
    }));

  test('an ACK ahead of its message, both read before one commit: the message is suppressed and no presence is written', () =>
    withHarness({ commitEveryInput: false }, async (h) => {
      await onlineAt1s(h);
      const records = await written(h, async () => {
        await h.presence('u1', 'd1', 'ACK', 'c1', 2);
        await h.message('u1', 'c1');
        await h.message('u1', 'c1');
        await h.driver.commit();
      });
      assert.deepEqual(records, {}, 'the ACKed messages were seen before the commit');
      assert.deepEqual(h.outcomes().map(briefOutcome), ['d1:c1#1 SUPPRESSED online_ack', 'd1:c1#2 SUPPRESSED online_ack']);
      const ahead = await written(h, async () => {
        await h.presence('u1', 'd1', 'ACK', 'c1', 4);
        await h.message('u1', 'c1');
        await h.driver.commit();
      });
      assert.deepEqual(ahead, { [OF.presence]: 1 }, 'message 4 has not come: its mark is written');
    }));

  test('a hold released as half-open: the timer fires from memory, the suspicion is one presence record', async () => {
    const h = DecisionsHarness.create();
    try {
      await h.token('u1', 'd1', 'fcm');
      await h.online('u1', 'd1');
      await h.advanceTo(1_000);
      await h.message('u1', 'c1');
      const records = await written(h, () => h.advanceTo(11_500));
      assert.deepEqual(h.dispatches().map(brief), ['d1:c1#1 LEADING badge=1']);
      assert.equal(records[OF.presence], 1, 'suspicious since the release');
      assert.equal(records[OF.holds], 1, 'the released hold is a tombstone');
      assert.equal(records[OF.holdTimers], undefined);
      assert.deepEqual(await written(h, () => h.message('u1', 'c2')), { [MERGE_STORE_NAMES.windows]: 1 }, 'suspect: pushed at once, presence unchanged');
    } finally {
      await h.close();
    }
  });
});

describe('merge: records per window', () => {
  test('a window with only its leading push is written when it opens and tombstoned when its memory expires, nothing at its close', async () => {
    const h = DecisionsHarness.create();
    try {
      await h.token('u1', 'd1', 'fcm');
      await h.message('u1', 'c1');
      const records = h.driver.changelog(MERGE_STORE_NAMES.windows);
      await h.advanceTo(80_000, 1_000);
      assert.deepEqual(h.dispatches().map(brief), ['d1:c1#1 LEADING badge=1']);
      assert.deepEqual(
        h.driver.changelog(MERGE_STORE_NAMES.windows).map((r) => (r.value === null ? 'tombstone' : 'window')),
        [...records.map(() => 'window'), 'tombstone'],
      );
      assert.equal(records.length, 1);
    } finally {
      await h.close();
    }
  });

  test('a window with a trailing update: one record per commit that carries a trigger, one at the close that sent it, one tombstone', async () => {
    const h = DecisionsHarness.create();
    try {
      await h.token('u1', 'd1', 'fcm');
      for (const t of [0, 1_000, 2_000]) {
        await h.advanceTo(t);
        await h.message('u1', 'c1');
      }
      await h.advanceTo(80_000, 1_000);
      assert.deepEqual(h.dispatches().map(brief), ['d1:c1#1 LEADING badge=1', 'd1:c1#3 TRAILING silent badge=3']);
      // open with #1, carry #2, carry #3, closed after the trailing update, tombstone.
      assert.equal(h.driver.changelog(MERGE_STORE_NAMES.windows).length, 5);
    } finally {
      await h.close();
    }
  });
});

test('the bench workload: messages write no presence, ACKs of held messages none either, timers no records, under 3 changelog records per persisted message (5.0 before)', async (t) => {
  const counts = await countChangelogRecords();
  for (const line of formatCounts(counts).split('\n')) t.diagnostic(line);
  assert.equal(counts.changelog[OF.holdTimers], 0);
  // The workload's presence events are one CONNECT per online device, then an ACK of every message
  // to it, 50–300 ms later: most ACKs confirm a held message and write nothing (it was one record
  // per ACK before).
  assert.ok(
    counts.changelog[OF.presence]! < counts.presenceEvents / 2,
    `presence records ${counts.changelog[OF.presence]} < half the presence events ${counts.presenceEvents}`,
  );
  const changelog = Object.values(counts.changelog).reduce((a, b) => a + b, 0);
  assert.ok(changelog / counts.messages < 3, `${(changelog / counts.messages).toFixed(2)} changelog records per persisted message`);
});
