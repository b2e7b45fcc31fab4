/**
 * docs/design.md, "online-filter", row by row, per device, through the TopologyTestDriver with the
 * whole decisions topology (merge window 5 s, leading mode; so each first message of a conversation
 * dispatches at once).
 */
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { DecisionsHarness, brief, briefOutcome } from '../harness.ts';

type Script = (h: DecisionsHarness) => Promise<void>;

interface Row {
  name: string;
  /** Presence script for device d1 of user u1 (which holds an FCM token), from t = 0. */
  setup: Script;
  /** When the message of conv c1 is persisted; default t = 1 000. */
  messageAt?: number;
  /** What happens after the message. */
  after?: Script;
  /** Dispatches by the end (40 s after the message), as `device:conv#seq KIND badge=n @t`. */
  dispatches: string[];
  outcomes: string[];
}

const at =
  (t: number, s: Script): Script =>
  async (h) => {
    await h.advanceTo(t);
    await s(h);
  };

const rows: Row[] = [
  {
    name: 'offline: never connected → push at once',
    setup: async () => {},
    dispatches: ['d1:c1#1 LEADING badge=1 @1000'],
    outcomes: [],
  },
  {
    name: 'offline: disconnected → push',
    setup: async (h) => {
      await h.online('u1', 'd1');
      await h.presence('u1', 'd1', 'DISCONNECT');
    },
    dispatches: ['d1:c1#1 LEADING badge=1 @1000'],
    outcomes: [],
  },
  {
    name: 'offline: connected but the last heartbeat is older than 90 s → push',
    setup: async (h) => h.online('u1', 'd1'),
    messageAt: 90_001,
    dispatches: ['d1:c1#1 LEADING badge=1 @90001'],
    outcomes: [],
  },
  {
    name: 'online + ACK within the hold window → suppressed, no push',
    setup: async (h) => h.online('u1', 'd1'),
    after: at(4_000, (h) => h.presence('u1', 'd1', 'ACK', 'c1', 1)),
    dispatches: [],
    outcomes: ['d1:c1#1 SUPPRESSED online_ack'],
  },
  {
    name: 'online + ACK with a higher seq cancels too',
    setup: async (h) => h.online('u1', 'd1'),
    after: at(2_000, (h) => h.presence('u1', 'd1', 'ACK', 'c1', 7)),
    dispatches: [],
    outcomes: ['d1:c1#1 SUPPRESSED online_ack'],
  },
  {
    name: 'online + ACK for another conversation does not cancel → half-open push at 11 s',
    setup: async (h) => h.online('u1', 'd1'),
    after: at(2_000, (h) => h.presence('u1', 'd1', 'ACK', 'c9', 5)),
    dispatches: ['d1:c1#1 LEADING badge=1 @11000'],
    outcomes: [],
  },
  {
    name: 'online + READ within the hold window → suppressed as read',
    setup: async (h) => h.online('u1', 'd1'),
    after: at(3_000, (h) => h.presence('u1', 'd1', 'READ', 'c1', 1)),
    dispatches: [],
    outcomes: ['d1:c1#1 SUPPRESSED read'],
  },
  {
    name: 'half-open: heartbeat fine, no ACK within 10 s → push, device marked suspicious, next message pushes at once',
    setup: async (h) => h.online('u1', 'd1'),
    after: async (h) => {
      await h.advanceTo(11_500);
      await h.presence('u1', 'd1', 'HEARTBEAT');
      await h.message('u1', 'c2'); // suspicious: at once, no hold
    },
    dispatches: ['d1:c1#1 LEADING badge=1 @11000', 'd1:c2#1 LEADING badge=1 @11500'],
    outcomes: [],
  },
  {
    name: 'half-open suspicion is cleared by a fresh ACK: the next message is held again',
    setup: async (h) => h.online('u1', 'd1'),
    after: async (h) => {
      await h.advanceTo(12_000);
      await h.presence('u1', 'd1', 'ACK', 'c0', 3);
      await h.message('u1', 'c2');
      await h.advanceTo(14_000);
      await h.presence('u1', 'd1', 'ACK', 'c2', 1);
    },
    dispatches: ['d1:c1#1 LEADING badge=1 @11000'],
    outcomes: ['d1:c2#1 SUPPRESSED online_ack'],
  },
  {
    name: 'BACKGROUND → push at once even while heartbeating',
    setup: async (h) => {
      await h.online('u1', 'd1');
      await h.presence('u1', 'd1', 'BACKGROUND');
    },
    dispatches: ['d1:c1#1 LEADING badge=1 @1000'],
    outcomes: [],
  },
  {
    name: 'BACKGROUND → no second push to the device within 10 s (another conversation)',
    setup: async (h) => {
      await h.online('u1', 'd1');
      await h.presence('u1', 'd1', 'BACKGROUND');
    },
    after: async (h) => {
      await h.advanceTo(6_000);
      await h.message('u1', 'c2');
      await h.advanceTo(11_000); // exactly 10 s after the first push: allowed again
      await h.message('u1', 'c3');
    },
    dispatches: ['d1:c1#1 LEADING badge=1 @1000', 'd1:c3#1 LEADING badge=1 @11000'],
    outcomes: ['d1:c2#1 SUPPRESSED background_cooldown'],
  },
  {
    name: 'EXIT → push; FOREGROUND later makes it an online device again (held, ACK cancels)',
    setup: async (h) => {
      await h.online('u1', 'd1');
      await h.presence('u1', 'd1', 'EXIT');
    },
    after: async (h) => {
      await h.advanceTo(20_000);
      await h.online('u1', 'd1');
      await h.presence('u1', 'd1', 'FOREGROUND');
      await h.message('u1', 'c2');
      await h.advanceTo(21_000);
      await h.presence('u1', 'd1', 'ACK', 'c2', 1);
    },
    dispatches: ['d1:c1#1 LEADING badge=1 @1000'],
    outcomes: ['d1:c2#1 SUPPRESSED online_ack'],
  },
];

