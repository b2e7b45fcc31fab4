/**
 * The merge rules of docs/design.md, "merge", through the TopologyTestDriver: offline device (every
 * message becomes a trigger at once), window 5 s.
 */
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigError } from '../../../common/errors.ts';
import { compileMergeOptions, mergeOptionsFromEnv } from '../../../processors/merge/options.ts';
import { DecisionsHarness, brief, briefOutcome, type HarnessOptions } from '../harness.ts';

/** Steps: `m@t` = message of c1 at t (optionally `m5@t` with seq 5), `r5@t` = READ up to seq 5 at t. */
interface Row {
  name: string;
  options?: HarnessOptions;
  steps: string[];
  dispatches: string[];
  outcomes: string[];
}

const rows: Row[] = [
  {
    name: 'leading: first trigger of an idle conversation is pushed at once',
    steps: ['m1@1000'],
    dispatches: ['d1:c1#1 LEADING badge=1 @1000'],
    outcomes: [],
  },
  {
    name: 'leading: later triggers merged, one silent trailing update at window close with the latest unread count',
    steps: ['m1@1000', 'm2@2000', 'm3@3000', 'm4@5999'],
    dispatches: ['d1:c1#1 LEADING badge=1 @1000', 'd1:c1#4 TRAILING silent badge=4 @6000 merged=3'],
    outcomes: ['d1:c1#2 MERGED merged', 'd1:c1#3 MERGED merged'],
  },
  {
    name: 'window edge: a trigger exactly at window end opens a new window (leading again)',
    steps: ['m1@1000', 'm2@6000'],
    dispatches: ['d1:c1#1 LEADING badge=1 @1000', 'd1:c1#2 LEADING badge=2 @6000'],
    outcomes: [],
  },
  {
    name: 'no trailing update when nothing arrived after the leading push',
    steps: ['m1@1000', 'm2@8000', 'm3@20000'],
    dispatches: ['d1:c1#1 LEADING badge=1 @1000', 'd1:c1#2 LEADING badge=2 @8000', 'd1:c1#3 LEADING badge=3 @20000'],
    outcomes: [],
  },
  {
    name: 'a READ before the window closes cancels the trailing update',
    steps: ['m1@1000', 'm2@2000', 'm3@3000', 'r3@4000'],
    dispatches: ['d1:c1#1 LEADING badge=1 @1000'],
    outcomes: ['d1:c1#2 MERGED merged', 'd1:c1#3 SUPPRESSED read'],
  },
  {
    name: 'a READ of an older seq does not cancel a newer pending trigger',
    steps: ['m1@1000', 'm2@2000', 'm3@3000', 'r2@3500'],
    dispatches: ['d1:c1#1 LEADING badge=1 @1000', 'd1:c1#3 TRAILING silent badge=3 @6000 merged=2'],
    outcomes: ['d1:c1#2 MERGED merged'],
  },
  {
    name: 'out-of-order seq never lowers the carried seq or unread count',
    steps: ['m1@1000', 'm4@2000', 'm3@3000', 'm2@4000'],
    dispatches: ['d1:c1#1 LEADING badge=1 @1000', 'd1:c1#4 TRAILING silent badge=4 @6000 merged=3'],
    outcomes: ['d1:c1#3 MERGED merged', 'd1:c1#2 MERGED merged'],
  },
  {
    name: 'a late trigger (after its window closed) with a lower seq than pushed is merged, not pushed',
    steps: ['m1@1000', 'm5@2000', 'm3@8000'],
    dispatches: ['d1:c1#1 LEADING badge=1 @1000', 'd1:c1#5 TRAILING silent badge=5 @6000 merged=1'],
    outcomes: ['d1:c1#3 MERGED merged'],
  },
  {
    name: 'trailing-only: nothing until the window closes, then one notification with sound',
    options: { merge: { mode: 'trailing-only' } },
    steps: ['m1@1000', 'm2@2000', 'm3@3000'],
    dispatches: ['d1:c1#3 TRAILING badge=3 @6000 merged=3'],
    outcomes: ['d1:c1#1 MERGED merged', 'd1:c1#2 MERGED merged'],
  },
  {
    name: 'trailing-only: a single trigger is sent at window close',
    options: { merge: { mode: 'trailing-only' } },
    steps: ['m1@1000'],
    dispatches: ['d1:c1#1 TRAILING badge=1 @6000 merged=1'],
    outcomes: [],
  },
  {
    name: 'trailing-only: READ cancels the pending notification',
    options: { merge: { mode: 'trailing-only' } },
    steps: ['m1@1000', 'm2@2000', 'r2@3000'],
    dispatches: [],
    outcomes: ['d1:c1#1 MERGED merged', 'd1:c1#2 SUPPRESSED read'],
  },
  {
    name: 'a conversation reopened while its closed window is remembered closes at the new window end, once',
    options: { merge: { retentionMs: 10_000 } },
    steps: ['m1@1000', 'm2@8000', 'm3@9000', 'm4@24000'],
    dispatches: [
      'd1:c1#1 LEADING badge=1 @1000',
      'd1:c1#2 LEADING badge=2 @8000',
      'd1:c1#3 TRAILING silent badge=3 @13000 merged=1',
      'd1:c1#4 LEADING badge=4 @24000',
    ],
    outcomes: [],
  },
  {
    name: 'a 2 s window closes at 2 s',
    options: { merge: { windowMs: 2_000 } },
    steps: ['m1@1000', 'm2@2000', 'm3@3000'],
    dispatches: ['d1:c1#1 LEADING badge=1 @1000', 'd1:c1#2 TRAILING silent badge=2 @3000 merged=1', 'd1:c1#3 LEADING badge=3 @3000'],
    outcomes: [],
  },
];

