/**
 * The uid-sharded MySQL of the shard tests (docs/data.md, "Shards"): N migrated databases on the
 * stack's MariaDB, named for one test run and dropped at the end, plus the fan-out topics of a
 * prefix and a fan-out worker process writing to the shards (PUSH_MYSQL_SHARDS).
 */
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import mysql from 'mysql2/promise';
import { migrate, type MigrateResult } from '../../../migrations/migrate.ts';
import { openShardedPools, type ShardedPools } from '../../../sinks/mysql/shards.ts';
import type { StartedEmulators } from '../../../emulators/index.ts';
import { stackEndpoints, uniqueName } from '../../support/stack.ts';
import { kafka, spawnFanOutWorker, type FanOutWorker } from '../../processors/fan-out/stack-helpers.ts';
import { createTopicsWithLeaders } from '../../../topology/create-topics.ts';

export interface ShardDatabases {
  /** Database names, in shard order. */
  readonly names: readonly string[];
  /** Their mysql:// URLs on the stack's MariaDB, in shard order. */
  readonly urls: readonly string[];
  /** Pools on them, for the test's own reads and writes. */
  readonly pools: ShardedPools;
  /** What `migrate` reported. */
  readonly migrated: MigrateResult;
  drop(): Promise<void>;
}

/** `count` databases, migrated as `pushctl migrate` does with PUSH_MYSQL_SHARDS (MySQL side only). */
export async function shardDatabases(label: string, count: number): Promise<ShardDatabases> {
  const base = uniqueName(label).replace(/-/g, '_');
  const names = Array.from({ length: count }, (_, i) => `${base}_${i}`);
  const urls = names.map((name) => urlOf(name));
  const migrated = await migrate({ mysqlUrl: urls[0]!, mysqlShards: urls });
  const pools = openShardedPools(urls, stackEndpoints().mysqlSecurity, { connectionLimit: 2 });
  return {
    names,
    urls,
    pools,
    migrated,
    drop: async () => {
      await pools.end();
      const admin = await mysql.createConnection({ uri: stackEndpoints().mysqlUrl });
      try {
        for (const name of names) await admin.query(`DROP DATABASE IF EXISTS \`${name}\``);
      } finally {
        await admin.end();
      }
    },
  };
}

/** The stack's MySQL URL with another database, or another host:port (a proxy in front of it). */
export function urlOf(database: string, hostPort?: string): string {
  const url = new URL(stackEndpoints().mysqlUrl);
  url.pathname = `/${database}`;
  if (hostPort) url.host = hostPort;
  return url.toString();
}

/** The fan-out's topics under `prefix` (push.dispatch and im.presence with `partitions`). */
export async function createFanOutTopics(prefix: string, partitions: number): Promise<void> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    await createTopicsWithLeaders(
      admin,
      ['push.dispatch', 'im.presence', 'push.outcomes', 'push.tokens', 'push.dlq'].map((t) => ({
        topic: prefix + t,
        numPartitions: t === 'push.dispatch' || t === 'im.presence' ? partitions : 1,
        replicationFactor: 1,
      })),
    );
  } finally {
    await admin.disconnect();
  }
}

/** A fan-out worker on `prefix` whose task rows go to the shards at `shardUrls`, with the emulators' apps. */
export async function startShardedFanOut(em: StartedEmulators, prefix: string, shardUrls: readonly string[]): Promise<FanOutWorker> {
  const dir = mkdtempSync(join(tmpdir(), 'shards-'));
  const appsFile = join(dir, 'apps.json');
  writeFileSync(appsFile, JSON.stringify(em.rawAppsConfig));
  chmodSync(appsFile, 0o600);
  const worker = spawnFanOutWorker({
    FANOUT_APP_ID: uniqueName('fan-out-shards'),
    FANOUT_TOPIC_PREFIX: prefix,
    FANOUT_APPS_CONFIG: appsFile,
    PUSH_MYSQL_SHARDS: shardUrls.join(','),
  });
  await worker.started();
  return worker;
}