describe('online-filter: the decision table of docs/design.md, "online-filter" (one device)', () => {
  for (const row of rows) {
    test(row.name, async () => {
      const h = DecisionsHarness.create();
      try {
        await h.token('u1', 'd1', 'fcm');
        await row.setup(h);
        const messageAt = row.messageAt ?? 1_000;
        await h.advanceTo(messageAt, 1_000);
        await h.message('u1', 'c1');
        await row.after?.(h);
        await h.advanceTo(messageAt + 40_000, 500);
        const { dispatches, outcomes } = h.drain();
        assert.deepEqual(
          dispatches.map((d) => `${brief(d)} @${d.decided_at - h.now + h.t}`),
          row.dispatches,
        );
        assert.deepEqual(outcomes.map(briefOutcome), row.outcomes);
      } finally {
        await h.close();
      }
    });
  }
});

describe('online-filter: timing and devices', () => {
  test('a heartbeat 90 s old still counts; 91 s old does not', async () => {
    const h = DecisionsHarness.create();
    try {
      await h.token('u1', 'd1', 'fcm');
      await h.online('u1', 'd1');
      await h.advanceTo(90_000, 1_000);
      await h.message('u1', 'c1'); // heartbeat exactly 90 s old: online → held
      assert.deepEqual(h.dispatches(), []);
      await h.presence('u1', 'd1', 'ACK', 'c1', 1);
      assert.deepEqual(h.outcomes().map(briefOutcome), ['d1:c1#1 SUPPRESSED online_ack']);
      await h.advanceTo(181_000, 1_000); // last heartbeat at 0 → 181 s old
      await h.message('u1', 'c2');
      assert.deepEqual(h.dispatches().map(brief), ['d1:c2#1 LEADING badge=1']);
    } finally {
      await h.close();
    }
  });

  test('the hold window is configurable: 5 s holds release at 5 s, not before', async () => {
    const h = DecisionsHarness.create({ onlineFilter: { holdWindowMs: 5_000 } });
    try {
      await h.token('u1', 'd1', 'fcm');
      await h.online('u1', 'd1');
      await h.message('u1', 'c1');
      await h.advanceTo(4_900);
      assert.deepEqual(h.dispatches(), []);
      await h.advanceTo(5_000);
      const [d] = h.dispatches();
      assert.equal(d?.seq, 1);
      assert.equal(d?.decided_at, h.now);
    } finally {
      await h.close();
    }
  });

  test('a user with three devices: each is decided on its own presence', async () => {
    const h = DecisionsHarness.create();
    try {
      await h.token('u1', 'phone', 'apns');
      await h.token('u1', 'tablet', 'fcm');
      await h.token('u1', 'huawei', 'hms', { manufacturer: 'huawei' });
      await h.online('u1', 'phone'); // online and ACKing
      await h.online('u1', 'tablet');
      await h.presence('u1', 'tablet', 'BACKGROUND'); // background
      // huawei: no connection
      await h.advanceTo(1_000);
      await h.message('u1', 'c1');
      await h.advanceTo(2_000);
      await h.presence('u1', 'phone', 'ACK', 'c1', 1);
      await h.advanceTo(30_000, 500);
      const { dispatches, outcomes } = h.drain();
      assert.deepEqual(dispatches.map((d) => `${d.device_id} ${d.channels.map((c) => c.vendor).join(',')}`).sort(), ['huawei hms', 'tablet fcm']);
      assert.deepEqual(outcomes.map(briefOutcome), ['phone:c1#1 SUPPRESSED online_ack']);
      assert.equal(new Set(dispatches.map((d) => d.task_id)).size, 2, 'one task per device');
    } finally {
      await h.close();
    }
  });

  test('no device with a valid token → DROPPED no_token, counted once for the user', async () => {
    const h = DecisionsHarness.create();
    try {
      await h.token('u1', 'd1', 'fcm');
      await h.token('u1', 'd1', 'fcm', { state: 'INVALID', source: 'FAN_OUT', reason: 'dead_token' });
      await h.message('u1', 'c1');
      const { dispatches, outcomes } = h.drain();
      assert.deepEqual(dispatches, []);
      assert.deepEqual(outcomes.map(briefOutcome), ['-:c1#1 DROPPED no_token']);
    } finally {
      await h.close();
    }
  });

  test('a message already ACKed before its persisted record arrived is suppressed', async () => {
    const h = DecisionsHarness.create();
    try {
      await h.token('u1', 'd1', 'fcm');
      await h.online('u1', 'd1');
      await h.presence('u1', 'd1', 'ACK', 'c1', 3);
      await h.message('u1', 'c1', { seq: 3 });
      assert.deepEqual(h.outcomes().map(briefOutcome), ['d1:c1#3 SUPPRESSED online_ack']);
    } finally {
      await h.close();
    }
  });
});