async function run(row: Row): Promise<{ dispatches: string[]; outcomes: string[] }> {
  const h = DecisionsHarness.create(row.options);
  try {
    await h.token('u1', 'd1', 'fcm');
    for (const step of row.steps) {
      const m = /^([mr])(\d+)@(\d+)$/.exec(step)!;
      await h.advanceTo(Number(m[3]));
      const seq = Number(m[2]);
      if (m[1] === 'm') await h.message('u1', 'c1', { seq, unread_cnt: seq });
      else await h.presence('u1', 'd1', 'READ', 'c1', seq);
    }
    await h.advanceTo(40_000, 500);
    const { dispatches, outcomes } = h.drain();
    return {
      dispatches: dispatches.map((d) => `${brief(d)} @${d.decided_at - h.now + h.t}${d.kind === 'TRAILING' ? ` merged=${d.merged_count}` : ''}`),
      outcomes: outcomes.map(briefOutcome),
    };
  } finally {
    await h.close();
  }
}

describe('merge: the rules of docs/design.md, "merge"', () => {
  for (const row of rows) {
    test(row.name, async () => {
      assert.deepEqual(await run(row), { dispatches: row.dispatches, outcomes: row.outcomes });
    });
  }

  test('every trigger ends in exactly one dispatch or outcome', async () => {
    const h = DecisionsHarness.create();
    try {
      await h.token('u1', 'd1', 'fcm');
      const seqs: number[] = [];
      for (let i = 0; i < 60; i++) {
        await h.advanceTo(1_000 + i * 370);
        seqs.push((await h.message('u1', 'c1')).seq);
        if (i === 30) await h.presence('u1', 'd1', 'READ', 'c1', seqs.at(-1)!);
      }
      await h.advanceTo(60_000, 500);
      const { dispatches, outcomes } = h.drain();
      const ends = [...dispatches.map((d) => d.seq), ...outcomes.map((o) => o.seq)].sort((a, b) => a - b);
      assert.deepEqual(ends, seqs);
      assert.ok(dispatches.length <= 0.3 * seqs.length, `${dispatches.length} dispatches for ${seqs.length} triggers`);
      assert.equal(dispatches.at(-1)?.badge, 60, 'the last push carries the final unread count');
    } finally {
      await h.close();
    }
  });

  test('windows are per (uid, conv) and per device', async () => {
    const h = DecisionsHarness.create();
    try {
      await h.token('u1', 'd1', 'fcm');
      await h.token('u1', 'd2', 'apns');
      await h.token('u2', 'd3', 'fcm');
      await h.message('u1', 'c1');
      await h.message('u1', 'c2');
      await h.message('u2', 'c1');
      const leading = h
        .dispatches()
        .map((d) => `${d.uid}/${d.device_id}/${d.conv_id}`)
        .sort();
      assert.deepEqual(leading, ['u1/d1/c1', 'u1/d1/c2', 'u1/d2/c1', 'u1/d2/c2', 'u2/d3/c1']);
    } finally {
      await h.close();
    }
  });

  test('a persisted message produced twice ends in one class: its pushed or carried copy is not counted again', async () => {
    const h = DecisionsHarness.create();
    try {
      await h.token('u1', 'd1', 'fcm');
      const first = await h.message('u1', 'c1'); // leading push
      await h.advanceTo(500);
      const second = await h.message('u1', 'c1'); // carried for the trailing update
      await h.advanceTo(1_000);
      await h.message('u1', 'c1', { ...first }); // the producer wrote seq 1 again
      await h.message('u1', 'c1', { ...second }); // ... and seq 2
      await h.advanceTo(10_000);
      const { dispatches, outcomes } = h.drain();
      assert.deepEqual(dispatches.map(brief), ['d1:c1#1 LEADING badge=1', 'd1:c1#2 TRAILING silent badge=2']);
      assert.deepEqual(outcomes.map(briefOutcome), [], 'no MERGED outcome for the repeats');
    } finally {
      await h.close();
    }
  });
});

