/**
 * The pipeline's producers place keyed records with topology/partitioner.ts instead of kafkajs'
 * default partitioner. Consumers, the receipt receiver, repartition and upstream producers rely on
 * every producer putting a key on the same partition, so it must pick exactly what Kafka's Java
 * client and kafkajs pick.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Partitioners, type PartitionMetadata } from 'kafkajs';
import { keyPartition, KeyPartitioner, murmur2 } from '../../topology/partitioner.ts';

const metadata = (n: number, leaderless: number[] = []): PartitionMetadata[] =>
  Array.from({ length: n }, (_, partitionId) => ({
    partitionId,
    leader: leaderless.includes(partitionId) ? -1 : 0,
    replicas: [0],
    isr: [0],
    offlineReplicas: [],
    partitionErrorCode: 0,
  }));

test("murmur2 gives the Java client's test vectors", () => {
  const vectors: Array<[string, number]> = [
    ['21', -973932308],
    ['foobar', -790332482],
    ['a-little-bit-long-string', -985981536],
    ['a-little-bit-longer-string', -1486304829],
    ['lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8', -58897971],
    ['abc', 479470107],
  ];
  for (const [key, hash] of vectors) {
    assert.equal(murmur2(key), hash, key);
    assert.equal(murmur2(Buffer.from(key)), hash, `${key} as bytes`);
  }
});

test('every key lands where kafkajs’ default partitioner puts it: ASCII, non-ASCII and binary keys of every tail length', () => {
  const theirs = Partitioners.DefaultPartitioner();
  const ours = KeyPartitioner();
  const keys: Array<string | Buffer> = ['', 'u', 'u1', 'u12', 'u123', 'uid-0042|conv-7', 'ü', '用户-42', 'emoji-😀-tail', 'mixed-é'];
  for (let length = 0; length < 40; length++) {
    keys.push(randomBytes(length));
    keys.push(`u${randomBytes(length).toString('base64url')}`.slice(0, length));
    keys.push(
      Array.from({ length }, (_, i) => String.fromCharCode(0x20 + ((i * 7919 + length) % 0x3000))).join(''), // crosses into 2- and 3-byte UTF-8
    );
  }
  for (const partitions of [1, 3, 6, 12, 64]) {
    const partitionMetadata = metadata(partitions);
    for (const key of keys) {
      const expected = theirs({ topic: 't', partitionMetadata, message: { key, value: null } });
      assert.equal(ours({ topic: 't', partitionMetadata, message: { key, value: null } }), expected, `${JSON.stringify(key)} over ${partitions}`);
      assert.equal(keyPartition(key, partitions), expected);
    }
  }
});

test("a record's own partition wins; a record without key goes round robin over the partitions that have a leader", () => {
  const pick = KeyPartitioner();
  const partitionMetadata = metadata(6, [1, 4]);
  assert.equal(pick({ topic: 't', partitionMetadata, message: { key: 'u1', value: null, partition: 4 } }), 4);
  const seen = new Map<number, number>();
  for (let i = 0; i < 400; i++) {
    const p = pick({ topic: 't', partitionMetadata, message: { value: null } });
    seen.set(p, (seen.get(p) ?? 0) + 1);
  }
  assert.deepEqual([...seen.keys()].sort(), [0, 2, 3, 5]);
  for (const count of seen.values()) assert.equal(count, 100, 'each available partition in turn');
});