describe('online-filter and merge while catching up on a backlog', () => {
  test('a message read 60 s late is held from when it is seen, so its late ACK still cancels it; a late burst is merged', async () => {
    const h = DecisionsHarness.create();
    try {
      await h.token('u1', 'online', 'fcm');
      await h.token('u1', 'offline', 'apns');
      await h.online('u1', 'online');
      await h.advanceTo(60_000, 10_000);
      await h.presence('u1', 'online', 'HEARTBEAT');
      const past = h.now - 50_000; // persisted 50 s ago, seen only now
      for (let s = 1; s <= 4; s++) await h.message('u1', 'c1', { seq: s, unread_cnt: s, persisted_at: past + s * 100 });
      await h.advanceTo(62_000); // a punctuation later, the ACK (equally late) arrives
      await h.driver.pipeInput('im.presence', 'u1', { uid: 'u1', device_id: 'online', kind: 'ACK', conv_id: 'c1', seq: 4, at: past + 500 });
      await h.advanceTo(90_000, 500);
      const { dispatches, outcomes } = h.drain();
      assert.deepEqual(dispatches.map(brief), ['offline:c1#1 LEADING badge=1', 'offline:c1#4 TRAILING silent badge=4']);
      assert.deepEqual(outcomes.map(briefOutcome).sort(), [
        'offline:c1#2 MERGED merged',
        'offline:c1#3 MERGED merged',
        'online:c1#1 SUPPRESSED online_ack',
        'online:c1#2 SUPPRESSED online_ack',
        'online:c1#3 SUPPRESSED online_ack',
        'online:c1#4 SUPPRESSED online_ack',
      ]);
    } finally {
      await h.close();
    }
  });
});
