/**
 * TaskInputQueue (topology/task-input.ts): a task's buffered records come out in timestamp order
 * across its input partitions, and a record waits (up to the idle time) while another partition
 * may still hold something stamped before it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TaskInputQueue, type FetchMark, type QueuedInput } from '../../topology/task-input.ts';

const MESSAGES = 'im.message.persisted';
const SETTINGS = 'push.settings';

const record = (topic: string, offset: number, timestamp: number): QueuedInput => ({
  topic,
  partition: 0,
  offset: String(offset),
  key: null,
  value: null,
  timestamp,
  headers: {},
});

/** Fetch number n: sent as 2n - 1, answered as 2n (one counter, one fetch at a time). */
const fetchNo = (n: number, readable = 0): FetchMark => ({ sent: 2 * n - 1, answered: 2 * n, readable });

/** Hands one fetch's records of `topic` over, as the fetch loop does: appended, then the fetch marked. */
const handOver = (q: TaskInputQueue, topic: string, records: QueuedInput[], mark: FetchMark): void => {
  for (const r of records) q.append(topic, r, mark);
  q.handedOver(topic, mark);
};

const queue = (idleMs = 100) => new TaskInputQueue(1000, [MESSAGES, SETTINGS], idleMs);

const offsets = (q: TaskInputQueue, now = 0): string[] => {
  const out: string[] = [];
  for (let r = q.next(now); r !== undefined; r = q.next(now)) out.push(`${r.topic === MESSAGES ? 'm' : 's'}${r.offset}`);
  return out;
};

test('records come out in timestamp order across partitions, whatever order they were handed over in', () => {
  const q = queue();
  handOver(q, MESSAGES, [record(MESSAGES, 0, 1000), record(MESSAGES, 1, 1030)], fetchNo(1));
  handOver(q, SETTINGS, [record(SETTINGS, 0, 1010), record(SETTINGS, 1, 1040)], fetchNo(1));
  assert.deepEqual(offsets(q), ['m0', 's0', 'm1', 's1']);
  assert.equal(q.size, 0);
  assert.equal(q.enforced, 0);
});

test('on equal timestamps the later-declared source (the table) goes first', () => {
  const q = queue();
  handOver(q, MESSAGES, [record(MESSAGES, 0, 1000)], fetchNo(1));
  handOver(q, SETTINGS, [record(SETTINGS, 0, 1000)], fetchNo(1));
  assert.deepEqual(offsets(q), ['s0', 'm0']);
});

test('a record waits while an empty partition has not been read since it was fetched, and goes once it has', () => {
  const q = queue(100);
  q.handedOver(SETTINGS, fetchNo(1)); // settings: nothing new in fetch 1
  handOver(q, MESSAGES, [record(MESSAGES, 0, 1000)], fetchNo(2)); // the message came in fetch 2, settings' batch not handed over yet
  assert.equal(q.next(5_000), undefined);
  assert.equal(q.waitUntil, 5_100);
  // Fetch 2's settings batch: a mute stamped before the message.
  handOver(q, SETTINGS, [record(SETTINGS, 7, 990)], fetchNo(2));
  assert.deepEqual(offsets(q, 5_001), ['s7', 'm0']);
  assert.equal(q.enforced, 0);
});

test('an empty partition read by the same fetch or by a fetch sent after the record was fetched does not hold it up', () => {
  const same = queue();
  handOver(same, MESSAGES, [record(MESSAGES, 0, 1000)], fetchNo(3));
  same.handedOver(SETTINGS, fetchNo(3));
  assert.deepEqual(offsets(same), ['m0']);

  const later = queue();
  handOver(later, MESSAGES, [record(MESSAGES, 0, 1000)], fetchNo(3));
  later.handedOver(SETTINGS, fetchNo(4));
  assert.deepEqual(offsets(later), ['m0']);
});

test('a fetch sent while the record was being fetched (another broker) is not enough', () => {
  const q = queue();
  handOver(q, MESSAGES, [record(MESSAGES, 0, 1000)], { sent: 10, answered: 13, readable: 0 });
  q.handedOver(SETTINGS, { sent: 11, answered: 12, readable: 0 });
  assert.equal(q.next(0), undefined);
  q.handedOver(SETTINGS, { sent: 14, answered: 15, readable: 0 });
  assert.deepEqual(offsets(q), ['m0']);
});

test('a partition the broker had more records for is waited on even when its fetch came later', () => {
  const q = queue();
  handOver(q, MESSAGES, [record(MESSAGES, 0, 1000)], fetchNo(1));
  q.handedOver(SETTINGS, fetchNo(2, 500)); // 500 records readable past that fetch (a backlog)
  assert.equal(q.next(0), undefined);
  q.handedOver(SETTINGS, fetchNo(3));
  assert.deepEqual(offsets(q), ['m0']);
});

test('the wait is bounded: past the idle time the record goes on and is counted, and so do the next ones until the partition catches up', () => {
  const q = queue(100);
  handOver(q, MESSAGES, [record(MESSAGES, 0, 1000), record(MESSAGES, 1, 1001)], fetchNo(2));
  assert.equal(q.next(0), undefined);
  assert.equal(q.next(99), undefined);
  assert.equal(q.next(100)?.offset, '0');
  assert.equal(q.next(101)?.offset, '1', 'no second wait while the same partition is still behind');
  assert.equal(q.enforced, 2);
  // Caught up: the next record behind a lagging partition waits again.
  q.handedOver(SETTINGS, fetchNo(3));
  handOver(q, MESSAGES, [record(MESSAGES, 2, 1002)], fetchNo(3));
  assert.equal(q.next(200)?.offset, '2');
  handOver(q, MESSAGES, [record(MESSAGES, 3, 1003)], fetchNo(5));
  assert.equal(q.next(300), undefined);
  assert.equal(q.waitUntil, 400);
});

test('with an idle time of 0 nothing waits, and each record taken ahead of a partition is counted', () => {
  const q = queue(0);
  handOver(q, MESSAGES, [record(MESSAGES, 0, 1000)], fetchNo(2));
  assert.equal(q.next(0)?.offset, '0');
  assert.equal(q.enforced, 1);
});

test('consumed-through marks keep their place in their partition and never wait', () => {
  const q = queue();
  handOver(q, MESSAGES, [record(MESSAGES, 0, 1000), { consumedThrough: true, topic: MESSAGES, partition: 0, offset: '3' }], fetchNo(2));
  q.handedOver(SETTINGS, fetchNo(2));
  const first = q.next(0);
  const second = q.next(0);
  assert.equal(first?.offset, '0');
  assert.ok(second && 'consumedThrough' in second && second.offset === '3');
});

test('the fetch loop is held back while the task is full and released below half', async () => {
  const q = new TaskInputQueue(4, [MESSAGES, SETTINGS], 0);
  handOver(
    q,
    MESSAGES,
    [0, 1, 2, 3].map((i) => record(MESSAGES, i, 1000 + i)),
    fetchNo(1),
  );
  q.handedOver(SETTINGS, fetchNo(1));
  assert.equal(q.full, true);
  let released = false;
  const below = q.belowHalf().then(() => (released = true));
  q.next(0);
  q.next(0);
  await Promise.resolve();
  assert.equal(released, false, 'two of four still wait');
  q.next(0);
  await below;
  assert.equal(released, true);
});