describe('merge: the store cap (PUSH_MERGE_MAX_ENTRIES)', () => {
  test('over the cap the entry due soonest closes early: its trailing update goes out with the latest unread count, and the store stays at the cap', async () => {
    const evicted: string[] = [];
    const h = DecisionsHarness.create({ merge: { maxEntries: 2, listener: { evicted: (kind) => evicted.push(kind) } } });
    try {
      await h.token('u1', 'd1', 'fcm');
      await h.message('u1', 'c1'); // leading, window until 5 000
      await h.advanceTo(100);
      await h.message('u1', 'c1', { unread_cnt: 7 }); // carried for c1's trailing update
      await h.advanceTo(200);
      await h.message('u1', 'c2'); // a second entry: at the cap
      assert.deepEqual(evicted, []);
      await h.advanceTo(300);
      await h.message('u1', 'c3'); // a third: c1 (due first) makes room
      assert.deepEqual(evicted, ['closed-early']);
      const { dispatches } = h.drain();
      assert.deepEqual(dispatches.map(brief), [
        'd1:c1#1 LEADING badge=1',
        'd1:c2#1 LEADING badge=1',
        'd1:c3#1 LEADING badge=1',
        'd1:c1#2 TRAILING silent badge=7',
      ]);
      assert.equal(h.driver.getStateStore<{ size: number }>('merge-windows').size, 2, 'c2 and c3 remain');
      await h.advanceTo(10_000);
      assert.deepEqual(h.drain().dispatches.map(brief), [], 'c1 sends nothing more at its original close');
    } finally {
      await h.close();
    }
  });

  test('an entry whose memory expires soonest is forgotten, nothing sent; the cap is validated at start naming its key', async () => {
    const evicted: string[] = [];
    const h = DecisionsHarness.create({ merge: { maxEntries: 1, windowMs: 2_000, retentionMs: 1_000, listener: { evicted: (kind) => evicted.push(kind) } } });
    try {
      await h.token('u1', 'd1', 'fcm');
      await h.message('u1', 'c1');
      await h.advanceTo(2_500); // c1's window closed with nothing to send; its memory lasts until 3 000
      await h.message('u1', 'c2'); // open until 4 500: c1's memory is due sooner
      assert.deepEqual(evicted, ['forgotten']);
      assert.deepEqual(h.drain().dispatches.map(brief), ['d1:c1#1 LEADING badge=1', 'd1:c2#1 LEADING badge=1']);
    } finally {
      await h.close();
    }
    assert.throws(() => mergeOptionsFromEnv({ PUSH_MERGE_MAX_ENTRIES: '0' }), /PUSH_MERGE_MAX_ENTRIES/);
    assert.equal(compileMergeOptions().maxEntries, 500_000);
  });
});

describe('merge options', () => {
  test('a window above 10 s is rejected at start, naming PUSH_MERGE_WINDOW_MS', () => {
    assert.throws(
      () => compileMergeOptions({ windowMs: 10_001 }),
      (e: unknown) => e instanceof ConfigError && e.key === 'PUSH_MERGE_WINDOW_MS',
    );
    assert.throws(() => mergeOptionsFromEnv({ PUSH_MERGE_WINDOW_MS: '15000' }), /PUSH_MERGE_WINDOW_MS/);
    assert.throws(() => DecisionsHarness.create({ merge: { windowMs: 20_000 } }), /PUSH_MERGE_WINDOW_MS/);
    assert.equal(compileMergeOptions({ windowMs: 10_000 }).windowMs, 10_000);
    assert.equal(compileMergeOptions().windowMs, 5_000);
  });

  test('an unknown mode is rejected naming PUSH_MERGE_MODE', () => {
    assert.throws(() => mergeOptionsFromEnv({ PUSH_MERGE_MODE: 'eager' }), /PUSH_MERGE_MODE/);
    assert.throws(() => compileMergeOptions({ mode: 'eager' as never }), /PUSH_MERGE_MODE/);
  });
});
