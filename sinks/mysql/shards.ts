/**
 * The uid shards of MySQL (docs/data.md, "Shards"): `im_push_task` (and its archive) and
 * `im_push_token` rows of a user live in the database of shard `CRC32(uid) % N`, where N is the
 * number of URLs in PUSH_MYSQL_SHARDS (default: PUSH_MYSQL_URL alone, N = 1) and CRC32 is the
 * IEEE 802.3 checksum (zlib's, MySQL's and MariaDB's `CRC32()`) of the uid's UTF-8 bytes. So support
 * finds a user's shard in SQL with `SELECT CRC32('<uid>') % N`, and every process, whatever its
 * language, routes the same way. `push_receipt_nonce` is not per user: it lives on shard 0.
 */
import { crc32 } from 'node:zlib';
import mysql, { type Pool, type PoolOptions } from 'mysql2/promise';
import { mysqlClientOptions, type MysqlSecurity } from '../../common/mysql-url.ts';
import { allSettledOrThrow } from '../../common/settle.ts';

/** The shard of `uid` among `count`: CRC32 of its UTF-8 bytes, modulo the shard count. */
export function shardOf(uid: string, count: number): number {
  return count <= 1 ? 0 : crc32(Buffer.from(uid, 'utf8')) % count;
}

/** One pool per shard, in shard order; readers and writers route by uid. */
export interface ShardedPools {
  /** The number of shards (N of the shard function). */
  readonly count: number;
  /** The shard number of `uid`. */
  shardOf(uid: string): number;
  /** The pool of the shard holding `uid`'s rows. */
  forUid(uid: string): Pool;
  /** The pool of shard `index` (0 ≤ index < count); shard 0 also holds push_receipt_nonce. */
  shard(index: number): Pool;
  /** Every shard's pool, in shard order. */
  all(): readonly Pool[];
  /** Closes every pool. */
  end(): Promise<void>;
}

/** Pools already made (tests, a single database): shard i is pools[i]. */
export function shardedPools(pools: readonly Pool[]): ShardedPools {
  if (pools.length === 0) throw new Error('shardedPools: at least one pool');
  const count = pools.length;
  return {
    count,
    shardOf: (uid) => shardOf(uid, count),
    forUid: (uid) => pools[shardOf(uid, count)]!,
    shard: (index) => {
      const pool = pools[index];
      if (pool === undefined) throw new RangeError(`no shard ${index} (of ${count})`);
      return pool;
    },
    all: () => pools,
    end: async () => {
      await Promise.all(pools.map((p) => p.end()));
    },
  };
}

/**
 * A pool per URL (Endpoints.mysqlShards, already validated), each with the password and TLS of
 * `security` (Endpoints.mysqlSecurity). `connectionLimit` is per shard. The connect timeout is
 * short so that a shard that does not answer is noticed (and its users' work set aside) within
 * seconds rather than mysql2's default 10 s.
 */
export function openShardedPools(urls: readonly string[], security: MysqlSecurity, options: Omit<PoolOptions, 'uri'> = {}): ShardedPools {
  return shardedPools(
    urls.map((url, i) => {
      // The key names the item of a URL given directly.
      const connection = mysqlClientOptions(url, security, urls.length > 1 ? `PUSH_MYSQL_SHARDS[${i}]` : 'PUSH_MYSQL_URL');
      return mysql.createPool({ ...connection, connectTimeout: 3_000, timezone: 'Z', ...options });
    }),
  );
}

/**
 * Splits `items` by the shard of their uid: the items of each shard, in their order, for the
 * statements that span users (batched claims, result and status writes) to run once per shard.
 */
export function groupByShard<T>(shards: Pick<ShardedPools, 'count' | 'shardOf'>, items: readonly T[], uidOf: (item: T) => string): Map<number, T[]> {
  const groups = new Map<number, T[]>();
  for (const item of items) {
    const shard = shards.count === 1 ? 0 : shards.shardOf(uidOf(item));
    let group = groups.get(shard);
    if (!group) groups.set(shard, (group = []));
    group.push(item);
  }
  return groups;
}

/** Runs `work` for every shard's group (groupByShard) at once; a failing shard's error is thrown once every shard has finished. */
export async function eachShard<T>(groups: Map<number, T[]>, work: (shard: number, items: T[]) => Promise<void>): Promise<void> {
  await allSettledOrThrow([...groups].map(([shard, items]) => work(shard, items)));
}

/** The mysql:// URL of the shard holding `uid`'s rows, among `urls` (Endpoints.mysqlShards), for one-user reads. */
export function shardUrlOf(urls: readonly string[], uid: string): string {
  return urls[shardOf(uid, urls.length)]!;
}
