import { randomInt } from 'node:crypto';
import type { ICustomPartitioner, PartitionerArgs } from 'kafkajs';

/**
 * Kafka's key partitioning (the Java client's and kafkajs' default: murmur2 of the key's UTF-8
 * bytes, made positive, modulo the partition count) without kafkajs' costs. Its murmur2 builds a
 * BigInt-backed Long for every step of every byte quartet, and its partitioner filters the
 * partition metadata on every message: about 6 MB of garbage a second for the event-path worker
 * at 1,000 msgs/s (a sampling heap profile). Here the hash is 32-bit integer arithmetic and a
 * string key is encoded into a reused buffer. Both pick the same partition for every key
 * (test/topology/partitioner.test.ts), so producers of either kind agree.
 */
export function murmur2(key: string | Buffer): number {
  if (typeof key !== 'string') return murmur2Bytes(key, key.length);
  const length = Buffer.byteLength(key);
  if (length > scratch.length) scratch = Buffer.allocUnsafe(2 * length);
  scratch.write(key, 0, 'utf8');
  return murmur2Bytes(scratch, length);
}

/** The UTF-8 bytes of the string key being hashed (murmur2 is synchronous: one buffer serves every call). */
let scratch = Buffer.allocUnsafe(256);

const SEED = 0x9747b28c;
const M = 0x5bd1e995;

/** murmur2 of data's first `length` bytes, as the Java client computes it (32-bit, signed). */
function murmur2Bytes(data: Buffer, length: number): number {
  let h = SEED ^ length;
  const whole = length & ~3;
  for (let i = 0; i < whole; i += 4) {
    let k = data[i]! | (data[i + 1]! << 8) | (data[i + 2]! << 16) | (data[i + 3]! << 24);
    k = Math.imul(k, M);
    k ^= k >>> 24;
    h = Math.imul(h, M) ^ Math.imul(k, M);
  }
  let tail = 0;
  for (let i = length - 1; i >= whole; i--) tail = (tail << 8) | data[i]!;
  if (length % 4 !== 0) h = Math.imul(h ^ tail, M);
  h ^= h >>> 13;
  h = Math.imul(h, M);
  return h ^ (h >>> 15);
}

/** The partition of a keyed record among `partitions`, as Kafka's default partitioner picks it. */
export function keyPartition(key: string | Buffer, partitions: number): number {
  return (murmur2(key) & 0x7fffffff) % partitions;
}

/**
 * A kafkajs partitioner that places records as its default one does: the record's own partition,
 * else its key's, else round robin over the partitions that have a leader.
 */
export const KeyPartitioner: ICustomPartitioner = () => {
  const counters = new Map<string, number>();
  return ({ topic, partitionMetadata, message }: PartitionerArgs) => {
    if (message.partition !== null && message.partition !== undefined) return message.partition;
    if (message.key !== null && message.key !== undefined) return keyPartition(message.key, partitionMetadata.length);
    const next = (counters.get(topic) ?? randomInt(2 ** 31)) + 1;
    counters.set(topic, next);
    const available = partitionMetadata.filter((p) => p.leader >= 0);
    return available.length > 0 ? available[next % available.length]!.partitionId : next % partitionMetadata.length;
  };
};
