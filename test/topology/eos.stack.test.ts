import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { TransactionalCommitter, type CommitBatch } from '../../topology/eos.ts';
import { errorCode } from '../../common/errors.ts';
import { uniqueName } from '../support/stack.ts';
import { createTopics, kafka, readTopic } from './kafka-helpers.ts';

const admin = kafka.admin();
before(() => admin.connect());
after(() => admin.disconnect());

const batch = (topic: string, value: string, offset: string): CommitBatch => ({
  records: [{ topic, key: Buffer.from('k'), value: Buffer.from(value), headers: {}, timestamp: Date.now() }],
  changelog: [],
  offsets: [{ topic, partition: 0, offset }],
});

test('a new owner of a task fences the previous one at init, before it reads offsets: the old owner can no longer commit', { timeout: 60_000 }, async () => {
  const topic = uniqueName('eos-fence');
  const groupId = uniqueName('eos-fence-group');
  const transactionalId = uniqueName('eos-fence-task');
  await createTopics(admin, [{ topic, partitions: 1 }]);
  const previous = new TransactionalCommitter(kafka, { transactionalId, groupId });
  const next = new TransactionalCommitter(kafka, { transactionalId, groupId });
  try {
    await previous.init();
    await previous.commit(batch(topic, 'first', '1'));

    await next.init();
    const offsetsSeenByNext = await admin.fetchOffsets({ groupId, topics: [topic] });
    await assert.rejects(previous.commit(batch(topic, 'late', '2')), (e) => errorCode(e) === 'TASK_FENCED');
    await next.commit(batch(topic, 'second', '2'));

    assert.equal(offsetsSeenByNext[0]!.partitions[0]!.offset, '1', 'the new owner read the offset of the last commit before it took over');
    const values = (await readTopic(topic, (r) => r.length >= 2, 10_000, 500)).map((r) => r.value!.toString());
    assert.deepEqual(values, ['first', 'second'], 'the fenced commit never became visible');
    assert.equal((await admin.fetchOffsets({ groupId, topics: [topic] }))[0]!.partitions[0]!.offset, '2');
  } finally {
    await previous.close();
    await next.close();
  }
});
