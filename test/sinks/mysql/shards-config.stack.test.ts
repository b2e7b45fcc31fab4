/**
 * PUSH_MYSQL_SHARDS (docs/data.md, "Shards"; docs/operations.md, "MySQL shards") is checked at start
 * like every key: a bad item fails naming the key and its position, never printing the URL (it may
 * hold a password), together with the other bad keys; unset, the one database of PUSH_MYSQL_URL is
 * the only shard. The shard function is CRC32 of the uid's UTF-8 bytes modulo the count.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { readEndpoints } from '../../../common/endpoints.ts';
import { groupByShard, shardOf, shardUrlOf } from '../../../sinks/mysql/shards.ts';
import { pushctl } from '../../cli/pushctl-process.ts';

const A = 'mysql://push:s3cret-a@db-a:3306/offline_push';
const B = 'mysql://push:s3cret-b@db-b:3306/offline_push';

test('unset, the shards are PUSH_MYSQL_URL alone; set, the list in its order', () => {
  assert.deepEqual(readEndpoints({ PUSH_MYSQL_URL: A }).mysqlShards, [A]);
  assert.deepEqual(readEndpoints({ PUSH_MYSQL_URL: A, PUSH_MYSQL_SHARDS: '' }).mysqlShards, [A]);
  assert.deepEqual(readEndpoints({ PUSH_MYSQL_URL: A, PUSH_MYSQL_SHARDS: `${B}, ${A}` }).mysqlShards, [B, A]);
});

test('a bad item names PUSH_MYSQL_SHARDS[i] and never the URL; two items on one database are refused', () => {
  assert.throws(
    () => readEndpoints({ PUSH_MYSQL_SHARDS: `${A},postgres://push:s3cret@db/x` }),
    (e: Error) => {
      assert.match(e.message, /^PUSH_MYSQL_SHARDS\[1\]: expected the mysql: scheme, got postgres:$/);
      return true;
    },
  );
  assert.throws(
    () => readEndpoints({ PUSH_MYSQL_SHARDS: `${A},mysql://push:s3cret@db-c:3306/` }),
    /^ConfigError: PUSH_MYSQL_SHARDS\[1\]: the path must name the database/,
  );
  assert.throws(
    () => readEndpoints({ PUSH_MYSQL_SHARDS: `${A},${B},mysql://other:pw@db-a:3306/offline_push` }),
    /^ConfigError: PUSH_MYSQL_SHARDS\[2\]: names the same database as shard 0$/,
  );
});

test('pushctl reports a bad shard with the other bad keys at once, and prints no password', async () => {
  const result = await pushctl(['status'], { PUSH_MYSQL_SHARDS: `${A},mysql:/broken:s3cret-c@`, PUSH_LOG_LEVEL: 'verbose' });
  assert.equal(result.code, 1);
  assert.match(result.stderr, /PUSH_MYSQL_SHARDS\[1\]: the path must name the database/);
  assert.match(result.stderr, /PUSH_LOG_LEVEL: expected one of/);
  assert.doesNotMatch(result.stderr + result.stdout, /s3cret/);
});

test('the shard function: CRC32 (IEEE) of the UTF-8 bytes, modulo the count; one shard takes everyone', () => {
  // Known CRC32 values (zlib, MySQL's and MariaDB's CRC32()); with a count above 2^32 - 1 the shard is the checksum itself.
  const known: Array<[string, number]> = [
    ['hello', 907060870],
    ['u-123', 3527497089],
    ['用户', 501916381],
  ];
  for (const [uid, crc] of known) {
    assert.equal(shardOf(uid, 2 ** 32), crc, uid);
    assert.equal(shardOf(uid, 4), crc % 4, uid);
  }
  for (const uid of ['hello', 'u-123', '用户', '']) assert.equal(shardOf(uid, 1), 0);
  const urls = ['mysql://a/x', 'mysql://b/x', 'mysql://c/x', 'mysql://d/x'];
  assert.equal(shardUrlOf(urls, 'hello'), urls[907060870 % 4]);
  const groups = groupByShard({ count: 4, shardOf: (u) => shardOf(u, 4) }, ['hello', 'u-1', 'u-2', 'hello'], (u) => u);
  // Each shard's items in their input order.
  for (const [shard, items] of groups)
    assert.deepEqual(
      items,
      ['hello', 'u-1', 'u-2', 'hello'].filter((u) => shardOf(u, 4) === shard),
    );
  assert.equal([...groups.values()].flat().length, 4);
});
